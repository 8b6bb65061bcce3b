"""The scoring process's side of the boundary (the worker never imports it): the job loop and
the jobs, OSWorld's evaluation, support check and setup on a task context rebuilt here, run by
:mod:`computer_env.osworld.scoring.in_process` and ``prepare.setup``'s in-process setup.

The loop keeps the process's limits (:mod:`._limits`): the memory cap set at start, the reserve
held during each job, whether the job overran the cap, and a metric's CPU budget. An evaluation
that overran the cap raises :class:`~computer_env.errors.EvaluatorOutOfMemory` (the agent's
doing once it acted); every answer says whether its job overran, and the worker then replaces
the process.
"""

from __future__ import annotations

import logging
import multiprocessing.connection
import os
import threading
import time
from dataclasses import dataclass
from typing import Any

from computer_env.desktop.client import DesktopClient
from computer_env.desktop.gateway import OSWorldGateway, with_gateway
from computer_env.desktop.providers.base import DesktopHandle
from computer_env.errors import EvaluatorOutOfMemory
from computer_env.osworld.catalog.tasks import Task
from computer_env.osworld.context import TaskContext
from computer_env.osworld.scoring.process._limits import (
    cpu_budget,
    enable_cpu_budget,
    limit_memory,
    overrun,
    release,
    spend_reserve,
    start_job,
    status_kib,
)
from computer_env.osworld.scoring.process._wire import (
    ContextSpec,
    LogCapture,
    describe,
    resolve,
)


@dataclass
class _Kept:
    """What this process keeps between jobs, as the worker does: the gateway to the last
    desktop (closing one takes ~0.5 s) and the client of the last task context (a new client
    costs ~30 ms; the worker makes one per case)."""

    gateways: dict[tuple[Any, ...], tuple[DesktopHandle, OSWorldGateway]]
    client: tuple[tuple[Any, ...], DesktopClient] | None = None


_kept = _Kept(gateways={})


def _reads(task: Task) -> str:
    """What the task's result getters read, for a message."""
    specs = task.evaluator.result
    items = specs if isinstance(specs, list) else [specs]
    named = [" ".join(str(s[k]) for k in ("type", "path") if s.get(k)) for s in items if s]
    return "; ".join(named) or "nothing named"


def _gateway_handle(handle: DesktopHandle) -> DesktopHandle:
    """``handle`` seen through this process's gateway (one to another desktop is closed in the
    background)."""
    key = (handle.url, handle.token, tuple(sorted(handle.ports.items())))
    if key not in _kept.gateways:
        for _, old in [_kept.gateways.pop(k) for k in list(_kept.gateways)]:
            threading.Thread(target=old.close, daemon=True).start()
        _kept.gateways[key] = with_gateway(handle, None)
    return _kept.gateways[key][0]


def _client(spec: ContextSpec) -> DesktopClient:
    key = (
        spec.work_id,
        spec.handle.url,
        spec.handle.token,
        spec.client_timeout,
        spec.client_retries,
        spec.client_backoff,
    )
    if _kept.client is None or _kept.client[0] != key:
        if _kept.client is not None:
            _kept.client[1].close()
        _kept.client = (key, spec.client())
    return _kept.client[1]


def _context(spec: ContextSpec, *, gateway: bool = True) -> TaskContext:
    """The task context rebuilt here; with ``gateway``, OSWorld's code reaches the desktop
    through a gateway of this process."""
    return spec.rebuild(_gateway_handle(spec.handle) if gateway else None, _client(spec))


def evaluate_job(task: Task, spec: ContextSpec) -> dict[str, Any]:
    """OSWorld's evaluation here, its metrics under their CPU budget; past the memory cap,
    :class:`EvaluatorOutOfMemory`."""
    from computer_env.osworld.scoring.in_process import evaluate_in_process

    def out_of_memory(why: str, where: str) -> EvaluatorOutOfMemory:
        return EvaluatorOutOfMemory(
            f"the evaluation of {task.case_id} {why}{where}; its result getters read: "
            f"{_reads(task)} (what the agent left inflates past any task's need, e.g. a "
            "decompression bomb)"
        )

    try:
        result = evaluate_in_process(task, _context(spec), metric_limit=cpu_budget)
    except Exception as exc:
        release(exc)
        if (why := overrun(exc)) is None:
            raise
        where = "" if isinstance(exc, MemoryError) else f", in {str(exc).splitlines()[0]}"
        raise out_of_memory(why, where) from exc
    release()
    if (why := overrun()) is not None:  # a reader swallowed it: its score is no score
        raise out_of_memory(
            why, f" (its metrics answered {result.score:g} regardless: {result.reason[:200]})"
        )
    return result.model_dump(mode="json")


def supported_job(task: Task, spec: ContextSpec | None) -> None:
    from computer_env.osworld.scoring.in_process import ensure_supported_in_process

    ensure_supported_in_process(task, _context(spec, gateway=False) if spec is not None else None)


def warm_job() -> None:
    """Import what every task's setup and evaluation use (OSWorld's setup controller and the
    evaluation's own modules), before the first job needs them."""
    from computer_env.osworld.prepare import setup  # noqa: F401 - imported for later jobs
    from computer_env.osworld.scoring import in_process  # noqa: F401
    from computer_env.osworld.upstream.loader import upstream_setup_module

    upstream_setup_module()


def setup_job(
    steps: list[Any], spec: ContextSpec, phase: str, strict: bool | None
) -> dict[str, Any]:
    from computer_env.osworld.prepare.setup import run_setup_in_process

    report = run_setup_in_process(steps, _context(spec), phase=phase, strict=strict)
    return report.model_dump(mode="json")


def _rss_mib() -> float:
    return status_kib("VmRSS") / 1024


def _exit_with_parent(parent: int) -> None:
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            os._exit(3)


def serve(conn: multiprocessing.connection.Connection, parent: int, cap_mib: int = 0) -> None:
    """The scoring process (memory capped at ``cap_mib``, 0: none): run jobs ``("module:function",
    log level, args, kwargs)`` from ``conn`` until it closes; answer ``(kind, value, log records,
    RSS in MiB, how the job overran the cap or None)``."""
    limit_memory(cap_mib)
    enable_cpu_budget()  # a metric on a result far larger than expected: a CPU budget
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True).start()
    root = logging.getLogger()
    capture = LogCapture()
    root.addHandler(capture)
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        target, level, args, kwargs = job
        root.setLevel(level)
        capture.records = []
        start_job()
        try:
            answer: tuple[str, Any] = ("ok", resolve(target)(*args, **kwargs))
            spend_reserve()
            over = overrun()
        except BaseException as exc:  # noqa: BLE001 - every exception goes back to the worker
            release(exc)
            over = overrun(exc)
            answer = ("raise", describe(exc, os.getpid()))
        try:
            conn.send((*answer, capture.records, _rss_mib(), over))
        except (OSError, EOFError):
            return
        except Exception as exc:  # noqa: BLE001 - a value or record that does not pickle
            conn.send(("raise", describe(exc, os.getpid()), [], _rss_mib(), over))


__all__ = ["evaluate_job", "serve", "setup_job", "supported_job", "warm_job"]
