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
"""

from __future__ import annotations

import json
import time
from typing import Any, Callable

from holo_agent.reference.conformance import extract_instruction
from holo_agent.reference.faults import bad_content
from holo_agent.reference.usage import prompt_tokens, text_tokens
from holo_agent.tools import StepParseError, parse_step

Policy = Callable[[str, int, dict[str, Any]], "dict[str, Any] | None"]
"""``policy(instruction, step_index, request)``: a Step dict, or None for the scripted one."""

DONE_STEP: dict[str, Any] = {
    "note": None, "thought": "The scripted solution is finished.",
    "tool_call": {"tool_name": "answer", "content": "DONE"},
}


class NoSolution(LookupError):
    """The endpoint has no scripted solution (and no policy step) for the task: it answers
    HTTP 404 ``no_solution`` instead of a made-up step, so the harness can skip the case with
    that reason rather than score a DONE at step 1."""

    def __init__(self, instruction: str) -> None:
        super().__init__(f"the reference endpoint has no solution for this task "
                         f"({instruction[:80]!r}); it plays scripted solutions only")


TASK_PREFIX = "task:"


def solution_key(task_key: str) -> str:
    """The ``solutions`` key of the task whose id is ``task_key`` (instructions are the other
    keys)."""
    return TASK_PREFIX + task_key


def validate_solutions(solutions: dict[str, list[dict[str, Any]]]) -> None:
    """Raise ``ValueError`` naming the task and step of the first step that is not a Step."""
    for instruction, steps in solutions.items():
        for i, step in enumerate(steps):
            try:
                parse_step(json.dumps(step), code_actions=True)
            except StepParseError as exc:
                raise ValueError(f"solution for {instruction[:60]!r} step {i}: {exc}") from None


def next_step(body: dict[str, Any], solutions: dict[str, list[dict[str, Any]]],
              policy: Policy | None) -> tuple[dict[str, Any], int, str]:
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


def completion_payload(body: dict[str, Any], step: dict[str, Any], index: int, *,
                       model_name: str, request_id: int,
                       content_fault: str | None) -> dict[str, Any]:
    """The chat completion answering ``body`` with ``step`` (step ``index`` of the task),
    its content spoiled by ``content_fault`` when one is injected."""
    content = json.dumps(step, ensure_ascii=False)
    if content_fault:
        content = bad_content(content_fault, step)
    tool = step.get("tool_call", {}).get("tool_name")
    reasoning = (f"Reference policy, step {index} of the scripted solution for this task: "
                 f"{tool}." + (f" (injected fault: {content_fault})" if content_fault else ""))
    reasoning_t = text_tokens(reasoning)
    prompt_t = prompt_tokens(body["messages"])
    completion_t = text_tokens(content) + reasoning_t
    return {
        "id": f"chatcmpl-ref-{request_id}", "object": "chat.completion",
        "created": int(time.time()), "model": model_name,
        "choices": [{"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": content, "reasoning_content": reasoning}}],
        "usage": {"prompt_tokens": prompt_t, "completion_tokens": completion_t,
                  "total_tokens": prompt_t + completion_t,
                  "completion_tokens_details": {"reasoning_tokens": reasoning_t}},
    }
