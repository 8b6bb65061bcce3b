"""The transport of the guest-server client (:class:`computer_env.desktop.client.DesktopClient`):
one HTTP connection with retries on connection failures, and the types its answers come in.

Connection failures are retried (:class:`computer_env.retry.RetryPolicy`) and then raise
:class:`computer_env.errors.VMUnreachable`; an HTTP error answer raises
:class:`DesktopRequestError` (not an infrastructure error: callers decide what it means).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Self

import httpx
from pydantic import BaseModel

from computer_env.errors import VMUnreachable
from computer_env.retry import RetryPolicy

if TYPE_CHECKING:
    from computer_env.desktop.providers.base import DesktopHandle

#: How OSWorld's PythonController wraps pyautogui code for /execute (the fast path's
#: interpreter runs the same before each block).
PYAUTOGUI_PREFIX = "import pyautogui; import time; pyautogui.FAILSAFE = False; "

EXECUTE_TIMEOUT = 120.0  # the server's own limit for /execute


class DesktopRequestError(Exception):
    """The server answered with an HTTP error status."""

    def __init__(self, status: int, message: str, *, path: str = "") -> None:
        super().__init__(f"{path} -> HTTP {status}: {message}" if path else f"HTTP {status}: {message}")
        self.status = status
        self.message = message
        self.path = path


class ExecResult(BaseModel):
    """``{status, output, error, returncode}`` as /execute and /actions answer."""

    status: str
    output: str = ""
    error: str = ""
    returncode: int = -1

    @property
    def ok(self) -> bool:
        return self.status == "success" and self.returncode == 0


def _message(response: httpx.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.text.strip()[:500] or response.reason_phrase
    if isinstance(data, dict):
        for key in ("message", "error", "output"):
            if data.get(key):
                return str(data[key])
    return str(data)[:500]


class GuestTransport:
    """One desktop's guest server over HTTP: requests with retries, answers checked."""


    def __init__(
        self,
        url: str,
        token: str | None = None,
        *,
        timeout: float = 30.0,
        retries: int = 3,
        backoff: float = 0.5,
    ) -> None:
        """Connection failures are retried ``retries`` times, waiting ``backoff`` seconds, then
        twice as long each time."""
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.retry = RetryPolicy(attempts=retries + 1, backoff=backoff)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout)
        self._capabilities: dict[str, Any] | None = None
        self._capabilities_known = False

    @classmethod
    def from_handle(cls, handle: "DesktopHandle", **kwargs: Any) -> Self:
        """A client for a provider's :class:`DesktopHandle`."""
        return cls(handle.url, handle.token, **kwargs)

    # -- transport ---------------------------------------------------------------------------

    def _request(
        self,
        method: str,
        path: str,
        *,
        ok: Callable[[httpx.Response], bool] = lambda r: r.status_code < 400,
        timeout: float | None = None,
        idempotent: bool | None = None,
        **kwargs: Any,
    ) -> httpx.Response:
        """Send with retries on connection failures; raise DesktopRequestError when not ``ok``."""
        if idempotent is None:
            idempotent = method == "GET"
        retryable: tuple[type[Exception], ...] = (
            (httpx.TransportError,) if idempotent else (httpx.ConnectError, httpx.ConnectTimeout)
        )

        def send() -> httpx.Response:
            return self._http.request(
                method, path, timeout=timeout if timeout is not None else self.timeout, **kwargs)

        try:
            response = self.retry.call(send, retry_on=retryable, what=f"{method} {path}",
                                       log_level=logging.DEBUG)
        except retryable as exc:
            raise VMUnreachable(f"{method} {self.url}{path}: no answer after "
                                f"{self.retry.attempts} attempts: {exc!r}") from exc
        except httpx.TransportError as exc:
            raise VMUnreachable(f"{method} {self.url}{path} failed: {exc!r}") from exc
        if not ok(response):
            raise DesktopRequestError(response.status_code, _message(response), path=path)
        return response

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        return self._request(method, path, **kwargs).json()


__all__ = ["EXECUTE_TIMEOUT", "PYAUTOGUI_PREFIX", "DesktopRequestError", "ExecResult",
           "GuestTransport"]
