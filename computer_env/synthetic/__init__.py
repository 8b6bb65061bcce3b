"""Synthesized tasks with executable verifiers (EvoCUA's protocol): task files with
``task_instruction``, ``verifier_code`` and ``initial_state``, their setup on a desktop and the
verifier run inside it. ``examples/`` holds a few shipped tasks with reference solutions."""

from computer_env.synthetic.tasks import (
    EXAMPLES_DIR,
    InitialState,
    SyntheticTask,
    SyntheticTaskError,
    load_synthetic_dir,
    load_synthetic_file,
)
from computer_env.synthetic.verifier import VerifierError, run_verifier

__all__ = [
    "EXAMPLES_DIR",
    "InitialState",
    "SyntheticTask",
    "SyntheticTaskError",
    "VerifierError",
    "load_synthetic_dir",
    "load_synthetic_file",
    "run_verifier",
]
