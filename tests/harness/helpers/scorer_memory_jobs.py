"""Jobs run in the scoring process by tests/harness/osworld/test_scorer_memory.py: allocations past its
memory cap, and what the process's limits are."""

from __future__ import annotations

import os
import resource

CHUNK = 16 << 20


def hog(swallow: bool = False) -> int:
    """Fill memory (touched pages) until an allocation fails; re-raise the ``MemoryError``
    unless ``swallow`` (as a metric that catches every exception does)."""
    held: list[bytes] = []
    try:
        while True:
            held.append(b"\x01" * CHUNK)
    except MemoryError:
        held.clear()
        if not swallow:
            raise
    return os.getpid()


def limits() -> tuple[int, str]:
    """This process's ``RLIMIT_DATA`` (soft) and BLAS threads."""
    return resource.getrlimit(resource.RLIMIT_DATA)[0], os.environ.get("OPENBLAS_NUM_THREADS", "")
