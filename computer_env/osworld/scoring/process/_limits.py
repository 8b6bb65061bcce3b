"""The scoring process's memory cap (``RLIMIT_DATA``, see :mod:`.scorer`): its default, its
share of the host and the environment variable that overrides it."""

from __future__ import annotations

import os

from computer_env.errors import ConfigurationError

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
            raise ConfigurationError(f"${MEMORY_CAP_ENV}: {text!r} is not a number of MiB "
                                     "(0: no cap)")
    if value is not None:
        return value
    total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") >> 20
    return max(MIN_CAP_MIB, min(MEMORY_CAP_MIB, int(total * HOST_SHARE)))


__all__ = ["HOST_SHARE", "MEMORY_CAP_ENV", "MEMORY_CAP_MIB", "MIN_CAP_MIB", "memory_cap"]
