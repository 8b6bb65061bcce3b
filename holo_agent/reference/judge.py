"""The reference endpoint's judge mode: a deterministic judge for the embedded default.

A request for model ``reference-judge`` (the layout of :mod:`holo_agent.judge.request`) is
answered with a verdict from the action list: ``success`` when the agent's tool calls are exactly
the task's scripted reference solution (its last one an answer, an INFEASIBLE one included) and
the episode ended by that answer, else ``failure``
naming the first difference. Like the rest of the endpoint it is a harness check (it reads the
actions, not the screenshots), never a model's judgement. Its ``usage`` counts the screenshots
by patches (:mod:`.usage`).
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from holo_agent.judge.request import ACTIONS_CLOSE, ACTIONS_OPEN
from holo_agent.reference.usage import prompt_tokens, text_tokens

JUDGE_MODEL = "reference-judge"


def _user_text(body: dict[str, Any]) -> str:
    for m in body.get("messages") or []:
        if isinstance(m, dict) and m.get("role") == "user":
            content = m.get("content")
            if isinstance(content, str):
                return content
            return "\n".join(
                p.get("text", "")
                for p in content or []
                if isinstance(p, dict) and p.get("type") == "text"
            )
    return ""


def judge_verdict(
    body: dict[str, Any], solutions: dict[str, list[dict[str, Any]]]
) -> dict[str, str]:
    """``{"verdict", "reason"}`` for a judge request (ValueError when it is not one)."""
    text = _user_text(body)
    task = re.search(r"<task>\n?(.*?)\n?</task>", text, re.S)
    acts = re.search(
        re.escape(ACTIONS_OPEN) + r"\n?(.*?)\n?" + re.escape(ACTIONS_CLOSE), text, re.S
    )
    if task is None or acts is None:
        raise ValueError("a judge request needs a <task> block and an <actions> block")
    instruction = task.group(1)
    try:
        actions = json.loads(acts.group(1))
    except json.JSONDecodeError as exc:
        raise ValueError(f"<actions> is not JSON: {exc.msg}") from None
    ended = re.search(r"The episode ended by: (\w+)", text)
    solution = solutions.get(instruction)
    if solution is None:
        return {"verdict": "failure", "reason": "no reference solution to compare with"}
    wanted = [s["tool_call"] for s in solution]
    got = [a.get("tool_call") if isinstance(a, dict) else a for a in actions]
    for i, (w, g) in enumerate(zip(wanted, got)):
        if w != g:
            return {
                "verdict": "failure",
                "reason": f"action {i} differs from the reference: {json.dumps(g)[:160]}",
            }
    if len(got) != len(wanted):
        return {
            "verdict": "failure",
            "reason": f"{len(got)} actions, the reference solution has {len(wanted)}",
        }
    if ended is None or ended.group(1) not in ("answered", "infeasible"):
        return {"verdict": "failure", "reason": "the episode did not end with an answer"}
    return {
        "verdict": "success",
        "reason": "the actions are the reference solution's, and the agent answered",
    }


def judge_completion(
    body: dict[str, Any], solutions: dict[str, list[dict[str, Any]]], number: int
) -> dict[str, Any]:
    """The chat completion answering a judge request."""
    content = json.dumps(judge_verdict(body, solutions))
    prompt_t, completion_t = prompt_tokens(body.get("messages") or []), text_tokens(content)
    return {
        "id": f"chatcmpl-judge-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": JUDGE_MODEL,
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": content},
            }
        ],
        "usage": {
            "prompt_tokens": prompt_t,
            "completion_tokens": completion_t,
            "total_tokens": prompt_t + completion_t,
        },
    }
