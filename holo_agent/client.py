"""A small OpenAI-compatible chat-completions client with bounded retries.

Retried (exponential backoff ``backoff_base * 2**attempt`` capped at ``backoff_max``; a 429's or
503's ``Retry-After`` header, in seconds, is honoured when longer): connection errors, timeouts,
dropped connections, HTTP 5xx, HTTP 429 and a 200 whose body is not a chat completion. After
``max_retries`` retries the call raises :class:`computer_env.errors.ModelEndpointError`.
HTTP 400/404/422 raise :class:`HarnessRequestError`; 401/403 raise ``ConfigurationError``.
The API key is sent as a Bearer header only and never appears in messages or logs; credentials in
the URL (``http://user:secret@host/v1``) are sent as basic auth and removed from the shown URL.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import httpx

from computer_env.errors import ConfigurationError, ModelEndpointError
from holo_agent.errors import HarnessRequestError

log = logging.getLogger(__name__)


@dataclass
class ChatResponse:
    """The parts of a chat completion the loop uses."""

    content: str | None
    reasoning: str | None
    usage: dict[str, Any]
    finish_reason: str | None
    latency_s: float
    attempts: int


def _retry_after(resp: httpx.Response) -> float | None:
    value = resp.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """``http://user:secret@host/v1`` -> (``http://host/v1``, (user, secret)): the URL that may
    be shown and recorded, and the basic-auth pair that only goes into requests."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port else "")
    clean = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    return clean, (unquote(parts.username or ""), unquote(parts.password or ""))


class ChatClient:
    """POSTs to ``{base_url}/chat/completions`` with retries; owns one ``httpx.Client``."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout: float = 300,
        max_retries: int = 4,
        backoff_base: float = 1.0,
        backoff_max: float = 30.0,
    ) -> None:
        self.base_url, auth = split_credentials(base_url.rstrip("/"))  # never shown with them
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(timeout=timeout, headers=headers, auth=auth)

    def __repr__(self) -> str:
        return f"ChatClient({self.base_url!r})"

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._http.close()

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        delay = min(self.backoff_max, self.backoff_base * (2**attempt))
        return max(delay, retry_after or 0.0)

    def complete(self, body: dict[str, Any]) -> ChatResponse:
        """Send one chat-completions request; retry endpoint trouble, then raise."""
        url = f"{self.base_url}/chat/completions"
        last = "no attempt made"
        for attempt in range(self.max_retries + 1):
            retry_after: float | None = None
            t0 = time.monotonic()
            try:
                resp = self._http.post(url, json=body)
            except httpx.TimeoutException as exc:
                last = f"timeout ({type(exc).__name__})"
            except httpx.TransportError as exc:
                last = f"connection failed ({type(exc).__name__}: {exc})"
            else:
                latency = time.monotonic() - t0
                if resp.status_code == 200:
                    parsed = self._parse(resp, latency, attempt + 1)
                    if parsed is not None:
                        return parsed
                    last = "HTTP 200 with a body that is not a chat completion"
                elif resp.status_code in (400, 404, 422):
                    raise HarnessRequestError(resp.status_code, resp.text[:2000])
                elif resp.status_code in (401, 403):
                    raise ConfigurationError(
                        f"model endpoint {self.base_url} refused the credentials "
                        f"(HTTP {resp.status_code}): {resp.text[:500]}"
                    )
                elif resp.status_code == 429 or resp.status_code >= 500:
                    retry_after = _retry_after(resp)
                    last = f"HTTP {resp.status_code}: {resp.text[:300]}"
                else:
                    last = f"unexpected HTTP {resp.status_code}: {resp.text[:300]}"
            if attempt < self.max_retries:
                delay = self._backoff(attempt, retry_after)
                log.warning(
                    "model endpoint %s: %s; retry %d/%d in %.2fs",
                    self.base_url, last, attempt + 1, self.max_retries, delay,
                )
                time.sleep(delay)
        raise ModelEndpointError(
            f"model endpoint {self.base_url} failed after {self.max_retries + 1} attempts: {last}"
        )

    @staticmethod
    def _parse(resp: httpx.Response, latency: float, attempts: int) -> ChatResponse | None:
        try:
            data = resp.json()
            choice = data["choices"][0]
            msg = choice["message"]
        except (ValueError, KeyError, IndexError, TypeError):
            return None
        content = msg.get("content")
        if isinstance(content, list):  # some servers return content parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        reasoning = msg.get("reasoning_content") or msg.get("reasoning")
        return ChatResponse(
            content=content,
            reasoning=reasoning,
            usage=data.get("usage") or {},
            finish_reason=choice.get("finish_reason"),
            latency_s=latency,
            attempts=attempts,
        )
