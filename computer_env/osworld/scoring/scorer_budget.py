"""A metric's CPU budget when the result the agent left is far larger than the expected file.

An honest result is about the size of the task's expected file, and a metric reads both in
seconds. A result many times larger (a hostile file under the memory cap that is no zip: a
huge XML, CSV or text a pure-Python parser walks) would otherwise compute until the
evaluation's 20-minute limit. In the scoring process (:func:`enable`, called by
:mod:`.scorer_child`), :func:`cpu_budget` gives such a metric ``BASE_S`` plus ``PER_MIB_S``
per MiB of the expected file in CPU seconds (``RLIMIT_CPU``); past it the kernel ends the
process with SIGXCPU, which the worker reads as
:class:`~computer_env.errors.EvaluatorTimedOut`: the agent's 0. Nothing is limited when the
sizes are unknown (values that are no files) or alike, nor outside the scoring process.
"""

from __future__ import annotations

import logging
import os
import resource
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

log = logging.getLogger(__name__)

RESULT_FACTOR = 8.0
"""A result this many times the expected file's size is far larger."""
MIN_RESULT_BYTES = 8 << 20
"""A smaller result is never budgeted (any metric reads it quickly)."""
BASE_S = 60.0
PER_MIB_S = 30.0
"""The budget: ``BASE_S`` + ``PER_MIB_S`` per MiB of the expected file (CPU seconds)."""

_enabled = False


def enable() -> None:
    """Budgets apply in this process (the scoring process; never a worker)."""
    global _enabled
    _enabled = True


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
    budget = budget_s(result, expected) if _enabled else None
    if budget is None:
        yield None
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    limit = int(_cpu_used() + budget) + 1
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    log.warning("the result (%s bytes) is over %g times the expected file (%s bytes): the "
                "metric gets %.0f s of CPU", file_bytes(result), RESULT_FACTOR,
                file_bytes(expected), budget)
    resource.setrlimit(resource.RLIMIT_CPU, (limit, hard))
    try:
        yield budget
    finally:
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


__all__ = ["BASE_S", "MIN_RESULT_BYTES", "PER_MIB_S", "RESULT_FACTOR", "budget_s",
           "cpu_budget", "enable", "file_bytes"]
