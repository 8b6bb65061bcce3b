"""The one polling helper of the harness tests: wait for a condition, or fail saying what."""

from __future__ import annotations

import time
from typing import Any, Callable


def wait_for(predicate: Callable[[], Any], what: str, timeout: float = 30.0, *,
             interval: float = 0.1) -> Any:
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
