"""Waiting until a server started in the background answers: the one polling loop of start-ups.

:func:`wait_until` asks ``check`` until it returns a value (anything but None), and gives up
as soon as the watched child process exits (checked before each check: a server that answers
for a child that is gone is not the one awaited), ``gone`` says the server stopped (e.g. its
container exited), or the time is up; it then raises :class:`NotReady`, which names what was
awaited, the child's exit code and the last problem seen. The poll interval grows by half each
round up to ``max_interval_s``: a quick server is seen quickly, a slow one is not hammered.
The last check is made at the deadline itself.

A check says "not yet" by returning None or raising :class:`NotYet` (its message becomes the
last problem); an exception of ``retry_on`` (connection refused: ``OSError`` by default) is
"not yet" too; any other exception (a server that refuses the credentials) ends the wait.
"""

from __future__ import annotations

import logging
import subprocess
import time
from collections.abc import Callable
from typing import Any, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


class NotYet(Exception):
    """Raised by a check: the server answered, but is not ready (the message says how)."""


class NotReady(Exception):
    """What was awaited did not answer in time, or its process ended first.

    ``exit_code``: the child's exit code when it exited; ``gone``: what ``gone`` reported;
    ``last``: the last problem a check met; ``waited_s``: how long the wait took."""

    def __init__(
        self,
        what: str,
        *,
        timeout_s: float,
        waited_s: float,
        last: str,
        exit_code: int | None = None,
        gone: str | None = None,
    ) -> None:
        if exit_code is not None:
            message = f"{what} exited with code {exit_code} before it answered (last: {last})"
        elif gone is not None:
            message = f"{what} stopped before it answered: {gone} (last: {last})"
        else:
            message = f"{what} did not answer within {timeout_s:g} s (last: {last})"
        super().__init__(message)
        self.what, self.timeout_s, self.waited_s = what, timeout_s, waited_s
        self.last, self.exit_code, self.gone = last, exit_code, gone

    @property
    def ended(self) -> bool:
        """Did the server's process end (rather than the time run out)?"""
        return self.exit_code is not None or self.gone is not None


def wait_until(
    check: Callable[[], T | None],
    *,
    timeout_s: float,
    what: str,
    interval_s: float = 0.1,
    max_interval_s: float = 2.0,
    child: subprocess.Popen[Any] | None = None,
    gone: Callable[[], str | None] | None = None,
    retry_on: tuple[type[BaseException], ...] = (OSError,),
) -> T:
    """``check()``'s first value that is not None; :class:`NotReady` when ``child`` exits,
    ``gone()`` returns a reason, or ``timeout_s`` seconds pass first (see the module docstring).
    """
    if timeout_s < 0 or interval_s <= 0 or max_interval_s < interval_s:
        raise ValueError(
            f"wait_until({what!r}): timeout_s must be >= 0 and 0 < interval_s <= "
            f"max_interval_s (got {timeout_s}, {interval_s}, {max_interval_s})"
        )
    start = time.monotonic()
    deadline = start + timeout_s
    last = "no answer yet"
    delay = interval_s

    def fail(exit_code: int | None = None, reason: str | None = None) -> NotReady:
        return NotReady(
            what,
            timeout_s=timeout_s,
            waited_s=time.monotonic() - start,
            last=last,
            exit_code=exit_code,
            gone=reason,
        )

    while True:
        if child is not None and child.poll() is not None:  # whatever answers, it is not ours
            raise fail(exit_code=child.returncode)
        try:
            value = check()
            if value is not None:
                log.debug("%s ready after %.2f s", what, time.monotonic() - start)
                return value
            last = "not ready"
        except NotYet as exc:
            last = str(exc) or "not ready"
        except retry_on as exc:
            last = f"{type(exc).__name__}: {exc}"
        reason = gone() if gone is not None else None
        if reason:
            raise fail(reason=reason)
        left = deadline - time.monotonic()
        if left <= 0:
            raise fail(exit_code=child.poll() if child is not None else None)
        time.sleep(min(delay, left))  # the poll interval of a readiness check
        delay = min(max_interval_s, delay * 1.5)


__all__ = ["NotReady", "NotYet", "wait_until"]
