"""Oracle solutions for real OSWorld tasks: scripted through the OSWorld in-VM API.

An oracle is this project's own file ``oracles/<domain>/<task_id>.json``::

    {"task": "<task id>", "route": "gui", "note": "what the actions do",
     "actions": [{"type": "pyautogui", "code": "..."}, ...]}

``route`` (required) says how the oracle reaches its result, so that a proof is only counted
for what it shows:

- ``gui``: clicks, keys and typing in the app's own windows (``pyautogui`` actions, as a model
  has them), with ``wait_until`` readiness checks in between;
- ``terminal``: commands typed as keystrokes into a terminal window the oracle opened
  (``pyautogui`` + ``wait_until`` too; never ``/execute``);
- ``config``: files edited or commands run through the API (``execute``/``launch``), the app
  restarted: it shows the evaluator works, not that the app can do the task;
- ``infeasible``: only declares the task infeasible (true by construction; never a proof that
  the desktop can do a task).

A ``gui`` or ``terminal`` oracle may hold only ``pyautogui`` and ``wait_until`` actions, an
``infeasible`` one only ``infeasible``; a ``config`` one may not declare the task infeasible.

Action types (all go through the guest server's OSWorld API, as an agent's actions would):

- ``execute``  ``command`` (list or string), ``shell`` (default false): ``/execute``; a non-zero
  return code fails the oracle unless ``check`` is false;
- ``launch``   ``command``, ``shell``: ``/setup/launch`` (background);
- ``pyautogui`` ``code``: pyautogui statements, run like OSWorld's ``DesktopEnv.step``;
- ``wait_until`` ``command`` (shell), ``timeout_s``, ``what``: poll ``/execute`` until the command
  succeeds (readiness, not a sleep);
- ``infeasible``: declare the task infeasible (OSWorld's ``FAIL`` action).

``{CLIENT_PASSWORD}``, ``{SCREEN_WIDTH}``... are substituted as in task files. Under
``--check-evaluators`` a real task's oracle runs after setup and must score 1 with OSWorld's own
evaluator; a task without one gets the leak check only.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from computer_env.osworld.context import TaskContext, substitute
from computer_env.osworld.errors import TaskLoadError

logger = logging.getLogger(__name__)

ORACLE_ROOT = Path(__file__).resolve().parents[1] / "oracles"
"""Where the oracle files live (``<domain>/<task_id>.json``)."""


class _Action(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Execute(_Action):
    type: Literal["execute"]
    command: list[str] | str
    shell: bool = False
    check: bool = True
    timeout_s: float | None = None


class Launch(_Action):
    type: Literal["launch"]
    command: list[str] | str
    shell: bool = False


class PyAutoGUI(_Action):
    type: Literal["pyautogui"]
    code: str = Field(min_length=1)


class WaitUntil(_Action):
    type: Literal["wait_until"]
    command: str = Field(min_length=1)
    what: str = Field(min_length=1)
    timeout_s: float = Field(default=60.0, gt=0)


class Infeasible(_Action):
    type: Literal["infeasible"]


Action = Annotated[
    Execute | Launch | PyAutoGUI | WaitUntil | Infeasible, Field(discriminator="type")
]


Route = Literal["gui", "terminal", "config", "infeasible"]
"""How an oracle reaches its result (see the module docstring)."""

PROOF_ROUTES: tuple[Route, ...] = ("gui", "terminal")
"""Routes whose passing oracle proves a model could do the task through the desktop's apps."""

ROUTE_ACTIONS: dict[str, frozenset[str]] = {
    "gui": frozenset({"pyautogui", "wait_until"}),
    "terminal": frozenset({"pyautogui", "wait_until"}),
    "config": frozenset({"execute", "launch", "pyautogui", "wait_until"}),
    "infeasible": frozenset({"infeasible"}),
}
"""The action types each route may use."""


class Oracle(BaseModel):
    """One task's oracle (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    task: str = Field(min_length=1)
    route: Route
    note: str = Field(min_length=1)
    actions: list[Action] = Field(min_length=1)

    @model_validator(mode="after")
    def _actions_fit_route(self) -> Oracle:
        allowed = ROUTE_ACTIONS[self.route]
        for i, action in enumerate(self.actions):
            if action.type not in allowed:
                raise ValueError(
                    f"actions.{i}: a {self.route!r} oracle cannot use "
                    f"{action.type!r} actions (allowed: {', '.join(sorted(allowed))})"
                )
        return self


class OracleFailed(AssertionError):
    """An oracle action did not do what it should: the oracle (or the desktop) is wrong."""


def load_oracle_file(path: Path) -> Oracle:
    """Read and validate one oracle file; :class:`TaskLoadError` names the file and field."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        oracle = Oracle.model_validate(data)
    except (OSError, json.JSONDecodeError) as exc:
        raise TaskLoadError(str(path), f"cannot read oracle: {exc}") from exc
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        msg = str(err["msg"]).removeprefix("Value error, ")
        raise TaskLoadError(str(path), f"field {loc}: {msg}" if loc else msg) from exc
    if oracle.task != path.stem:
        raise TaskLoadError(str(path), f"field task: {oracle.task!r} differs from the file name")
    return oracle


@cache
def oracle_index(root: Path = ORACLE_ROOT) -> dict[str, Path]:
    """``domain/task_id`` -> oracle file, for every oracle shipped."""
    return {f"{p.parent.name}/{p.stem}": p for p in sorted(root.glob("*/*.json"))}


def find_oracle(domain: str, task_id: str) -> Oracle | None:
    """The oracle of a task, or None when it has none."""
    path = oracle_index().get(f"{domain}/{task_id}")
    return load_oracle_file(path) if path is not None else None


def run_oracle(
    oracle: Oracle, ctx: TaskContext, settle: Callable[[], object] | None = None
) -> None:
    """Play ``oracle`` on the desktop of ``ctx``; raises :class:`OracleFailed` when an action
    fails. Each action joins ``ctx.action_history`` (``FAIL`` for ``infeasible``). ``settle``
    waits until the screen is still: it is called before each ``pyautogui`` action, so that,
    like an agent that acts on a settled screenshot, the oracle never clicks into a dialog
    that has its focus but not yet its content (on a loaded host that takes a while)."""
    client = ctx.client
    for i, action in enumerate(oracle.actions):
        action = type(action).model_validate(substitute(action.model_dump(), ctx.vars))
        where = f"oracle {oracle.task} action {i} ({action.type})"
        if isinstance(action, Execute):
            result = client.execute(action.command, shell=action.shell, timeout=action.timeout_s)
            if action.check and result.returncode != 0:
                raise OracleFailed(
                    f"{where} exited {result.returncode}: "
                    f"{(result.error or result.output).strip()[:500]}"
                )
            ctx.action_history.append(json.dumps({"execute": action.command}))
        elif isinstance(action, Launch):
            client.launch(action.command, shell=action.shell)
            ctx.action_history.append(json.dumps({"launch": action.command}))
        elif isinstance(action, PyAutoGUI):
            if settle is not None:
                settle()
            result = client.run_pyautogui(action.code)
            if not result.ok:
                raise OracleFailed(f"{where} failed: {(result.error or result.output)[:500]}")
            ctx.action_history.append(action.code)
        elif isinstance(action, WaitUntil):
            _wait_until(client, action, where)
        else:
            ctx.action_history.append("FAIL")
        logger.debug("%s done", where)


def _wait_until(client: Any, action: WaitUntil, where: str) -> None:
    deadline = time.monotonic() + action.timeout_s
    last = ""
    while True:
        result = client.execute(["bash", "-c", action.command], timeout=min(action.timeout_s, 60))
        if result.returncode == 0:
            return
        last = (result.error or result.output).strip()[:300]
        if time.monotonic() > deadline:
            raise OracleFailed(
                f"{where}: waited {action.timeout_s:g} s for {action.what}; last answer: {last!r}"
            )
        time.sleep(0.5)


__all__ = [
    "ORACLE_ROOT",
    "PROOF_ROUTES",
    "Oracle",
    "OracleFailed",
    "Route",
    "find_oracle",
    "load_oracle_file",
    "oracle_index",
    "run_oracle",
]
