"""Running a task's setup (or postconfig) steps: OSWorld's ``SetupController`` on an OSWorld VM
when ``desktop_env`` is importable, else the built-in steps in :mod:`setup_steps`."""

from __future__ import annotations

import inspect
import logging
import os
import shutil
import time
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from computer_env.errors import InfraError, SetupError, VMUnreachable
from computer_env.osworld.context import TaskContext, substitute
from computer_env.osworld.download import cache_path, upstream_cache_name
from computer_env.osworld.errors import SetupUnsupported, Unsupported
from computer_env.osworld.setup_steps import STEPS, apply_proxy
from computer_env.osworld.tasks import SetupStep
from computer_env.osworld.upstream import Backend, upstream_setup_module, use_upstream

logger = logging.getLogger(__name__)


class StepTiming(BaseModel):
    """How one step went."""

    index: int
    type: str
    seconds: float
    backend: str


class SetupReport(BaseModel):
    """Per-step timings of one :func:`run_setup` call."""

    phase: str = "config"
    backend: str = "builtin"
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
        name = type(cur).__name__
        module = type(cur).__module__
        if module.startswith(("requests", "urllib3", "httpx")) and name in (
            "ConnectionError", "ConnectTimeout", "ConnectError", "NewConnectionError",
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


# ------------------------------------------------------------------------------ upstream

def _filter_kwargs(fn: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    params = inspect.signature(fn).parameters
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return kwargs
    return {k: v for k, v in kwargs.items() if k in params}


def upstream_setup_controller(ctx: TaskContext) -> Any:
    """OSWorld's ``SetupController`` for this desktop (its cache is the per-task folder)."""
    cls = upstream_setup_module().SetupController
    host, port = ctx.guest_address
    kwargs = {
        "vm_ip": host, "server_port": port,
        "chromium_port": ctx.handle.ports.get("cdp", 9222),
        "vlc_port": ctx.handle.ports.get("vlc", 8080),
        "cache_dir": str(ctx.task_cache_dir),
        "client_password": ctx.vars.get("CLIENT_PASSWORD", "password"),
        "screen_width": ctx.screen[0], "screen_height": ctx.screen[1],
    }
    return cls(**_filter_kwargs(cls.__init__, kwargs))


def _seed_upstream_cache(ctx: TaskContext, step: SetupStep) -> None:
    """Put prefetched downloads where OSWorld's controller looks, so it does not refetch."""
    if step.type != "download":
        return
    for item in step.parameters.get("files", []):
        url, path = item.get("url", ""), item.get("path", "")
        src = cache_path(ctx.download_cache_dir, url)
        dest = ctx.task_cache_dir / upstream_cache_name(url, path)
        if src.is_file() and not dest.exists():
            try:
                os.link(src, dest)
            except OSError:
                shutil.copyfile(src, dest)


def _run_upstream_step(controller: Any, ctx: TaskContext, step: SetupStep) -> None:
    if not hasattr(controller, f"_{step.type}_setup"):
        raise SetupUnsupported(step.type, "OSWorld's SetupController has no such step")
    _seed_upstream_cache(ctx, step)
    cfg = [{"type": step.type, "parameters": step.parameters}]
    setup = controller.setup
    ok = setup(cfg, False) if "use_proxy" in inspect.signature(setup).parameters else setup(cfg)
    if ok is False:
        raise VMUnreachable(f"the OSWorld VM server at {ctx.handle.url} is not ready")


# ------------------------------------------------------------------------------- run_setup

def run_setup(
    steps: Sequence[SetupStep | dict[str, Any]],
    ctx: TaskContext,
    *,
    backend: Backend = "auto",
    phase: str = "config",
) -> SetupReport:
    """Run steps in order after substituting ``ctx.vars`` and applying ``ctx.proxy``.

    Raises ``SetupUnsupported`` for a step this implementation cannot run (a skip),
    ``SetupError`` naming the step index and type when a step fails, and ``VMUnreachable``
    when the desktop server cannot be reached.
    """
    upstream = use_upstream(backend, upstream_vm=ctx.is_upstream_vm)
    parsed = [_as_step(s) for s in steps]
    name = "upstream" if upstream else "builtin"
    if not upstream:
        for step in parsed:
            if step.type not in STEPS:
                raise SetupUnsupported(step.type, "the built-in setup has no such step "
                                       "(pass --osworld-root to use OSWorld's own)")
    controller = upstream_setup_controller(ctx) if upstream and parsed else None
    report = SetupReport(phase=phase, backend=name)
    t_all = time.monotonic()
    for index, raw in enumerate(parsed):
        params = substitute(raw.parameters, ctx.vars)
        params = apply_proxy(raw.type, params, ctx.proxy)
        step = SetupStep(type=raw.type, parameters=params)
        t0 = time.monotonic()
        logger.info("%s step %d/%d: %s", phase, index + 1, len(parsed), step.type)
        try:
            if controller is not None:
                _run_upstream_step(controller, ctx, step)
            else:
                STEPS[step.type](ctx, **params)
        except (Unsupported, VMUnreachable):
            raise
        except SetupError:
            raise
        except Exception as exc:  # noqa: BLE001 - every failure is mapped to an infra error
            if _is_connection_error(exc) or not _alive(ctx):
                raise VMUnreachable(f"{phase} step {index} ({step.type}): desktop unreachable: "
                                    f"{exc}") from exc
            kind = "infra" if isinstance(exc, InfraError) else type(exc).__name__
            raise SetupError(f"{phase} step {index} ({step.type}) failed: {kind}: {exc}",
                             detail=repr(params)[:500]) from exc
        report.steps.append(StepTiming(index=index, type=step.type,
                                       seconds=round(time.monotonic() - t0, 3), backend=name))
    report.total_s = round(time.monotonic() - t_all, 3)
    return report


__all__ = ["SetupReport", "StepTiming", "run_setup", "upstream_setup_controller"]
