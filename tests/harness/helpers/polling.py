"""The one polling helper of the harness tests: wait for a condition, or fail saying what.

Every wait in ``tests/harness`` goes through :func:`wait_for` (specific helpers such as
``xdesktop.wait_for_window`` are built on it). A predicate that must stop the wait at once (the
watched process exited) raises; its exception is not swallowed.
"""

from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")


def wait_for(predicate: Callable[[], T], what: str, timeout: float = 30.0, *,
             interval: float = 0.1) -> T:
    """Call ``predicate`` until it returns something truthy (returned); fail the test after
    ``timeout`` seconds naming ``what`` was awaited."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)
