"""A task's setup (or postconfig) steps run with OSWorld's own ``SetupController``, each step
checked against what the desktop answered (:func:`run_setup_in_process`, run in the scoring
process).

- ``_run``: running the steps, one by one, with their reports;
- ``_steps``: what the harness adds around a step (confinement, the run's proxy, the time a
  step may wait for what an earlier one started);
- ``_verdict``: how long a step may run and whether it went right, from the desktop's answers.
"""

from computer_env.osworld.prepare.setup._run import (
    UNSUPPORTED_STEPS,
    SetupReport,
    StepTiming,
    check_steps,
    run_setup_in_process,
    seed_downloads,
    upstream_setup_controller,
)
from computer_env.osworld.prepare.setup._steps import (
    BACKGROUND_PROGRAMS,
    CHROME_NAMES,
    GUI_PROGRAMS,
    START_GRACE_S,
    STARTERS,
    StepWait,
    apply_proxy,
    confine_step,
    is_host_local_url,
    launched_program,
    sends_input,
    step_wait,
    window_classes,
)
from computer_env.osworld.prepare.setup._verdict import (
    STEP_TIMEOUT_S,
    UNTIL_TIMEOUT_S,
    step_deadline,
    step_problem,
    target_missing,
    with_deadline,
)

__all__ = [
    "BACKGROUND_PROGRAMS",
    "CHROME_NAMES",
    "GUI_PROGRAMS",
    "START_GRACE_S",
    "STARTERS",
    "STEP_TIMEOUT_S",
    "UNSUPPORTED_STEPS",
    "UNTIL_TIMEOUT_S",
    "SetupReport",
    "StepTiming",
    "StepWait",
    "apply_proxy",
    "check_steps",
    "confine_step",
    "is_host_local_url",
    "launched_program",
    "run_setup_in_process",
    "seed_downloads",
    "sends_input",
    "step_deadline",
    "step_problem",
    "step_wait",
    "target_missing",
    "upstream_setup_controller",
    "window_classes",
    "with_deadline",
]
