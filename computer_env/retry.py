"""One retry policy for the environment's HTTP-ish calls (the guest server, task downloads):
a number of attempts with exponential backoff, capped."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """``attempts`` tries in all; before try ``k`` (k >= 2) wait ``backoff * factor**(k-2)``
    seconds, at most ``cap``."""

    attempts: int = 4
    backoff: float = 0.5
    factor: float = 2.0
    cap: float = 30.0

    def delays(self) -> Iterator[float]:
        """The waits between tries (``attempts - 1`` of them)."""
        for k in range(max(self.attempts, 1) - 1):
            yield min(self.backoff * self.factor**k, self.cap)

    def call(
        self,
        fn: Callable[[], T],
        *,
        retry_on: tuple[type[BaseException], ...],
        what: str = "call",
        log_level: int = logging.WARNING,
        sleep: Callable[[float], None] = time.sleep,
    ) -> T:
        """``fn()`` until it returns; an exception of ``retry_on`` is retried after the next
        delay, and the last one re-raised once the attempts are spent. Anything else goes up
        at once."""
        delays = self.delays()
        attempt = 1
        while True:
            try:
                return fn()
            except retry_on as exc:
                delay = next(delays, None)
                if delay is None:
                    raise
                log.log(
                    log_level,
                    "%s failed (attempt %d/%d): %s; again in %.2g s",
                    what,
                    attempt,
                    self.attempts,
                    exc,
                    delay,
                )
                sleep(delay)
                attempt += 1


__all__ = ["RetryPolicy"]
