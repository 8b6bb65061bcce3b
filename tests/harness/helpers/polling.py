"""The one polling helper of the harness tests, and the one time scale of their waits.

Every wait in ``tests/harness`` goes through :func:`wait_for` (specific helpers such as
``xdesktop.wait_for_window`` are built on it). A predicate that must stop the wait at once (the
watched process exited) raises; its exception is not swallowed.

**Time scale.** ``HOLO_TEST_TIME_SCALE`` (default 1) multiplies every timeout of :func:`wait_for`,
every bound a test puts on wall-clock time (:func:`scaled`), the child suites' time limits and
each test's own time limit (pytest-timeout, set by the tiers). On a host slower or busier than
the one the numbers were chosen on, raise it (e.g. ``HOLO_TEST_TIME_SCALE=3``) instead of any one
test's number: what a test waits for is an event, and only how long it may take changes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

TIME_SCALE_ENV = "HOLO_TEST_TIME_SCALE"


def time_scale() -> float:
    """The factor from ``$HOLO_TEST_TIME_SCALE`` (a positive number; 1 when unset)."""
    raw = os.environ.get(TIME_SCALE_ENV, "").strip()
    if not raw:
        return 1.0
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"${TIME_SCALE_ENV}={raw!r} is not a number") from None
    if not value > 0:
        raise ValueError(f"${TIME_SCALE_ENV}={raw!r} must be above 0")
    return value


def scaled(seconds: float) -> float:
    """``seconds`` times the time scale: a bound on how long something may take."""
    return seconds * time_scale()


def wait_for(
    predicate: Callable[[], T], what: str, timeout: float = 30.0, *, interval: float = 0.1
) -> T:
    """Call ``predicate`` until it returns something truthy (returned); fail the test after
    ``timeout`` seconds (times the time scale) naming ``what`` was awaited."""
    limit = scaled(timeout)
    deadline = time.monotonic() + limit
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {limit:g} s waiting for {what}")
        time.sleep(interval)


__all__ = ["TIME_SCALE_ENV", "scaled", "time_scale", "wait_for"]
