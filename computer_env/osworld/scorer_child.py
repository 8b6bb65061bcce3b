"""The scoring process's side of :mod:`computer_env.osworld.scorer`: the job loop and the jobs
(OSWorld's evaluation, support check and setup on a task context rebuilt here)."""

from __future__ import annotations

import importlib
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
from computer_env.osworld.context import TaskContext
from computer_env.osworld.scorer_wire import ContextSpec, LogCapture, describe
from computer_env.osworld.tasks import Task


@dataclass
class _Kept:
    """What this process keeps between jobs, as the worker does: the gateway to the last
    desktop (closing one takes ~0.5 s) and the client of the last task context (a new client
    costs ~30 ms; the worker makes one per case)."""

    gateways: dict[tuple[Any, ...], tuple[DesktopHandle, OSWorldGateway]]
    client: tuple[tuple[Any, ...], DesktopClient] | None = None


_kept = _Kept(gateways={})


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
    key = (spec.work_id, spec.handle.url, spec.handle.token, spec.client_timeout,
           spec.client_retries, spec.client_backoff)
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
    from computer_env.osworld.evaluate import evaluate as evaluate_here

    return evaluate_here(task, _context(spec)).model_dump(mode="json")


def supported_job(task: Task, spec: ContextSpec) -> None:
    from computer_env.osworld.evaluate import ensure_supported as supported_here

    supported_here(task, _context(spec, gateway=False))


def setup_job(steps: list[Any], spec: ContextSpec, phase: str, strict: bool | None
               ) -> dict[str, Any]:
    from computer_env.osworld.setup import run_setup as setup_here

    return setup_here(steps, _context(spec), phase=phase, strict=strict).model_dump(mode="json")


def _target(path: str) -> Any:
    """``"module:function"`` imported here."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def _rss_mib() -> float:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _exit_with_parent(parent: int) -> None:
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            os._exit(3)


def serve(conn: multiprocessing.connection.Connection, parent: int) -> None:
    """The scoring process: run jobs ``("module:function", log level, args, kwargs)`` from
    ``conn`` until it closes; answer ``(kind, value, log records, RSS in MiB)``."""
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
        try:
            answer: tuple[str, Any] = ("ok", _target(target)(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - every exception goes back to the worker
            answer = ("raise", describe(exc, os.getpid()))
        try:
            conn.send((*answer, capture.records, _rss_mib()))
        except (OSError, EOFError):
            return
        except Exception as exc:  # noqa: BLE001 - a value or record that does not pickle
            conn.send(("raise", describe(exc, os.getpid()), [], _rss_mib()))


__all__ = ["evaluate_job", "serve", "setup_job", "supported_job"]
