"""A wall-clock ticker on a background thread (the realtime pacing of a game)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)


class TurnClock:
    """Calls ``tick()`` every ``period`` seconds on a daemon thread until it returns False.

    Deadlines are ``start + k * period`` (no drift); a tick that overruns is followed at once by
    the next one. ``stop()`` ends the thread and waits for it (at most ``join_timeout`` seconds).
    """

    def __init__(
        self, tick: Callable[[], bool], period: float, *, name: str = "game-clock"
    ) -> None:
        if period <= 0:
            raise ValueError(f"period must be > 0 seconds, got {period}")
        self._tick = tick
        self.period = period
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.started_at: float | None = None
        self.error: BaseException | None = None

    def start(self) -> None:
        """Start ticking; the first tick is one period from now."""
        self.started_at = time.monotonic()
        self._thread.start()

    def _run(self) -> None:
        assert self.started_at is not None
        k = 1
        while True:
            delay = self.started_at + k * self.period - time.monotonic()
            if self._stop.wait(max(0.0, delay)):
                return
            try:
                if not self._tick():
                    return
            except BaseException as exc:  # noqa: BLE001 - kept for the owner to re-raise
                log.exception("game clock tick failed")
                self.error = exc
                return
            k += 1

    def stop(self, join_timeout: float = 5.0) -> None:
        """Stop ticking and wait for the thread to end."""
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(join_timeout)
            if self._thread.is_alive():
                log.warning("game clock thread did not stop within %.1fs", join_timeout)
