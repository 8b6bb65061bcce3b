"""The judge's chat layout and verdict format.

Messages: ``system`` (:data:`JUDGE_SYSTEM_PROMPT`, which asks for one JSON object
``{"verdict": "success"|"failure", "reason": "..."}``), then one ``user`` message: the task in a
``<task>`` block, the agent's actions as a JSON list in an ``<actions>`` block (each tool call,
with a code action's output), how the episode ended, and the final screenshots (oldest first,
the last one taken when the case was scored).
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

from openai.types.chat import ChatCompletionContentPartParam, ChatCompletionMessageParam

JUDGE_SYSTEM_PROMPT = """\
You are a judge of computer-use episodes (a world-state model). You get a task given to an
agent, the list of actions the agent took, and the final screenshots of the computer. Decide
from the screenshots and the actions whether the task was accomplished: the final state of the
computer must satisfy the task. An agent that declared a feasible task infeasible failed.
Reply with exactly one JSON object and nothing else:
{"verdict": "success" or "failure", "reason": "<one or two sentences>"}"""

ACTIONS_OPEN, ACTIONS_CLOSE = "<actions>", "</actions>"


class JudgeParseError(ValueError):
    """The judge's reply holds no verdict."""


def _data_url(image: bytes, mime: str) -> str:
    return f"data:{mime};base64,{base64.b64encode(image).decode('ascii')}"


def build_judge_messages(
    instruction: str,
    actions: list[dict[str, Any]],
    end: str | None,
    screenshots: list[tuple[bytes, str]],
) -> list[ChatCompletionMessageParam]:
    """The chat messages of one judge request (``screenshots``: (bytes, mime), oldest first)."""
    text = (
        f"<task>\n{instruction}\n</task>\n{ACTIONS_OPEN}\n"
        f"{json.dumps(actions, ensure_ascii=False)}\n{ACTIONS_CLOSE}\n"
        f"The episode ended by: {end or 'unknown'}. The final screenshots follow "
        f"({len(screenshots)}, oldest first)."
    )
    parts: list[ChatCompletionContentPartParam] = [{"type": "text", "text": text}]
    for data, mime in screenshots:
        parts.append({"type": "image_url", "image_url": {"url": _data_url(data, mime)}})
    return [{"role": "system", "content": JUDGE_SYSTEM_PROMPT}, {"role": "user", "content": parts}]


_VERDICTS = {
    "success": 1,
    "succeeded": 1,
    "done": 1,
    "pass": 1,
    "passed": 1,
    "true": 1,
    "yes": 1,
    "1": 1,
    "failure": 0,
    "failed": 0,
    "fail": 0,
    "not done": 0,
    "false": 0,
    "no": 0,
    "0": 0,
}


def parse_verdict(content: str | None) -> tuple[int, str]:
    """(1 done / 0 not done, reason) from the judge's reply (a JSON object, possibly inside a
    code fence or after reasoning text); :class:`JudgeParseError` when there is none."""
    if not content or not content.strip():
        raise JudgeParseError("empty reply")
    candidates = [content.strip()] + re.findall(r"\{[^{}]*\}", content)
    for text in candidates:
        text = re.sub(r"^```(?:json)?|```$", "", text.strip()).strip()
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict) and "verdict" in data:
            key = str(data["verdict"]).strip().lower()
            if key in _VERDICTS:
                return _VERDICTS[key], str(data.get("reason") or "")[:2000]
            raise JudgeParseError(f"unknown verdict {data['verdict']!r}")
    raise JudgeParseError(f"no JSON object with a verdict in the reply: {content[:120]!r}")
