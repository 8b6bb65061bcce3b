"""The scoring process's limits: its memory cap (chosen in the worker, enforced in the child)
and a metric's CPU budget (in the child).

Memory: the child caps its own private writable memory (``RLIMIT_DATA``: the heap a reader
fills; not ``RLIMIT_AS``, which also counts address space only reserved, e.g. the ~600 MiB
``VmData`` but 1.5 GiB ``VmSize`` of playwright's node driver, a child of the process) at
:func:`memory_cap`: :data:`MEMORY_CAP_MIB`, at most :data:`HOST_SHARE` of the host's memory (at
least :data:`MIN_CAP_MIB`); ``$HOLO_SCORER_MEMORY_MIB`` (MiB; 0: no cap) or the client's
``memory_cap_mib`` override it. An allocation past the cap then fails in the child
(``MemoryError``) instead of the kernel killing the process, or the host. A job *overran* the
cap when a ``MemoryError`` is in its exception's chain, or when its resident peak (``VmHWM``,
reset before each job) reached :data:`OVERRUN_SHARE` of the cap (a metric may swallow the
``MemoryError``, a parser may report it as a syntax error). A job that fills the cap leaves no
memory to handle its own ``MemoryError`` (what it built is still referenced by the traceback's
frames, or by cycles only the collector frees): :data:`RESERVE_MIB` are held during each job and
freed the moment it ends, before the frames are cleared and collected.

CPU: an honest result is about the size of the task's expected file, and a metric reads both in
seconds. A result many times larger (a hostile file under the memory cap that is no zip: a huge
XML, CSV or text a pure-Python parser walks) would otherwise compute until the evaluation's
20-minute limit. In the child (:func:`enable_cpu_budget`), :func:`cpu_budget` gives such a
metric :data:`BASE_S` plus :data:`PER_MIB_S` per MiB of the expected file in CPU seconds
(``RLIMIT_CPU``); past it the kernel ends the process with SIGXCPU, which the worker reads as
:class:`~computer_env.errors.EvaluatorTimedOut`: the agent's 0. Nothing is limited when the
sizes are unknown (values that are no files) or alike, nor outside the scoring process.
"""

from __future__ import annotations

import gc
import logging
import mmap
import os
import resource
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from computer_env.errors import ConfigurationError

log = logging.getLogger(__name__)

# -- the memory cap, as the worker chooses it -------------------------------------------------

MEMORY_CAP_ENV = "HOLO_SCORER_MEMORY_MIB"
MEMORY_CAP_MIB = 4096
"""The scoring process's memory cap (``RLIMIT_DATA``): 9.5 times its measured peak ``VmData``."""
HOST_SHARE = 0.25
"""At most this share of the host's memory per scoring process (one per worker)."""
MIN_CAP_MIB = 1024
"""The least cap (below it honest evaluations could fail: the host's OOM killer then rules)."""


def memory_cap(value: int | None = None) -> int:
    """The scoring process's memory cap in MiB (0: none): ``value``, else
    ``$HOLO_SCORER_MEMORY_MIB``, else :data:`MEMORY_CAP_MIB` within :data:`HOST_SHARE` of the
    host's memory."""
    if value is None and (text := os.environ.get(MEMORY_CAP_ENV, "").strip()):
        try:
            value = int(text)
        except ValueError:
            value = -1
        if value < 0:
            raise ConfigurationError(
                f"${MEMORY_CAP_ENV}: {text!r} is not a number of MiB (0: no cap)"
            )
    if value is not None:
        return value
    total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") >> 20
    return max(MIN_CAP_MIB, min(MEMORY_CAP_MIB, int(total * HOST_SHARE)))


# -- the memory cap, as the child keeps it ----------------------------------------------------

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


_memory = _Memory()


def limit_memory(cap_mib: int) -> None:
    """Cap this process's private writable memory at ``cap_mib`` (0: no cap). BLAS runs one
    thread here (each OpenBLAS thread reserves ~40 MiB the cap counts; the metrics compare small
    tables), so that the cap does not depend on the host's cores."""
    os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = "1"
    _memory.cap_mib = cap_mib
    if cap_mib > 0:
        _, hard = resource.getrlimit(resource.RLIMIT_DATA)
        soft = cap_mib << 20 if hard == resource.RLIM_INFINITY else min(cap_mib << 20, hard)
        resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))


def status_kib(field: str) -> int:
    """A ``/proc/self/status`` field in KiB (0 where it cannot be read)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(f"{field}:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def start_job() -> None:
    """Before a job: its resident peak (``VmHWM``) starts afresh and the reserve is mapped:
    private and writable, so ``RLIMIT_DATA`` counts it, but never touched, so it costs no time
    and no resident memory (a ``bytearray`` of it wrote 64 MiB of zeros, ~40 ms per job, and
    made them resident)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
    except OSError:
        pass
    if _memory.cap_mib and _memory.reserve is None:
        try:
            _memory.reserve = mmap.mmap(
                -1, RESERVE_MIB << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
            )
        except (MemoryError, OSError):
            _memory.reserve = None


def spend_reserve() -> None:
    """Free the reserve (the job has ended)."""
    reserve, _memory.reserve = _memory.reserve, None
    if reserve is not None:
        reserve.close()


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
    peak = status_kib("VmHWM") / 1024
    if _memory.cap_mib and peak >= OVERRUN_SHARE * _memory.cap_mib:
        return f"reached {peak:.0f} MiB resident, past {OVERRUN_SHARE:.0%} of {cap}"
    return None


def release(exc: BaseException | None = None) -> None:
    """Free the reserve, then what the finished frames of ``exc``'s chain hold (a reader's
    document) and what only the collector frees, before answering."""
    spend_reserve()
    cur = exc
    for _ in range(64):
        if cur is None:
            break
        if cur.__traceback__ is not None:
            traceback.clear_frames(cur.__traceback__)
        cur = cur.__cause__ or cur.__context__
    gc.collect()


# -- a metric's CPU budget --------------------------------------------------------------------

RESULT_FACTOR = 8.0
"""A result this many times the expected file's size is far larger."""
MIN_RESULT_BYTES = 8 << 20
"""A smaller result is never budgeted (any metric reads it quickly)."""
BASE_S = 60.0
PER_MIB_S = 30.0
"""The budget: ``BASE_S`` + ``PER_MIB_S`` per MiB of the expected file (CPU seconds)."""

_budget_on = False


def enable_cpu_budget() -> None:
    """Budgets apply in this process (the scoring process; never a worker)."""
    global _budget_on
    _budget_on = True


def file_bytes(value: Any) -> int | None:
    """The size of the file(s) a getter's value names (a path or a list of paths), or None
    when it names none."""
    paths = value if isinstance(value, list) else [value]
    if not paths or not all(isinstance(p, str) and os.path.isfile(p) for p in paths):
        return None
    return sum(os.path.getsize(p) for p in paths)


def budget_s(result: Any, expected: Any) -> float | None:
    """The CPU budget of a metric on ``result`` and ``expected``, or None (no budget)."""
    got, want = file_bytes(result), file_bytes(expected)
    if got is None or want is None or got < MIN_RESULT_BYTES or got < RESULT_FACTOR * want:
        return None
    return BASE_S + PER_MIB_S * want / (1 << 20)


def _cpu_used() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@contextmanager
def cpu_budget(result: Any, expected: Any) -> Iterator[float | None]:
    """Run the block under the budget of :func:`budget_s` (yields it; None: unlimited)."""
    budget = budget_s(result, expected) if _budget_on else None
    if budget is None:
        yield None
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    limit = int(_cpu_used() + budget) + 1
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    log.warning(
        "the result (%s bytes) is over %g times the expected file (%s bytes): the "
        "metric gets %.0f s of CPU",
        file_bytes(result),
        RESULT_FACTOR,
        file_bytes(expected),
        budget,
    )
    resource.setrlimit(resource.RLIMIT_CPU, (limit, hard))
    try:
        yield budget
    finally:
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


__all__ = [
    "BASE_S",
    "HOST_SHARE",
    "MEMORY_CAP_ENV",
    "MEMORY_CAP_MIB",
    "MIN_CAP_MIB",
    "MIN_RESULT_BYTES",
    "OVERRUN_SHARE",
    "PER_MIB_S",
    "RESERVE_MIB",
    "RESULT_FACTOR",
    "budget_s",
    "cpu_budget",
    "enable_cpu_budget",
    "file_bytes",
    "limit_memory",
    "memory_cap",
    "overrun",
    "release",
    "spend_reserve",
    "start_job",
    "status_kib",
]
