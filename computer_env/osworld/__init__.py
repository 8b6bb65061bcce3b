"""OSWorld tasks: loader, setup, evaluation, ``OSWorldComputerEnv``.

Setup and scoring are OSWorld's own code (``desktop_env``, the installed ``desktop-env`` package or
a checkout given with ``--osworld-root``), run in a scoring process of the worker's
(:mod:`computer_env.osworld.scoring.process`): :func:`evaluate`, :func:`ensure_supported`,
:func:`run_setup` and :func:`explain_files` here send it the job, so that nothing exported here
loads OSWorld's metrics, getters or setup controller into the caller.
"""

from computer_env.osworld.catalog.download import PrefetchResult, prefetch
from computer_env.osworld.catalog.tasks import (
    TASK_LISTS,
    Evaluator,
    SetupStep,
    Task,
    builtin_smoke_ids,
    load_builtin_tasks,
    load_tasks,
)
from computer_env.osworld.check import check_task_unplayed
from computer_env.osworld.context import TaskContext, default_vars, substitute
from computer_env.osworld.env import OSWorldComputerEnv
from computer_env.osworld.errors import (
    EvaluatorUnsupported,
    SetupUnsupported,
    TaskLoadError,
    Unsupported,
)
from computer_env.osworld.planning.markers import needs_network, task_markers
from computer_env.osworld.prepare.settle import wait_until_settled
from computer_env.osworld.prepare.setup import SetupReport, StepTiming
from computer_env.osworld.scoring.process import (
    EvaluatorAborted,
    ScorerFailed,
    ScoringProcess,
    close_scoring_process,
    ensure_supported,
    evaluate,
    explain_files,
    run_setup,
)
from computer_env.osworld.scoring.result import EvalResult, MetricDetail
from computer_env.osworld.upstream.loader import osworld_source, upstream_available

__all__ = [
    "EvalResult",
    "Evaluator",
    "EvaluatorAborted",
    "EvaluatorUnsupported",
    "MetricDetail",
    "OSWorldComputerEnv",
    "PrefetchResult",
    "ScorerFailed",
    "ScoringProcess",
    "SetupReport",
    "SetupStep",
    "SetupUnsupported",
    "StepTiming",
    "TASK_LISTS",
    "Task",
    "TaskContext",
    "TaskLoadError",
    "Unsupported",
    "builtin_smoke_ids",
    "check_task_unplayed",
    "close_scoring_process",
    "default_vars",
    "ensure_supported",
    "evaluate",
    "explain_files",
    "load_builtin_tasks",
    "load_tasks",
    "needs_network",
    "prefetch",
    "run_setup",
    "substitute",
    "osworld_source",
    "task_markers",
    "upstream_available",
    "wait_until_settled",
]
