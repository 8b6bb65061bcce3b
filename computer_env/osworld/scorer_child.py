"""The scoring process's side of :mod:`computer_env.osworld.scorer`: the job loop and the jobs
(OSWorld's evaluation, support check and setup on a task context rebuilt here)."""

from __future__ import annotations

import contextlib
import importlib
import logging
import multiprocessing.connection
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

from computer_env.desktop.gateway import with_gateway
from computer_env.osworld.context import TaskContext
from computer_env.osworld.scorer_wire import ContextSpec, LogCapture, describe
from computer_env.osworld.tasks import Task


@contextlib.contextmanager
def _on_desktop(spec: ContextSpec, *, gateway: bool = True) -> Iterator[TaskContext]:
    """The task context rebuilt here; with ``gateway``, OSWorld's code reaches the desktop
    through a gateway of this process (closed afterwards, with the client)."""
    handle, gw = with_gateway(spec.handle, None) if gateway else (spec.handle, None)
    ctx = spec.rebuild(handle)
    try:
        yield ctx
    finally:
        ctx.client.close()
        if gw is not None:
            gw.close()


def evaluate_job(task: Task, spec: ContextSpec) -> dict[str, Any]:
    from computer_env.osworld.evaluate import evaluate as evaluate_here

    with _on_desktop(spec) as ctx:
        return evaluate_here(task, ctx).model_dump(mode="json")


def supported_job(task: Task, spec: ContextSpec) -> None:
    from computer_env.osworld.evaluate import ensure_supported as supported_here

    with _on_desktop(spec, gateway=False) as ctx:
        supported_here(task, ctx)


def setup_job(steps: list[Any], spec: ContextSpec, phase: str, strict: bool | None
               ) -> dict[str, Any]:
    from computer_env.osworld.setup import run_setup as setup_here

    with _on_desktop(spec) as ctx:
        return setup_here(steps, ctx, phase=phase, strict=strict).model_dump(mode="json")


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
