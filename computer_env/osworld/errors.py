"""OSWorld-side errors that are neither scores nor infrastructure failures.

``Unsupported`` (and its two kinds) means "this harness cannot run this part of the task here":
the plugin turns it into a *skip*, never a 0 and never an infra rerun. ``TaskLoadError`` is a bad
task file: a configuration error that fails collection loudly.
"""

from __future__ import annotations

from computer_env.errors import ConfigurationError


class Unsupported(Exception):
    """Something in a task this harness cannot run (reported as a skip)."""

    def __init__(self, what: str, reason: str) -> None:
        super().__init__(f"{what}: {reason}")
        self.what = what
        self.reason = reason


class SetupUnsupported(Unsupported):
    """A setup (or postconfig) step type the implementation in use cannot run."""

    def __init__(self, step_type: str, reason: str) -> None:
        super().__init__(f"setup step {step_type!r}", reason)
        self.step_type = step_type


class EvaluatorUnsupported(Unsupported):
    """A getter or metric the evaluator backend in use does not have."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(name, reason)
        self.name = name


class TaskLoadError(ConfigurationError):
    """A task list or task file is missing or invalid (the message names the file and field)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path


__all__ = ["EvaluatorUnsupported", "SetupUnsupported", "TaskLoadError", "Unsupported"]
