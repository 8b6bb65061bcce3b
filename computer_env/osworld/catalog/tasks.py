"""The OSWorld task format (pydantic) and loaders for OSWorld checkouts and the built-in set.

A task root is laid out like OSWorld's ``evaluation_examples/``: ``<list>.json`` files mapping
``{domain: [task ids]}`` and ``examples/<domain>/<id>.json`` task files.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from computer_env.osworld.errors import TaskLoadError
from computer_env.osworld.guards.confine import ConfinementError, check_name, check_task, confined

logger = logging.getLogger(__name__)

TASK_LISTS: tuple[str, ...] = ("test_all", "test_nogdrive", "test_small", "test_infeasible")
"""The task lists OSWorld ships (``test_smoke`` exists for the built-in set)."""

GetterSpec = dict[str, Any]
"""A getter config: ``{"type": X, ...}``; ``get_X(env, spec)`` is called with it."""


class SetupStep(BaseModel):
    """One setup/postconfig step: ``SetupController._<type>_setup(**parameters)``."""

    model_config = ConfigDict(extra="allow")

    type: str = Field(min_length=1)
    parameters: dict[str, Any] = Field(default_factory=dict)


class Evaluator(BaseModel):
    """How a task is scored (see ``DesktopEnv.evaluate`` upstream)."""

    model_config = ConfigDict(extra="allow")

    func: str | list[str]
    result: GetterSpec | list[GetterSpec | None] | None = None
    expected: GetterSpec | list[GetterSpec | None] | None = None
    options: dict[str, Any] | list[dict[str, Any] | None] | None = None
    conj: Literal["and", "or"] = "and"
    postconfig: list[SetupStep] = Field(default_factory=list)

    @field_validator("func")
    @classmethod
    def _func_not_empty(cls, value: str | list[str]) -> str | list[str]:
        if isinstance(value, list) and not value:
            raise ValueError("func list is empty")
        return value

    @property
    def funcs(self) -> list[str]:
        """``func`` as a list."""
        return list(self.func) if isinstance(self.func, list) else [self.func]

    @property
    def is_infeasible(self) -> bool:
        """True when the task is infeasible by design (``func`` is or contains ``infeasible``)."""
        return "infeasible" in self.funcs

    def getter_specs(self) -> list[GetterSpec]:
        """Every non-empty result/expected getter spec."""
        specs: list[GetterSpec] = []
        for value in (self.result, self.expected):
            items = value if isinstance(value, list) else [value]
            specs.extend(s for s in items if s)
        return specs


class Task(BaseModel):
    """One OSWorld task file. Unknown fields are kept (``model_extra``), not rejected."""

    model_config = ConfigDict(extra="allow")

    id: str = Field(min_length=1)
    snapshot: str = ""
    instruction: str = Field(min_length=1)
    source: str | list[str] = ""
    config: list[SetupStep] = Field(default_factory=list)
    trajectory: str | None = None
    related_apps: list[str] = Field(default_factory=list)
    evaluator: Evaluator
    proxy: bool = False
    fixed_ip: bool = False
    possibility_of_env_change: str | None = None
    hint: str | None = None
    env_may_change: bool | str | None = None

    _domain: str = PrivateAttr(default="")
    _path: Path | None = PrivateAttr(default=None)

    @property
    def domain(self) -> str:
        """The domain folder the task was loaded from (``os``, ``chrome``...)."""
        return self._domain

    @property
    def path(self) -> Path | None:
        """The task file (None for a task built in memory)."""
        return self._path

    @property
    def case_id(self) -> str:
        """The test id: ``domain/id``."""
        return f"{self._domain}/{self.id}" if self._domain else self.id

    def all_steps(self) -> list[SetupStep]:
        """Setup steps followed by postconfig steps."""
        return [*self.config, *self.evaluator.postconfig]


def parse_task(data: dict[str, Any], *, domain: str = "", path: Path | None = None) -> Task:
    """Validate one task dict; raises :class:`TaskLoadError` naming the file and field."""
    where = str(path) if path else f"<task {data.get('id', '?')}>"
    try:
        task = Task.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "<root>"
        raise TaskLoadError(
            where, f"field {loc}: {err['msg']} ({len(exc.errors())} error(s))"
        ) from exc
    try:
        check_task(task)
    except ConfinementError as exc:
        raise TaskLoadError(where, str(exc)) from exc
    task._domain = domain
    task._path = path
    return task


def load_task_file(path: Path, domain: str) -> Task:
    """Read and validate one task file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise TaskLoadError(str(path), "task file not found") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TaskLoadError(str(path), f"not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise TaskLoadError(str(path), "a task file must hold a JSON object")
    task = parse_task(data, domain=domain, path=path)
    if task.id != path.stem:
        raise TaskLoadError(str(path), f"field id: {task.id!r} differs from the file name")
    return task


def examples_root(root: Path) -> Path:
    """The ``evaluation_examples`` folder for an OSWorld checkout or the folder itself."""
    root = Path(root).expanduser()
    if (root / "evaluation_examples" / "examples").is_dir():
        return root / "evaluation_examples"
    if (root / "examples").is_dir():
        return root
    raise TaskLoadError(
        str(root),
        "neither an OSWorld checkout nor an evaluation_examples folder "
        "(no examples/ directory found)",
    )


def _read_task_list(root: Path, task_list: str) -> tuple[Path, dict[str, list[str]]]:
    candidate = Path(task_list).expanduser()
    if candidate.suffix == ".json" and candidate.is_file():
        list_path = candidate
    else:
        name = task_list if task_list.endswith(".json") else f"{task_list}.json"
        list_path = root / name
    try:
        listing = json.loads(list_path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise TaskLoadError(str(list_path), "task list not found") from exc
    except json.JSONDecodeError as exc:
        raise TaskLoadError(str(list_path), f"not valid JSON: {exc}") from exc
    if not isinstance(listing, dict) or not all(
        isinstance(k, str) and isinstance(v, list) and all(isinstance(i, str) for i in v)
        for k, v in listing.items()
    ):
        raise TaskLoadError(str(list_path), "a task list is a JSON object {domain: [task ids]}")
    return list_path, listing


def load_tasks(
    root: Path, task_list: str = "test_all", domains: Iterable[str] | None = None
) -> list[Task]:
    """Load the tasks of ``task_list`` (a list name or a path to a ``{domain: [ids]}`` JSON file)
    from an OSWorld checkout or an ``evaluation_examples`` folder, optionally only ``domains``."""
    ex_root = examples_root(Path(root))
    list_path, listing = _read_task_list(ex_root, task_list)
    wanted = set(domains) if domains is not None else None
    tasks: list[Task] = []
    for domain, ids in listing.items():
        if wanted is not None and domain not in wanted:
            continue
        for task_id in ids:
            try:
                check_name(domain, "domain")
                check_name(task_id, "task id")
                path = confined(ex_root / "examples", f"{domain}/{task_id}.json")
            except ConfinementError as exc:
                raise TaskLoadError(str(list_path), str(exc)) from exc
            tasks.append(load_task_file(path, domain))
    logger.debug("loaded %d tasks from %s (%s)", len(tasks), ex_root, task_list)
    return tasks


def builtin_root() -> Path:
    """The package folder holding the built-in tasks."""
    from computer_env.osworld.builtin import BUILTIN_ROOT

    return BUILTIN_ROOT


def load_builtin_tasks(
    task_list: str = "test_all", domains: Iterable[str] | None = None
) -> list[Task]:
    """Load the built-in tasks (package data laid out like ``evaluation_examples``)."""
    return load_tasks(builtin_root(), task_list, domains)


def builtin_smoke_ids() -> set[str]:
    """Task ids of the built-in smoke subset (``test_smoke.json``; empty when absent)."""
    path = builtin_root() / "test_smoke.json"
    if not path.is_file():
        return set()
    _, listing = _read_task_list(builtin_root(), str(path))
    return {tid for ids in listing.values() for tid in ids}


# ---------------------------------------------------------------------------------- markers

_LOCAL_URL_PREFIXES = (
    "{ASSET_URL}",
    "{GUEST_ASSET_URL}",
    "http://localhost",
    "http://127.0.0.1",
    "https://localhost",
    "https://127.0.0.1",
    "file://",
)


def is_local_url(url: str) -> bool:
    """True for URLs served by the harness (asset server placeholders, loopback, files)."""
    return url.startswith(_LOCAL_URL_PREFIXES) or not url.startswith(("http://", "https://"))


__all__ = [
    "Evaluator",
    "GetterSpec",
    "SetupStep",
    "TASK_LISTS",
    "Task",
    "TaskLoadError",
    "builtin_root",
    "builtin_smoke_ids",
    "examples_root",
    "is_local_url",
    "load_builtin_tasks",
    "load_task_file",
    "load_tasks",
    "parse_task",
]
