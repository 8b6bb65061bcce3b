"""How long one setup step may run, and whether it went right, judged from what the desktop
answered (the gateway's journal): OSWorld's ``SetupController`` only logs most failures."""

from __future__ import annotations

import threading
from typing import Any

from computer_env.desktop.gateway import Exchange
from computer_env.errors import SetupError, VMUnreachable
from computer_env.osworld.catalog.tasks import SetupStep
from computer_env.osworld.errors import SetupUnsupported
from computer_env.osworld.upstream.loader import MissingDependency

STEP_TIMEOUT_S = 900.0
UNTIL_TIMEOUT_S = 180.0
_ROUTES = {
    "execute": "/setup/execute",
    "command": "/setup/execute",
    "launch": "/setup/launch",
    "activate_window": "/setup/activate_window",
    "close_window": "/setup/close_window",
    "change_wallpaper": "/setup/change_wallpaper",
}
"""The server route each checked step type calls."""


def _until_met(until: dict[str, Any], resp: dict[str, Any]) -> bool:
    return (
        "returncode" in until
        and resp.get("returncode") == until["returncode"]
        or "stdout" in until
        and until["stdout"] in (resp.get("output") or "")
        or "stderr" in until
        and until["stderr"] in (resp.get("error") or "")
    )


def step_problem(step: SetupStep, exchanges: list[Exchange]) -> str | None:
    """What went wrong in a step OSWorld's controller only logs, from the desktop's answers;
    None when it went right."""
    for ex in exchanges:
        if ex.status == 502:
            raise VMUnreachable(
                f"the desktop server did not answer {ex.method} {ex.path}: "
                f"{(ex.response or {}).get('error', '')}"
            )
    route = _ROUTES.get(step.type)
    if route is None:
        return None
    mine = [ex for ex in exchanges if ex.path == route]
    if not mine:
        return f"OSWorld's controller sent no {route} request"
    last = mine[-1]
    message = (last.response or {}).get("message") or (last.response or {}).get("error") or ""
    if last.status != 200:
        return f"{route} answered {last.status}: {str(message)[:300]}"
    if (last.response or {}).get("status") == "not_found":  # this project's server says so
        return str(message or "no such window")
    if route == "/setup/execute":
        resp = last.response or {}
        until = step.parameters.get("until") or {}
        if until:
            return (
                None
                if _until_met(until, resp)
                else (
                    f"the command never satisfied {until} ({len(mine)} tries; last exit "
                    f"{resp.get('returncode')})"
                )
            )
        if resp.get("returncode") not in (0, None):
            err = (resp.get("error") or resp.get("output") or "").strip()
            return f"the command exited {resp.get('returncode')}: {err[-300:]}"
    return None


def target_missing(step: SetupStep, exchanges: list[Exchange]) -> bool:
    """Did the desktop answer that the step's window (``activate_window``, ``close_window``) or
    file (``open``) is not there (yet)?"""
    route = "/setup/open_file" if step.type == "open" else _ROUTES.get(step.type)
    mine = [ex for ex in exchanges if ex.path == route]
    if not mine:
        return False
    last = mine[-1]
    return last.status == 404 or (last.response or {}).get("status") == "not_found"


def step_deadline(step: SetupStep) -> float:
    """How long one step may take: OSWorld's ``open`` waits up to 1800 s for its window; an
    ``execute`` with ``until`` is repeated by OSWorld's controller without end while the command
    runs, so it gets :data:`UNTIL_TIMEOUT_S`; anything else :data:`STEP_TIMEOUT_S`."""
    if step.type == "open":
        return 1900.0
    if step.type in ("execute", "command") and step.parameters.get("until"):
        return UNTIL_TIMEOUT_S
    if step.type == "sleep":
        return float(step.parameters.get("seconds", 0) or 0) + STEP_TIMEOUT_S
    return STEP_TIMEOUT_S


def with_deadline(call: Any, seconds: float, gateway: Any, what: str) -> Any:
    """Run OSWorld's ``call`` in a thread; past ``seconds`` the gateway refuses its requests
    (OSWorld's loops end after a few refused answers) and the step is a ``SetupError``."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=target, name=f"setup-{what}", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        gateway.refusing = True
        try:
            worker.join(60.0)
        finally:
            gateway.refusing = False
        raise SetupError(
            f"setup step {what!r} did not finish within {seconds:g} s "
            "(OSWorld's controller kept waiting for its condition)"
        )
    if "error" in box:
        if isinstance(box["error"], MissingDependency):
            raise SetupUnsupported(what, str(box["error"])) from box["error"]
        raise box["error"]
    return box.get("value")


__all__ = [
    "STEP_TIMEOUT_S",
    "UNTIL_TIMEOUT_S",
    "step_deadline",
    "step_problem",
    "target_missing",
    "with_deadline",
]
