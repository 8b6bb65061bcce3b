"""Chat completions through ``openai.OpenAI``: its retries, timeouts and error types.

A request (each attempt) has a total deadline of ``timeout`` seconds from sending it to the
last byte of the answer (:mod:`holo_agent.deadline`), not ``timeout`` per read: past it, it is a
timeout like any other. The answer is read as JSON by Python's own rules (a lone surrogate in the
content is the model's text, judged by :func:`holo_agent.tools.parse_step`), and whatever a
chat completion holds, the loop gets text or None for its content and reasoning, and a dict for
its usage (checked by :mod:`holo_agent.usage`).

Retried by openai, up to ``max_retries`` times: connection errors, timeouts, dropped connections,
HTTP 408/409/429/5xx, and a 200 whose body is not a chat completion (a response hook checks the
body and raises :class:`NotAChatCompletion`, an ``httpx2.DecodingError``; openai retries such
request errors within the same budget). Delays: openai has no public backoff setting, so
:class:`_BackoffOpenAI` overrides ``_calculate_retry_timeout``, the one method openai's retry loop
asks for a delay (same signature since openai 1.0; ``test_backoff_options_set_the_delays``
fails if that changes): ``min(backoff_max, backoff_base * 2**retry)``, or the server's
``Retry-After``/``retry-after-ms`` when longer (openai does not retry past a Retry-After of two
minutes). After the retries the call raises :class:`computer_env.errors.ModelEndpointError`.
HTTP 400/404/422 raise :class:`HarnessRequestError`, except two 400s whose text vLLM words
for a cause of its own: a conversation past the model's context ("This model's maximum context
length is N tokens", or with images "Input length (L) exceeds model's maximum context length
(N)") raises :class:`holo_agent.errors.ContextOverflow` (the model's failure),
and more images than the server takes ("At most N image(s) may be provided in one prompt")
raises ``ConfigurationError`` naming ``--image-budget`` and the server's limit. 401/403 raise
``ConfigurationError``; any other status is endpoint trouble, not retried.

The API key is sent as a Bearer header only (none at all without a key: never
``OPENAI_API_KEY`` from the environment, nor ``OPENAI_ORG_ID``/``OPENAI_PROJECT_ID``) and never
appears in messages or logs; credentials in the URL (``http://user:secret@host/v1``) are sent as
basic auth and removed from the shown URL. Errors are raised ``from None``: an openai traceback
(its frames hold the request headers) is never attached.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import httpx2
import openai
from openai.types.chat import ChatCompletion
from pydantic import BaseModel, Field, ValidationError

from computer_env.errors import ConfigurationError, ModelEndpointError
from holo_agent.deadline import RequestDeadline
from holo_agent.errors import ContextOverflow, HarnessRequestError

log = logging.getLogger(__name__)

# vLLM's wording of its two 400s that are not a malformed request (vllm.renderers.params,
# vllm.multimodal.processing.context); matched against the error body's text
# (two wordings: the renderer's for a text prompt, the API server's once images are counted)
CONTEXT_OVERFLOW = re.compile(
    r"maximum context length is (\d+) tokens"
    r"|exceeds model's maximum context length \((\d+)\)",
    re.IGNORECASE,
)
IMAGE_LIMIT = re.compile(r"At most (\d+) image\(s\) may be provided", re.IGNORECASE)

NO_KEY = "no-key"  # openai needs some key; without one the Authorization header is omitted
# removed from every request: openai would add them from OPENAI_ORG_ID/OPENAI_PROJECT_ID
HIDDEN_HEADERS: dict[str, openai.Omit] = {
    "OpenAI-Organization": openai.omit,
    "OpenAI-Project": openai.omit,
}


@dataclass
class ChatResponse:
    """The loop's view of one chat completion."""

    content: str | None
    reasoning: str | None
    usage: Any  # as the server sent it: a dict, or anything (holo_agent.usage checks it)
    finish_reason: str | None
    latency_s: float  # the answered attempt's request/response time
    attempts: int  # 1 + the retries openai took


class _Message(BaseModel):
    content: str | list[dict[str, Any]] | None = None


class _Choice(BaseModel):
    message: _Message


class CompletionShape(BaseModel):
    """What a 200 must hold to be a chat completion for the loop (one choice with a message)."""

    choices: list[_Choice] = Field(min_length=1)


class NotAChatCompletion(httpx2.DecodingError):
    """HTTP 200 whose body is not a chat completion (a request error: openai retries it)."""


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


def _retry_after(headers: Any) -> float:
    """Seconds a response asks to wait (``retry-after-ms`` or numeric ``retry-after``), or 0."""
    if headers is None:
        return 0.0
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        try:
            return max(0.0, float(headers.get(name)) / scale)
        except (TypeError, ValueError):
            continue
    return 0.0


class _BackoffOpenAI(openai.OpenAI):
    """``openai.OpenAI`` with the harness' backoff (see the module docstring)."""

    backoff_base: float = 1.0
    backoff_max: float = 30.0
    shown_url: str = ""

    def _calculate_retry_timeout(
        self, remaining_retries: int, options: Any, response_headers: Any = None
    ) -> float:
        retry = max(0, self.max_retries - remaining_retries)  # 0 before the first retry
        delay = max(
            min(self.backoff_max, self.backoff_base * 2.0 ** min(retry, 60)),
            _retry_after(response_headers),
        )
        log.warning(
            "model endpoint %s: %s; retry %d/%d in %.2fs",
            self.shown_url,
            "error status" if response_headers is not None else "no usable answer",
            retry + 1,
            self.max_retries,
            delay,
        )
        return delay


class ChatClient:
    """POSTs to ``{base_url}/chat/completions`` through one ``openai.OpenAI``."""

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
        self._sent = 0  # requests sent by the current call (its attempts)
        self._http = openai.DefaultHttpx2Client(
            auth=auth, event_hooks={"request": [self._count], "response": [_require_completion]}
        )
        self.deadline = RequestDeadline(timeout)  # the whole request, not each read
        self.deadline.install(self._http)
        self._no_key = not api_key
        self._openai = _BackoffOpenAI(
            base_url=self.base_url,
            api_key=api_key or NO_KEY,
            timeout=timeout,
            max_retries=max_retries,
            http_client=self._http,
        )
        self._openai.backoff_base, self._openai.backoff_max = backoff_base, backoff_max
        self._openai.shown_url = self.base_url

    def __repr__(self) -> str:
        return f"ChatClient({self.base_url!r})"

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._openai.close()

    def _count(self, request: httpx2.Request) -> None:
        self._sent += 1

    def complete(self, body: dict[str, Any]) -> ChatResponse:
        """Send one chat-completions request (``body`` as sent); openai retries endpoint
        trouble, then this raises (see the module docstring)."""
        self._sent = 0
        extra = {k: v for k, v in body.items() if k not in ("model", "messages")}
        try:
            raw = self._openai.chat.completions.with_raw_response.create(
                model=body["model"],
                messages=body["messages"],
                extra_body=extra,
                extra_headers=(
                    {**HIDDEN_HEADERS, "Authorization": openai.omit}
                    if self._no_key
                    else HIDDEN_HEADERS
                ),
            )
        except openai.APIStatusError as exc:
            raise self._status_error(exc) from None
        except openai.APITimeoutError as exc:
            raise self._failed(
                f"timeout ({_cause(exc)}: no complete answer within the "
                f"request's deadline of {self.deadline.seconds:g} s)"
            ) from None
        except openai.APIConnectionError as exc:
            cause = exc.__cause__
            what = (
                str(cause)
                if isinstance(cause, NotAChatCompletion)
                else f"connection failed ({_cause(exc)}: {cause})"
            )
            raise self._failed(what) from None
        return _view(raw.parse(), raw.elapsed.total_seconds(), raw.retries_taken + 1)

    def _failed(self, what: str) -> ModelEndpointError:
        return ModelEndpointError(
            f"model endpoint {self.base_url} failed after {self._sent} attempts: {what}"
        )

    def _status_error(self, exc: openai.APIStatusError) -> Exception:
        status, text = exc.status_code, exc.response.text
        if status == 400 and (m := CONTEXT_OVERFLOW.search(text)):
            return ContextOverflow(status, text[:2000], int(m.group(1) or m.group(2)))
        if status == 400 and (m := IMAGE_LIMIT.search(text)):
            return ConfigurationError(
                f"model endpoint {self.base_url} takes at most {m.group(1)} image(s) per prompt "
                "(vLLM's --limit-mm-per-prompt) but the agent sends more: lower --image-budget "
                f"or raise the server's limit ({text[:300]})"
            )
        if status in (400, 404, 422):
            return HarnessRequestError(status, text[:2000])
        if status in (401, 403):
            return ConfigurationError(
                f"model endpoint {self.base_url} refused the credentials "
                f"(HTTP {status}): {text[:500]}"
            )
        if status in (408, 409, 429) or status >= 500:
            return self._failed(f"HTTP {status}: {text[:300]}")
        return ModelEndpointError(
            f"model endpoint {self.base_url} answered HTTP {status} (not retried): {text[:300]}"
        )


def _cause(exc: BaseException) -> str:
    return type(exc.__cause__).__name__ if exc.__cause__ is not None else type(exc).__name__


def _require_completion(response: httpx2.Response) -> None:
    """Response hook: a 200 from ``/chat/completions`` must be a chat completion."""
    if response.status_code != 200 or not response.request.url.path.endswith("/chat/completions"):
        return
    try:  # Python's JSON rules, as openai reads it (a lone surrogate's escape is JSON)
        CompletionShape.model_validate(json.loads(response.read()))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        raise NotAChatCompletion(
            f"HTTP 200 with a body that is not a chat completion ({where}: {first['msg']})",
            request=response.request,
        ) from None
    except (ValueError, RecursionError) as exc:  # not JSON, not UTF-8, nested past the limit
        raise NotAChatCompletion(
            f"HTTP 200 with a body that is not JSON ({type(exc).__name__}: {str(exc)[:120]})",
            request=response.request,
        ) from None


def _text(value: Any) -> str | None:
    """Message content or reasoning as text: a string as it is, content parts joined (their
    ``text`` strings), anything else None."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # some servers return content parts
        return "".join(
            t for p in value if isinstance(p, dict) and isinstance(t := p.get("text"), str)
        )
    return None


def _usage(usage: Any) -> Any:
    """The completion's ``usage`` as the server sent it (openai does not validate it): a dict,
    None, or whatever else it was (:func:`holo_agent.usage.check_usage` judges it)."""
    if isinstance(usage, BaseModel):  # built without validation: any value, any type
        try:
            return usage.model_dump(exclude_none=True, warnings=False)
        except Exception:  # noqa: BLE001 - judged as what it is
            return usage
    return usage


def _view(completion: ChatCompletion, latency: float, attempts: int) -> ChatResponse:
    """The loop's view of a completion (its first choice); no field the server sent can make
    this fail (:class:`CompletionShape` was checked on the body)."""
    choice = completion.choices[0]
    msg = choice.message
    reasoning = _text(getattr(msg, "reasoning_content", None)) or _text(
        getattr(msg, "reasoning", None)
    )
    finish = getattr(choice, "finish_reason", None)
    return ChatResponse(
        content=_text(getattr(msg, "content", None)),
        reasoning=reasoning,
        usage=_usage(completion.usage),
        finish_reason=finish if isinstance(finish, str) else None,
        latency_s=latency,
        attempts=attempts,
    )
