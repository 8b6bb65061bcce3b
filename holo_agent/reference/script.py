"""What the reference endpoint answers: the scripted Holo Step for a request, as a completion.

The task is named by the request's ``user`` field (the agent sends its task's id there,
:attr:`computer_env.base.ComputerEnv.task_key`; a model server ignores it): its solution is
``solutions[solution_key(id)]``; without one (a client that sends no id, or an id without a
solution) the first user message's ``<task>`` block is the key, ``solutions[instruction]``. Keyed
by id, two tasks with the same instruction each play their own solution. The step index is the
number of assistant turns already in the conversation (a re-ask adds none, so it gets the same
step again). The step is ``policy(instruction, step_index, request)`` when a policy is given and
returns one, else the solution's step, else (past the solution's end) :data:`DONE_STEP`; a task
with neither raises :class:`NoSolution`. The completion carries ``usage`` (:mod:`.usage`) and a
``reasoning_content``.

A step may also be raw text instead of a Step (:func:`raw`): model output that is not a Step at
all, sent verbatim as the message content (a hostile policy's parser bombs). Its ``k``-th text
answers the ``k``-th ask of that step (a re-ask after malformed output asks the same step again;
:func:`reasks` counts them from the conversation).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from holo_agent.conversation import REASK_TOOL
from holo_agent.reference.conformance import extract_instruction
from holo_agent.reference.faults import bad_content
from holo_agent.reference.usage import prompt_tokens, text_tokens
from holo_agent.tools import StepParseError, parse_step

Policy = Callable[[str, int, dict[str, Any]], "dict[str, Any] | None"]
"""``policy(instruction, step_index, request)``: a Step dict, or None for the scripted one."""

DONE_STEP: dict[str, Any] = {
    "note": None,
    "thought": "The scripted solution is finished.",
    "tool_call": {"tool_name": "answer", "content": "DONE"},
}


RAW_CONTENT = "raw_content"
"""The key of a raw-text step (:func:`raw`); a Step has no such field."""
_REASK_OPEN = f'<tool_output tool="{REASK_TOOL}">'


RawText = str | Callable[[], str]
"""A raw model output: the text, or a function that makes it when it is sent (an enormous text
is not held by every process that loads the policy)."""


def raw(*texts: RawText) -> dict[str, Any]:
    """A model turn that is raw text, not a Step: ``texts[k]`` is sent verbatim as the message
    content on the ``k``-th ask of the step (0: the first, then each re-ask), the last text
    again past the end."""
    if not texts or not all(isinstance(t, str) or callable(t) for t in texts):
        raise ValueError("raw(): one or more texts (or functions that make them)")
    return {RAW_CONTENT: texts}


def is_raw(step: dict[str, Any]) -> bool:
    """True for a raw-text step (:func:`raw`)."""
    return RAW_CONTENT in step


def reasks(messages: list[dict[str, Any]]) -> int:
    """How many times the current step was re-asked: the re-ask messages after the last
    assistant turn (:func:`holo_agent.conversation.reask_text`)."""
    count = 0
    for message in reversed(messages):
        if message.get("role") == "assistant":
            break
        content = message.get("content")
        if (
            message.get("role") == "user"
            and isinstance(content, str)
            and content.startswith(_REASK_OPEN)
        ):
            count += 1
    return count


def step_content(step: dict[str, Any], messages: list[dict[str, Any]]) -> str:
    """The message content that answers with ``step``: its raw text for this ask, or the
    Step's JSON."""
    if is_raw(step):
        texts = step[RAW_CONTENT]
        text = texts[min(reasks(messages), len(texts) - 1)]
        return text() if callable(text) else str(text)
    return json.dumps(step, ensure_ascii=False)


class NoSolution(LookupError):
    """The endpoint has no scripted solution (and no policy step) for the task: it answers
    HTTP 404 ``no_solution`` instead of a made-up step, so the harness can skip the case with
    that reason rather than score a DONE at step 1."""

    def __init__(self, instruction: str) -> None:
        super().__init__(
            f"the reference endpoint has no solution for this task "
            f"({instruction[:80]!r}); it plays scripted solutions only"
        )


TASK_PREFIX = "task:"


def solution_key(task_key: str) -> str:
    """The ``solutions`` key of the task whose id is ``task_key`` (instructions are the other
    keys)."""
    return TASK_PREFIX + task_key


def validate_solutions(solutions: dict[str, list[dict[str, Any]]]) -> None:
    """Raise ``ValueError`` naming the task and step of the first step that is not a Step."""
    for instruction, steps in solutions.items():
        for i, step in enumerate(steps):
            if is_raw(step):  # model output that is not a Step, on purpose
                continue
            try:
                parse_step(json.dumps(step), code_actions=True)
            except StepParseError as exc:
                raise ValueError(f"solution for {instruction[:60]!r} step {i}: {exc}") from None


def next_step(
    body: dict[str, Any], solutions: dict[str, list[dict[str, Any]]], policy: Policy | None
) -> tuple[dict[str, Any], int, str]:
    """(Step dict, step index, instruction) for a conforming request."""
    messages = body["messages"]
    instruction = extract_instruction(messages) or ""
    index = sum(m.get("role") == "assistant" for m in messages)
    step = policy(instruction, index, body) if policy else None
    if step is None:
        task = body.get("user")
        steps = solutions.get(solution_key(task)) if isinstance(task, str) and task else None
        if steps is None:
            if instruction not in solutions:
                raise NoSolution(instruction)
            steps = solutions[instruction]
        step = steps[index] if index < len(steps) else DONE_STEP
    return step, index, instruction


def completion_payload(
    body: dict[str, Any],
    step: dict[str, Any],
    index: int,
    *,
    model_name: str,
    request_id: int,
    content_fault: str | None,
) -> dict[str, Any]:
    """The chat completion answering ``body`` with ``step`` (step ``index`` of the task),
    its content spoiled by ``content_fault`` when one is injected."""
    content = step_content(step, body["messages"])
    if content_fault and not is_raw(step):
        content = bad_content(content_fault, step)
    tool = "raw text" if is_raw(step) else step.get("tool_call", {}).get("tool_name")
    reasoning = (
        f"Reference policy, step {index} of the scripted solution for this task: "
        f"{tool}." + (f" (injected fault: {content_fault})" if content_fault else "")
    )
    reasoning_t = text_tokens(reasoning)
    prompt_t = prompt_tokens(body["messages"])
    completion_t = text_tokens(content) + reasoning_t
    return {
        "id": f"chatcmpl-ref-{request_id}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model_name,
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {
                    "role": "assistant",
                    "content": content,
                    "reasoning_content": reasoning,
                },
            }
        ],
        "usage": {
            "prompt_tokens": prompt_t,
            "completion_tokens": completion_t,
            "total_tokens": prompt_t + completion_t,
            "completion_tokens_details": {"reasoning_tokens": reasoning_t},
        },
    }
