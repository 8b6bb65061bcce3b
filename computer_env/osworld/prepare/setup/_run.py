"""Running a task's setup (or postconfig) steps with OSWorld's own ``SetupController``, on every
provider, through the desktop's gateway (``osworld_url``), in this process: the scoring
process's child runs :func:`run_setup_in_process` (a worker calls
:func:`computer_env.osworld.scoring.process.run_setup`).

OSWorld's controller only logs many failures (a command that exits non-zero, a launch or window
request the server refused) and carries on. Here each step runs on its own and is then checked
against what the desktop answered (the gateway's journal of HTTP exchanges), so that in the
``config`` phase a failed step is a ``SetupError`` (unscored), never silently passed over. In
the ``postconfig`` phase (part of evaluation, after the agent) OSWorld's lenient behaviour is
kept — the agent may have closed the window a postconfig step activates — and the problems are
recorded in the report. How long a step may run and whether it went right is
``_verdict``.

A config step that depends on what an earlier step started (``launch`` Chrome, then
``activate_window`` "Google Chrome") gets the time OSWorld's VM gives it (:func:`.step_wait`):
the step is repeated while the desktop says its window or file is not there yet, or its input
waits until the launched app's window is mapped, up to ``START_GRACE_S``; only then is a
missing window a setup failure.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from computer_env.errors import InfraError, SetupError, VMUnreachable
from computer_env.osworld.catalog.download import cache_path, cached_fetch, upstream_cache_name
from computer_env.osworld.catalog.tasks import SetupStep
from computer_env.osworld.context import TaskContext, substitute
from computer_env.osworld.errors import SetupUnsupported, Unsupported
from computer_env.osworld.guards.confine import asset_hosts
from computer_env.osworld.prepare.setup._steps import (
    StepWait,
    apply_proxy,
    confine_step,
    is_host_local_url,
    step_wait,
    window_classes,
)
from computer_env.osworld.prepare.setup._verdict import (
    step_deadline,
    step_problem,
    target_missing,
    with_deadline,
)
from computer_env.osworld.upstream.loader import (
    absent_dependencies,
    missing_reason,
    upstream_setup_module,
)

logger = logging.getLogger(__name__)

UNSUPPORTED_STEPS: dict[str, str] = {
    "tidy_desktop": "OSWorld's SetupController does not implement it",
    "act": "OSWorld's SetupController does not implement it",
    "replay": "OSWorld's SetupController does not implement it",
    # PyDrive is installed (OSWorld's modules import it), but no account is configured here
    "googledrive": "it needs a Google Drive account (none is configured here)",
    "login": "it needs a Google Drive account (none is configured here)",
}


class StepTiming(BaseModel):
    """How one step went."""

    index: int
    type: str
    seconds: float
    backend: str = "osworld"
    problem: str | None = None


class SetupReport(BaseModel):
    """Per-step timings of one :func:`run_setup_in_process` call (problems of lenient
    postconfig steps)."""

    phase: str = "config"
    backend: str = "osworld"
    steps: list[StepTiming] = Field(default_factory=list)
    total_s: float = 0.0


def _as_step(step: SetupStep | dict[str, Any]) -> SetupStep:
    return step if isinstance(step, SetupStep) else SetupStep.model_validate(step)


def _is_connection_error(exc: BaseException) -> bool:
    """Is ``exc`` (or its cause chain) a failure to reach the guest server?"""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, VMUnreachable):
            return True
        name, module = type(cur).__name__, type(cur).__module__
        if module.startswith(("requests", "urllib3", "httpx")) and name in (
            "ConnectionError",
            "ConnectTimeout",
            "ConnectError",
            "NewConnectionError",
            "MaxRetryError",
        ):
            return True
        cur = cur.__cause__ or cur.__context__
    return False


def _alive(ctx: TaskContext) -> bool:
    try:
        return bool(ctx.client.ping())
    except Exception:  # noqa: BLE001 - a failing ping means not alive
        return False


def check_steps(steps: Sequence[SetupStep]) -> None:
    """Raise ``SetupUnsupported`` for the first step OSWorld's ``SetupController`` cannot run
    here (no such step, not implemented, or needing a module not installed here)."""
    cls = upstream_setup_module().SetupController
    for step in steps:
        if step.type in UNSUPPORTED_STEPS:
            raise SetupUnsupported(step.type, UNSUPPORTED_STEPS[step.type])
        fn = getattr(cls, f"_{step.type}_setup", None)
        if fn is None:
            raise SetupUnsupported(step.type, "OSWorld's SetupController has no such step")
        if absent := absent_dependencies(fn):
            raise SetupUnsupported(step.type, missing_reason(absent))


def upstream_setup_controller(ctx: TaskContext) -> Any:
    """OSWorld's ``SetupController`` for this desktop: the gateway's address and ports, the
    per-task cache folder, OSWorld's placeholders."""
    cls = upstream_setup_module().SetupController
    host, port = ctx.osworld_address
    ports = ctx.osworld_ports
    return cls(
        vm_ip=host,
        server_port=port,
        chromium_port=ports.get("cdp", 9222),
        vlc_port=ports.get("vlc", 8080),
        cache_dir=str(ctx.task_cache_dir),
        client_password=ctx.vars.get("CLIENT_PASSWORD", "password"),
        screen_width=ctx.screen[0],
        screen_height=ctx.screen[1],
    )


def seed_downloads(ctx: TaskContext, step: SetupStep) -> None:
    """Put a download step's files where OSWorld's controller looks first (its per-task cache),
    from the shared download cache, fetching into that cache when missing (a failure is a
    ``NetworkError``, unscored). Files of host-local URLs (the built-in asset server) are left to
    OSWorld's controller."""
    for item in step.parameters.get("files", []):
        url, path = item.get("url", ""), item.get("path", "")
        if not url or not path or is_host_local_url(ctx, url):
            continue
        dest = ctx.task_cache_dir / upstream_cache_name(url, path)
        if dest.exists():
            continue
        src = cache_path(ctx.download_cache_dir, url)
        if not src.is_file():
            src = cached_fetch(ctx.download_cache_dir, url, allow_hosts=asset_hosts(ctx.vars))
        try:
            os.link(src, dest)
        except OSError:
            shutil.copyfile(src, dest)


POLL_S = 0.5
"""How often a waiting step asks the desktop again."""


def wait_for_app_window(ctx: TaskContext, wait: StepWait) -> str | None:
    """Poll the desktop's windows (``wmctrl -lx``, on OSWorld's VM too) until one of class
    ``wait.classes`` is there; what was missing after ``wait.seconds``, or None."""
    deadline = time.monotonic() + wait.seconds
    while True:
        res = ctx.client.execute(["wmctrl", "-lx"], timeout=15)
        if any(want in cls for cls in window_classes(res.output or "") for want in wait.classes):
            return None
        if time.monotonic() >= deadline:
            return (
                f"no window of class {list(wait.classes)} appeared within "
                f"{wait.seconds:g} s ({wait.reason})"
            )
        time.sleep(POLL_S)


def _run_step(
    controller: Any, ctx: TaskContext, step: SetupStep, wait: StepWait | None = None
) -> str | None:
    """Run one (checked: :func:`check_steps`) step, waiting as ``wait`` says; what went wrong,
    or None."""
    if step.type == "download":
        seed_downloads(ctx, step)
    if wait is not None and wait.kind == "app" and (problem := wait_for_app_window(ctx, wait)):
        return problem
    gateway = ctx.gateway
    start = time.monotonic()
    deadline = start + wait.seconds if wait is not None and wait.kind == "retry" else None
    # OSWorld's SetupController.setup(config) polls GET /terminal, then calls
    # `_<type>_setup(**parameters)` for each step; the step is called the same way here, one at
    # a time, so that what the desktop answered can be checked per step (liveness is checked
    # by the harness, and /terminal costs an accessibility query on this desktop).
    method = getattr(controller, f"_{step.type}_setup")
    while True:
        mark = gateway.journal.mark()
        try:
            with_deadline(
                lambda: method(**step.parameters), step_deadline(step), gateway, step.type
            )
        except Exception:
            if not _again(step, gateway.journal.since(mark), deadline):
                raise
        else:
            exchanges = gateway.journal.since(mark)
            problem = step_problem(step, exchanges)
            if problem is None or not _again(step, exchanges, deadline):
                if problem is not None and deadline is not None:
                    problem += f" (waited {time.monotonic() - start:.0f} s for it)"
                return problem
        logger.debug("%s: not there yet, asking again", step.type)
        time.sleep(POLL_S)


def _again(step: SetupStep, exchanges: list[Any], deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() < deadline and target_missing(step, exchanges)


def run_setup_in_process(
    steps: Sequence[SetupStep | dict[str, Any]],
    ctx: TaskContext,
    *,
    phase: str = "config",
    backend: str | None = None,
    strict: bool | None = None,
) -> SetupReport:
    """Run steps in order with OSWorld's ``SetupController`` after substituting ``ctx.vars``,
    checking paths (:func:`confine_step`) and applying ``ctx.proxy``.

    Raises ``SetupUnsupported`` for a step that cannot run here (a skip), ``SetupError`` naming
    the step index and type when a step fails (in the config phase: also a non-zero exit, a
    refused launch, a missing window), and ``VMUnreachable`` when the desktop cannot be
    reached. ``strict`` (default: the config phase) makes what OSWorld's controller only logs
    a failure; pass False for an infeasible task, whose score does not depend on its setup and
    whose setup may fail on OSWorld's VM too. ``backend`` is accepted for compatibility and
    ignored: OSWorld's code runs.
    """
    del backend
    parsed = [_as_step(s) for s in steps]
    report = SetupReport(phase=phase)
    if not parsed:
        return report
    check_steps(parsed)
    controller = upstream_setup_controller(ctx)
    strict = phase == "config" if strict is None else strict
    t_all = time.monotonic()
    for index, raw in enumerate(parsed):
        params = substitute(raw.parameters, ctx.vars)
        params = apply_proxy(raw.type, params, ctx.proxy)
        step = SetupStep(type=raw.type, parameters=params)
        t0 = time.monotonic()
        logger.info("%s step %d/%d: %s", phase, index + 1, len(parsed), step.type)
        try:
            confine_step(ctx, step)
            wait = step_wait(parsed, index) if phase == "config" else None
            problem = _run_step(controller, ctx, step, wait)
        except (Unsupported, VMUnreachable, SetupError):
            raise
        except Exception as exc:  # noqa: BLE001 - every failure is mapped to an infra error
            if _is_connection_error(exc) or not _alive(ctx):
                raise VMUnreachable(
                    f"{phase} step {index} ({step.type}): desktop unreachable: {exc}"
                ) from exc
            kind = "infra" if isinstance(exc, InfraError) else type(exc).__name__
            raise SetupError(
                f"{phase} step {index} ({step.type}) failed: {kind}: {exc}",
                detail=repr(params)[:500],
            ) from exc
        if problem is not None:
            if strict:
                raise SetupError(
                    f"{phase} step {index} ({step.type}) failed: {problem}",
                    detail=repr(params)[:500],
                )
            logger.info(
                "%s step %d (%s): %s (kept going, as OSWorld)", phase, index, step.type, problem
            )
        report.steps.append(
            StepTiming(
                index=index,
                type=step.type,
                problem=problem,
                seconds=round(time.monotonic() - t0, 3),
            )
        )
    report.total_s = round(time.monotonic() - t_all, 3)
    return report


__all__ = [
    "SetupReport",
    "StepTiming",
    "UNSUPPORTED_STEPS",
    "check_steps",
    "run_setup_in_process",
    "seed_downloads",
    "upstream_setup_controller",
]
