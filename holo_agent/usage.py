"""Token counts as a server reports them, checked before they are recorded or summed.

A chat completion's ``usage`` is the server's word, not validated by openai: a count may be
negative, a float, a string or absurd (a summary once showed -5 prompt and 1e30 completion
tokens). :func:`check_usage` keeps a count only when it is a whole number in
``[0, MAX_TOKENS]`` (``[0, MAX_COMPLETION_TOKENS]`` for completion and reasoning tokens); any
other reported count is left out (``None``: not in any sum) and named in ``flag``, which the step
record and its replay show.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

MAX_TOKENS = 10**8
"""The most prompt tokens one request may report (no model reads a hundred million)."""
MAX_COMPLETION_TOKENS = 10**6
"""The most completion (or reasoning) tokens one answer may report (models stop at a few
hundred thousand)."""


@dataclass(frozen=True)
class CheckedUsage:
    """One request's token counts, each None when not reported or not believable (``flag``
    names those reported and left out)."""

    prompt: int | None = None
    completion: int | None = None
    reasoning: int | None = None
    flag: str | None = None


def _count(value: Any, cap: int) -> tuple[int | None, str | None]:
    """(the count, None) when ``value`` is a believable count; (None, why) when it is not;
    (None, None) when not reported."""
    if value is None:
        return None, None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None, f"not a number ({type(value).__name__})"
    if isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            return None, "not a whole number"
        value = int(value)
    if value < 0:
        return None, "negative"
    if value > cap:
        return None, f"absurd (more than {cap:.0e})"
    return value, None


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def check_usage(usage: Any) -> CheckedUsage:
    """The checked counts of a completion's ``usage`` (a dict as the server sent it; anything
    else counts as no usage reported, flagged)."""
    if usage is None or (isinstance(usage, dict) and not usage):
        return CheckedUsage()
    if not isinstance(usage, dict):
        return CheckedUsage(flag=f"usage is not an object ({type(usage).__name__}); left out")
    details = usage.get("completion_tokens_details")
    reasoning = details.get("reasoning_tokens") if isinstance(details, dict) else None
    if reasoning is None:
        reasoning = usage.get("reasoning_tokens")
    counts: dict[str, int | None] = {}
    problems = []
    for name, value, cap in (
        ("prompt", usage.get("prompt_tokens"), MAX_TOKENS),
        ("completion", usage.get("completion_tokens"), MAX_COMPLETION_TOKENS),
        ("reasoning", reasoning, MAX_COMPLETION_TOKENS),
    ):
        counts[name], why = _count(value, cap)
        if why is not None:
            problems.append(f"{name}_tokens {_shown(value)} {why}")
    flag = ("usage " + "; ".join(problems) + ": left out of the sums") if problems else None
    return CheckedUsage(
        prompt=counts["prompt"],
        completion=counts["completion"],
        reasoning=counts["reasoning"],
        flag=flag,
    )


__all__ = ["MAX_COMPLETION_TOKENS", "MAX_TOKENS", "CheckedUsage", "check_usage"]
