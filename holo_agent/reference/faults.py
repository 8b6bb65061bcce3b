"""Fault injection for the reference endpoint.

A spec is a comma-separated list of ``name=value``:

- ``status=CODE:N``: answer the next N chat requests with HTTP CODE (e.g. ``status=503:2``).
- ``retry_after=S``: send ``Retry-After: S`` with those status answers.
- ``drop=N``: close the connection without answering, N times.
- ``bad_body=N``: answer HTTP 200 with a JSON body that is not a chat completion, N times.
- ``delay=S`` or ``delay=S:N``: wait S seconds before answering (every request, or the next N).
- ``context=N``: a model context of N tokens: a request whose prompt is estimated past it (the
  endpoint's own ``usage`` count, :mod:`holo_agent.reference.usage`) is refused as vLLM refuses
  one, HTTP 400 "Input length (L) exceeds model's maximum context length (N)." (a rule of the
  real server the stand-in now has; the estimate is not vLLM's exact count).
- content faults, N times each: ``malformed`` (invalid JSON), ``schema`` (valid JSON, not a
  Step), ``list_coords`` (``"x": [a, b]``), ``range_coords`` (``"x": "a-b"``), ``out_of_range``
  (``"x": 1500``), ``empty`` (empty content).

Counts are numbers of chat requests affected; a request consumes at most one content fault.
:func:`bad_content` writes the model output a content fault sends.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

CONTENT_FAULTS: tuple[str, ...] = (
    "malformed",
    "schema",
    "list_coords",
    "range_coords",
    "out_of_range",
    "empty",
)


@dataclass
class FaultDecision:
    """What to do with one request."""

    status: int | None = None
    retry_after: float | None = None
    drop: bool = False
    bad_body: bool = False
    delay: float = 0.0
    content: str | None = None


@dataclass
class FaultPlan:
    """Remaining faults; :meth:`next` consumes them one request at a time (thread-safe)."""

    status_code: int = 503
    status_left: int = 0
    retry_after: float | None = None
    drop_left: int = 0
    bad_body_left: int = 0
    delay: float = 0.0
    delay_left: int | None = None
    content_left: dict[str, int] = field(default_factory=dict)
    context_tokens: int | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def parse(cls, spec: str | None) -> FaultPlan:
        """Parse a spec string; raises ValueError naming the bad item."""
        plan = cls()
        for item in (spec or "").split(","):
            item = item.strip()
            if not item:
                continue
            name, sep, value = item.partition("=")
            name = name.strip()
            try:
                if not sep:
                    raise ValueError("missing '='")
                if name == "status":
                    code, _, n = value.partition(":")
                    plan.status_code, plan.status_left = int(code), int(n or 1)
                elif name == "retry_after":
                    plan.retry_after = float(value)
                elif name == "drop":
                    plan.drop_left = int(value)
                elif name == "bad_body":
                    plan.bad_body_left = int(value)
                elif name == "delay":
                    secs, _, n = value.partition(":")
                    plan.delay, plan.delay_left = float(secs), (int(n) if n else None)
                elif name == "context":
                    plan.context_tokens = int(value)
                elif name in CONTENT_FAULTS:
                    plan.content_left[name] = int(value)
                else:
                    raise ValueError("unknown fault")
            except ValueError as exc:
                raise ValueError(f"bad fault spec item {item!r}: {exc}") from None
        return plan

    def next(self) -> FaultDecision:
        """The faults applied to the next request (consumes them)."""
        d = FaultDecision()
        with self._lock:
            if self.delay > 0 and (self.delay_left is None or self.delay_left > 0):
                d.delay = self.delay
                if self.delay_left is not None:
                    self.delay_left -= 1
            if self.drop_left > 0:
                self.drop_left -= 1
                d.drop = True
                return d
            if self.status_left > 0:
                self.status_left -= 1
                d.status, d.retry_after = self.status_code, self.retry_after
                return d
            if self.bad_body_left > 0:
                self.bad_body_left -= 1
                d.bad_body = True
                return d
            for name in CONTENT_FAULTS:
                if self.content_left.get(name, 0) > 0:
                    self.content_left[name] -= 1
                    d.content = name
                    break
        return d


def bad_content(kind: str, step: dict[str, Any]) -> str:
    """Model output broken in the way fault ``kind`` describes."""
    call: dict[str, Any] = {"tool_name": "click", "element": "the button", "x": 500, "y": 500}
    click = {"note": None, "thought": "click it", "tool_call": call}
    if kind == "malformed":
        return json.dumps(step)[:-7]
    if kind == "schema":
        return json.dumps({"thought": "no tool", "tool_call": {"tool_name": "teleport"}})
    if kind == "list_coords":
        call["x"] = [480, 520]
    elif kind == "range_coords":
        call["x"] = "480-520"
    elif kind == "out_of_range":
        call["x"] = 1500
    elif kind == "empty":
        return ""
    return json.dumps(click)
