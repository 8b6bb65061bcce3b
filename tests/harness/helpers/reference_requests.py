"""Requests to the reference endpoint built by hand: the task, a stand-in screenshot and a
conforming request body (shared by the endpoint's tests, the task-key tests and the reference
CLI's test)."""

from __future__ import annotations

from typing import Any

from holo_agent.conversation import Conversation
from holo_agent.prompt import build_system_prompt
from holo_agent.tools import Step, step_json_schema

TASK = "Open the file and report its first line."
PNG = b"\x89PNG\r\n\x1a\n" + b"0" * 32  # only the data-URL form matters to the checker


def good_body(n_obs: int = 1, budget: int = 3) -> dict[str, Any]:
    """A conforming request after ``n_obs`` observations (n_obs - 1 waits)."""
    conv = Conversation(build_system_prompt(), TASK, budget)
    wait = Step.model_validate(
        {"note": None, "thought": "wait", "tool_call": {"tool_name": "wait", "seconds": 1}}
    )
    for i in range(n_obs):
        if i:
            conv.add_step(wait)
            conv.add_tool_output("wait", "ok")
        conv.add_observation(PNG, "image/png")
    return {
        "model": "reference-policy",
        "messages": conv.messages(),
        "temperature": 0.8,
        "reasoning_effort": "medium",
        "structured_outputs": {"json": step_json_schema()},
        "chat_template_kwargs": {"enable_thinking": True},
    }
