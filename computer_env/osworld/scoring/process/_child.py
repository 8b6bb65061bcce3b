"""The scoring process's side of :mod:`computer_env.osworld.scoring.scorer`: the job loop and the jobs
(OSWorld's evaluation, support check and setup on a task context rebuilt here).

Memory: at start the process caps its private writable memory (``RLIMIT_DATA``, the heap a
reader fills) at the cap the worker gives, so that an allocation past it fails here
(``MemoryError``) instead of the kernel killing the process, or the host. A job *overran* when a
``MemoryError`` is in its exception's chain, or when its resident peak (``VmHWM``, reset before
each job) reached :data:`OVERRUN_SHARE` of the cap (a metric may swallow the ``MemoryError``, a
parser may report it as a syntax error). An evaluation that overran raises
:class:`~computer_env.errors.EvaluatorOutOfMemory` (the agent's doing once it acted); every
answer says whether its job overran, and the worker then replaces the process. A job that fills
the cap leaves no memory to handle its own ``MemoryError`` (what it built is still referenced
by the traceback's frames, or by cycles only the collector frees): :data:`RESERVE_MIB` are held
during each job and freed the moment it ends, before the frames are cleared and collected.
"""

from __future__ import annotations

import gc
import importlib
import logging
import mmap
import multiprocessing.connection
import os
import resource
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Any

from computer_env.desktop.client import DesktopClient
from computer_env.desktop.gateway import OSWorldGateway, with_gateway
from computer_env.desktop.providers.base import DesktopHandle
from computer_env.errors import EvaluatorOutOfMemory
from computer_env.osworld.scoring import scorer_budget
from computer_env.osworld.context import TaskContext
from computer_env.osworld.scoring.scorer_wire import ContextSpec, LogCapture, describe
from computer_env.osworld.catalog.tasks import Task


@dataclass
class _Kept:
    """What this process keeps between jobs, as the worker does: the gateway to the last
    desktop (closing one takes ~0.5 s) and the client of the last task context (a new client
    costs ~30 ms; the worker makes one per case)."""

    gateways: dict[tuple[Any, ...], tuple[DesktopHandle, OSWorldGateway]]
    client: tuple[tuple[Any, ...], DesktopClient] | None = None


_kept = _Kept(gateways={})

OVERRUN_SHARE = 0.75
"""A job whose resident peak reached this share of the cap overran it (a reader that fills the
cap peaks at ~95% of it; an honest evaluation peaked at 330 MiB: 2.3x below this share of the
least cap, 9x below the default's)."""


RESERVE_MIB = 64
"""Held during each job, freed when it ends: room to answer after a job filled the cap (more
than glibc's largest mmap threshold, so that it is unmapped, not kept in the heap)."""


@dataclass
class _Memory:
    cap_mib: int = 0
    """This process's cap (``RLIMIT_DATA``) in MiB; 0: none."""
    reserve: mmap.mmap | None = None


def _arm() -> None:
    """Map the reserve: private and writable, so ``RLIMIT_DATA`` counts it, but never touched,
    so it costs no time and no resident memory (a ``bytearray`` of it wrote 64 MiB of zeros,
    ~40 ms per job, and made them resident)."""
    if _memory.cap_mib and _memory.reserve is None:
        try:
            _memory.reserve = mmap.mmap(-1, RESERVE_MIB << 20,
                                        flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        except (MemoryError, OSError):
            _memory.reserve = None


def _spend() -> None:
    reserve, _memory.reserve = _memory.reserve, None
    if reserve is not None:
        reserve.close()


_memory = _Memory()


def _limit_memory(cap_mib: int) -> None:
    """Cap this process's private writable memory at ``cap_mib`` (0: no cap). BLAS runs one
    thread here (each OpenBLAS thread reserves ~40 MiB the cap counts; the metrics compare small
    tables), so that the cap does not depend on the host's cores."""
    os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = "1"
    _memory.cap_mib = cap_mib
    if cap_mib > 0:
        _, hard = resource.getrlimit(resource.RLIMIT_DATA)
        soft = cap_mib << 20 if hard == resource.RLIM_INFINITY else min(cap_mib << 20, hard)
        resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))


def _status_kib(field: str) -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(f"{field}:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _reset_peak() -> None:
    """Start this process's resident peak (``VmHWM``) afresh (for the next job)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
    except OSError:
        pass


def _memory_error(exc: BaseException | None) -> BaseException | None:
    """The ``MemoryError`` in ``exc``'s chain (allocates nothing: memory may be full)."""
    for _ in range(64):
        if exc is None or isinstance(exc, MemoryError):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


def overrun(exc: BaseException | None = None) -> str | None:
    """How the job now ending (which raised ``exc``, if any) ran past this process's memory
    cap, or None."""
    cap = f"its memory cap of {_memory.cap_mib} MiB" if _memory.cap_mib else "no memory cap"
    if (err := _memory_error(exc)) is not None:
        return f"ran out of memory ({type(err).__name__}) under {cap}"
    peak = _status_kib("VmHWM") / 1024
    if _memory.cap_mib and peak >= OVERRUN_SHARE * _memory.cap_mib:
        return f"reached {peak:.0f} MiB resident, past {OVERRUN_SHARE:.0%} of {cap}"
    return None


def _release(exc: BaseException | None = None) -> None:
    """Free the reserve, then what the finished frames of ``exc``'s chain hold (a reader's
    document) and what only the collector frees, before answering."""
    _spend()
    cur = exc
    for _ in range(64):
        if cur is None:
            break
        if cur.__traceback__ is not None:
            traceback.clear_frames(cur.__traceback__)
        cur = cur.__cause__ or cur.__context__
    gc.collect()


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
    """OSWorld's evaluation here; past the memory cap, :class:`EvaluatorOutOfMemory`."""
    from computer_env.osworld.scoring.evaluate import evaluate as evaluate_here

    def out_of_memory(why: str, where: str) -> EvaluatorOutOfMemory:
        return EvaluatorOutOfMemory(
            f"the evaluation of {task.case_id} {why}{where}; its result getters read: "
            f"{_reads(task)} (what the agent left inflates past any task's need, e.g. a "
            "decompression bomb)")

    try:
        result = evaluate_here(task, _context(spec))
    except Exception as exc:
        _release(exc)
        if (why := overrun(exc)) is None:
            raise
        where = "" if isinstance(exc, MemoryError) else f", in {str(exc).splitlines()[0]}"
        raise out_of_memory(why, where) from exc
    _release()
    if (why := overrun()) is not None:  # a reader swallowed it: its score is no score
        raise out_of_memory(why, f" (its metrics answered {result.score:g} regardless: "
                            f"{result.reason[:200]})")
    return result.model_dump(mode="json")


def supported_job(task: Task, spec: ContextSpec | None) -> None:
    from computer_env.osworld.scoring.evaluate import ensure_supported as supported_here

    supported_here(task, _context(spec, gateway=False) if spec is not None else None)


def warm_job() -> None:
    """Import what every task's setup and evaluation use (OSWorld's setup controller and the
    evaluation's own modules), before the first job needs them."""
    from computer_env.osworld.prepare import setup  # noqa: F401 - imported for later jobs
    from computer_env.osworld.scoring import evaluate  # noqa: F401
    from computer_env.osworld.upstream.loader import upstream_setup_module

    upstream_setup_module()


def setup_job(steps: list[Any], spec: ContextSpec, phase: str, strict: bool | None
               ) -> dict[str, Any]:
    from computer_env.osworld.prepare.setup import run_setup as setup_here

    return setup_here(steps, _context(spec), phase=phase, strict=strict).model_dump(mode="json")


def _target(path: str) -> Any:
    """``"module:function"`` imported here."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def _rss_mib() -> float:
    return _status_kib("VmRSS") / 1024


def _exit_with_parent(parent: int) -> None:
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            os._exit(3)


def serve(conn: multiprocessing.connection.Connection, parent: int, cap_mib: int = 0) -> None:
    """The scoring process (memory capped at ``cap_mib``, 0: none): run jobs ``("module:function",
    log level, args, kwargs)`` from ``conn`` until it closes; answer ``(kind, value, log records,
    RSS in MiB, how the job overran the cap or None)``."""
    _limit_memory(cap_mib)
    scorer_budget.enable()  # a metric on a result far larger than expected: a CPU budget
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
        _reset_peak()
        _arm()
        try:
            answer: tuple[str, Any] = ("ok", _target(target)(*args, **kwargs))
            _spend()
            over = overrun()
        except BaseException as exc:  # noqa: BLE001 - every exception goes back to the worker
            _release(exc)
            over = overrun(exc)
            answer = ("raise", describe(exc, os.getpid()))
        try:
            conn.send((*answer, capture.records, _rss_mib(), over))
        except (OSError, EOFError):
            return
        except Exception as exc:  # noqa: BLE001 - a value or record that does not pickle
            conn.send(("raise", describe(exc, os.getpid()), [], _rss_mib(), over))


__all__ = ["OVERRUN_SHARE", "RESERVE_MIB", "evaluate_job", "overrun", "serve", "setup_job",
           "supported_job", "warm_job"]
