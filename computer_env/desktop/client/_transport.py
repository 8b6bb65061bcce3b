"""The transport of the guest-server client (:class:`computer_env.desktop.client.DesktopClient`):
one HTTP connection with retries on connection failures, and the types its answers come in.

Connection failures are retried (:class:`computer_env.retry.RetryPolicy`) and then raise
:class:`computer_env.errors.VMUnreachable`; an HTTP error answer raises
:class:`DesktopRequestError` (not an infrastructure error: callers decide what it means).
"""

from __future__ import annotations

import http.client
import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Self
from urllib.parse import urlencode, urlsplit

import httpx
from pydantic import BaseModel

from computer_env.desktop import identity
from computer_env.errors import VMUnreachable
from computer_env.retry import RetryPolicy

if TYPE_CHECKING:
    from computer_env.desktop.providers.base import DesktopHandle


EXECUTE_TIMEOUT = 120.0  # the server's own limit for /execute


class DesktopRequestError(Exception):
    """The server answered with an HTTP error status."""

    def __init__(self, status: int, message: str, *, path: str = "") -> None:
        super().__init__(
            f"{path} -> HTTP {status}: {message}" if path else f"HTTP {status}: {message}"
        )
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
    return _body_message(response.content, response.reason_phrase)


def _body_message(content: bytes, reason: str) -> str:
    try:
        data = json.loads(content)
    except ValueError:
        return content.decode("utf-8", "replace").strip()[:500] or reason
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
        self._token = token
        self._headers = headers
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout)
        self._capabilities: dict[str, Any] | None = None
        self._capabilities_known = False
        self.x_grabs_seen: int | None = None
        """The last screenshot's ``X-Grabs`` count (grabs of the X server the guest server
        found; None when it does not say)."""
        self.keymap_seen: str | None = None
        """The last screenshot's ``X-Keymap``: a digest of the keyboard map (None when the
        server does not say)."""

    @classmethod
    def from_handle(cls, handle: DesktopHandle, **kwargs: Any) -> Self:
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
                method, path, timeout=timeout if timeout is not None else self.timeout, **kwargs
            )

        try:
            response = self.retry.call(
                send, retry_on=retryable, what=f"{method} {path}", log_level=logging.DEBUG
            )
        except retryable as exc:
            raise VMUnreachable(
                f"{method} {self.url}{path}: no answer after "
                f"{self.retry.attempts} attempts: {exc!r}"
            ) from exc
        except httpx.TransportError as exc:
            raise VMUnreachable(f"{method} {self.url}{path} failed: {exc!r}") from exc
        if not ok(response):
            raise DesktopRequestError(response.status_code, _message(response), path=path)
        return response

    def _get_bytes(self, path: str, params: dict[str, Any]) -> bytes:
        """GET ``path`` and return its body, as :meth:`_request` would (the same retries and
        errors), through ``http.client``: a screenshot's few hundred kB cost about 2 ms less
        than through httpx (its pure-Python HTTP parser takes the body chunk by chunk). The
        server closes every connection after its answer, so nothing is kept between calls.
        Other than plain ``http://`` URLs go through httpx."""
        split = urlsplit(self.url)
        if split.scheme != "http" or not split.hostname:
            answer = self._request("GET", path, params=params)
            self._note_grabs(answer.headers.get("X-Grabs"), answer.headers.get("X-Keymap"))
            return answer.content
        target = f"{split.path}{path}" + (f"?{urlencode(params)}" if params else "")
        headers = {**self._headers, "Host": split.netloc}

        def send() -> tuple[int, str, bytes]:
            conn = http.client.HTTPConnection(
                split.hostname or "", split.port or 80, timeout=self.timeout
            )
            try:
                conn.request("GET", target, headers=headers)
                response = conn.getresponse()
                self._note_grabs(response.getheader("X-Grabs"), response.getheader("X-Keymap"))
                return response.status, response.reason, response.read()
            finally:
                conn.close()

        failures = (OSError, http.client.HTTPException)
        try:
            status, reason, content = self.retry.call(
                send, retry_on=failures, what=f"GET {path}", log_level=logging.DEBUG
            )
        except failures as exc:
            raise VMUnreachable(
                f"GET {self.url}{path}: no answer after {self.retry.attempts} attempts: {exc!r}"
            ) from exc
        if status >= 400:
            raise DesktopRequestError(status, _body_message(content, reason), path=path)
        return content

    def proves_identity(self) -> bool | None:
        """Whether what answers at this URL is the desktop's own server: it proves the
        session's secret on a fresh nonce (:mod:`computer_env.desktop.identity`; the question
        carries no token). None without a token (an upstream OSWorld VM: nothing to prove);
        :class:`VMUnreachable` when nothing answers."""
        if not self._token:
            return None
        nonce = identity.new_nonce()

        def ask() -> httpx.Response:
            return httpx.post(
                f"{self.url}{identity.PATH}", json={"nonce": nonce}, timeout=self.timeout
            )

        failures = (httpx.ConnectError, httpx.ConnectTimeout)
        try:
            answer = self.retry.call(
                ask, retry_on=failures, what=f"POST {identity.PATH}", log_level=logging.DEBUG
            )
        except httpx.TransportError as exc:
            raise VMUnreachable(f"POST {self.url}{identity.PATH}: {exc!r}") from exc
        try:
            given = answer.json().get("proof") if answer.status_code == 200 else None
        except (ValueError, AttributeError):
            given = None
        return identity.proven(self._token, nonce, given)

    def _note_grabs(self, grabs: str | None, keymaps: str | None) -> None:
        self.x_grabs_seen = int(grabs) if grabs and grabs.isdigit() else None
        self.keymap_seen = keymaps or None

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        return self._request(method, path, **kwargs).json()
