"""The synthesized-task file format (one JSON object per file) and its loading.

Fields (EvoCUA's three, plus bookkeeping)::

    {"task_instruction": "...",            # what the agent is asked
     "verifier_code": "def verify(): ...",  # Python run INSIDE the desktop; verify() returns
                                            # True/False or a score in [0, 1]
     "initial_state": {"files": {"~/a.txt": "text"},          # written before anything else
                       "setup": [{"type": "launch", ...}]},   # OSWorld setup steps, in order
     "task_id": "...", "synthesized_at": "2026-11-30T12:00:00Z", "domain": "os",
     "reference_solution": [Holo Steps]}   # optional: what the reference endpoint plays

A bad file is a :class:`SyntheticTaskError` naming the file and the field, at load time: a
setup step that would read a host file outside the task's folder or download from a host-local
address is refused here by the rule the run refuses it with
(:func:`computer_env.osworld.guards.confine.check_task`).
"""

from __future__ import annotations

import ast
import base64
import json
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import PydanticCustomError

from computer_env.osworld.builtin import SolutionFormatError, _check_step
from computer_env.osworld.guards.confine import ConfinementError, check_task

EXAMPLES_DIR = Path(__file__).resolve().parent / "examples"

_WRITE_FILE = (
    "import base64, os, sys; p = os.path.expanduser(sys.argv[1]); "
    "os.makedirs(os.path.dirname(p) or '.', exist_ok=True); "
    "open(p, 'wb').write(base64.b64decode(sys.argv[2]))"
)


class SyntheticTaskError(ValueError):
    """A task file that cannot be used: ``path`` and the field at fault in the message."""

    def __init__(self, path: Path | str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = str(path)


class SetupStepSpec(BaseModel):
    """One OSWorld-format setup step (``type`` + ``parameters``)."""

    model_config = ConfigDict(extra="forbid")

    type: str = Field(min_length=1)
    parameters: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _confined(self) -> SetupStepSpec:
        """The run's own refusal (:func:`check_task`, as when the task is parsed for its run):
        ``upload_file`` sources inside the task's folder, ``download`` URLs not host-local."""
        try:
            check_task({"config": [self.model_dump()]})
        except ConfinementError as exc:
            reason = str(exc).removeprefix("config[0].")
            raise PydanticCustomError("confinement", "{reason}", {"reason": reason}) from None
        return self


class InitialState(BaseModel):
    """What the desktop holds before the agent starts."""

    model_config = ConfigDict(extra="forbid")

    files: dict[str, str] = Field(default_factory=dict, description="path -> text content")
    setup: list[SetupStepSpec] = Field(default_factory=list)

    def setup_steps(self) -> list[dict[str, Any]]:
        """The state as OSWorld setup steps: one ``execute`` writing each file, then ``setup``."""
        steps: list[dict[str, Any]] = []
        for path, text in self.files.items():
            data = base64.b64encode(text.encode("utf-8")).decode("ascii")
            steps.append(
                {
                    "type": "execute",
                    "parameters": {
                        "command": ["python3", "-c", _WRITE_FILE, path, data],
                        "shell": False,
                    },
                }
            )
        return steps + [s.model_dump() for s in self.setup]


class SyntheticTask(BaseModel):
    """One synthesized task."""

    model_config = ConfigDict(extra="forbid")

    task_instruction: str = Field(min_length=1)
    verifier_code: str = Field(min_length=1)
    initial_state: InitialState
    task_id: str = Field(default="", pattern=r"^[A-Za-z0-9._-]*$")
    synthesized_at: datetime | None = None
    domain: str = Field(default="synthetic", pattern=r"^[A-Za-z0-9_]+$")
    reference_solution: list[dict[str, Any]] | None = None

    @field_validator("verifier_code")
    @classmethod
    def _defines_verify(cls, code: str) -> str:
        try:
            tree = ast.parse(code)
        except SyntaxError as exc:
            raise ValueError(f"not valid Python (line {exc.lineno}: {exc.msg})") from None
        if not any(isinstance(n, ast.FunctionDef) and n.name == "verify" for n in tree.body):
            raise ValueError(
                "must define a function verify() (returns True/False or a score in [0, 1])"
            )
        return code

    @property
    def case_id(self) -> str:
        return f"{self.domain}/{self.task_id}"


def _check_solution(path: Path, steps: list[dict[str, Any]]) -> None:
    try:
        for i, step in enumerate(steps):
            _check_step(step, f"field reference_solution[{i}]")
    except SolutionFormatError as exc:
        raise SyntheticTaskError(path, str(exc)) from None
    if not steps or steps[-1]["tool_call"]["tool_name"] != "answer":
        raise SyntheticTaskError(path, "field reference_solution: the last step must be an answer")


def load_synthetic_file(path: Path) -> SyntheticTask:
    """Read and validate one task file (``task_id`` defaults to the file name)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise SyntheticTaskError(path, f"cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise SyntheticTaskError(path, f"not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise SyntheticTaskError(path, "a task file is one JSON object")
    data.setdefault("task_id", path.stem)
    try:
        task = SyntheticTask.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "(file)"
        raise SyntheticTaskError(path, f"field {loc}: {err['msg']}") from None
    if task.reference_solution is not None:
        _check_solution(path, task.reference_solution)
    return task


def load_synthetic_dir(folder: Path) -> list[SyntheticTask]:
    """Every ``*.json`` task file of ``folder`` (sorted); duplicate ids are an error."""
    tasks: list[SyntheticTask] = []
    seen: dict[str, Path] = {}
    for path in sorted(Path(folder).glob("*.json")):
        task = load_synthetic_file(path)
        if task.case_id in seen:
            raise SyntheticTaskError(
                path, f"field task_id: {task.task_id!r} is also in {seen[task.case_id].name}"
            )
        seen[task.case_id] = path
        tasks.append(task)
    return tasks
