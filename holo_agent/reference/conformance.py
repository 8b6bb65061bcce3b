"""Checks a chat-completions request against Holo's structured-output agent-loop conventions.

:func:`check_request` returns the first broken rule as a :class:`Violation` (``rule`` id plus a
message), or None. Rules (ids):

- ``no-tools``: no ``tools``/``tool_choice``/``functions`` field (structured mode only).
- ``structured-outputs``: ``structured_outputs.json`` holds the Step schema (an object).
- ``system-prompt``: the first message is ``system`` and holds an ``<output_format>`` block whose
  text is JSON.
- ``schema-identical``: the schema in the prompt equals the ``structured_outputs`` schema.
- ``thinking-on``: ``chat_template_kwargs.enable_thinking`` is true.
- ``roles``: only system (first), user and assistant roles; no ``tool`` messages.
- ``task-first``: the first user message starts with a ``<task>...</task>`` text part.
- ``observation-wrapper``: each image (and each ``[screenshot evicted]``) sits alone between
  ``<observation>`` and ``</observation>`` parts; images are ``data:image/...`` URLs.
- ``image-budget``: at most N images, and they are the last min(N, observations) observations
  (older ones evicted, newer ones kept).
- ``assistant-step-json``: assistant content is one valid Step JSON string, with no reasoning
  (no ``reasoning_content``/``reasoning`` field, no ``<think>``).
- ``tool-output-user``: after every non-answer assistant turn comes a user
  ``<tool_output tool="NAME">`` whose NAME is that turn's tool; a re-ask is a user
  ``<tool_output tool="invalid_output">``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from holo_agent.conversation import EVICTED, OBS_CLOSE, OBS_OPEN, REASK_TOOL, TASK_CLOSE, TASK_OPEN
from holo_agent.prompt import extract_output_format
from holo_agent.tools import StepParseError, parse_step, step_json_schema

_TOOL_OUTPUT = re.compile(r'^<tool_output tool="([A-Za-z0-9_]+)">\n(.*)\n</tool_output>$', re.S)
IMAGE_TYPES = ("image_url", "image", "input_image")


@dataclass(frozen=True)
class Violation:
    """One broken convention."""

    rule: str
    message: str

    def __str__(self) -> str:
        return f"conformance rule '{self.rule}' broken: {self.message}"


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _parts(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [p for p in content if isinstance(p, dict)] if isinstance(content, list) else []


def extract_instruction(messages: list[dict[str, Any]]) -> str | None:
    """The task instruction from the first user message's ``<task>`` block."""
    for msg in messages:
        if msg.get("role") == "user":
            text = _text_of(msg.get("content"))
            start, end = text.find(TASK_OPEN), text.find(TASK_CLOSE)
            if start < 0 or end < start:
                return None
            return text[start + len(TASK_OPEN) : end].strip("\n")
    return None


def _observations(msg_index: int, msg: dict[str, Any]) -> tuple[list[bool], Violation | None]:
    """Scan one user message; returns [has_image per observation] or a wrapper violation."""
    where = f"message {msg_index}"
    parts = _parts(msg.get("content"))
    out: list[bool] = []
    i = 0
    while i < len(parts):
        p = parts[i]
        is_img = p.get("type") in IMAGE_TYPES
        text = p.get("text", "") if p.get("type") == "text" else ""
        if text == OBS_OPEN:
            if i + 2 >= len(parts) or parts[i + 2].get("text") != OBS_CLOSE:
                return out, Violation(
                    "observation-wrapper",
                    f"{where}: <observation> not closed "
                    "after exactly one image or placeholder part",
                )
            mid = parts[i + 1]
            if mid.get("type") in IMAGE_TYPES:
                url = ""
                if mid.get("type") == "image_url":
                    url = (mid.get("image_url") or {}).get("url", "")
                if not url.startswith("data:image/"):
                    return out, Violation(
                        "observation-wrapper", f"{where}: screenshot is not a data:image/ URL"
                    )
                out.append(True)
            elif mid.get("type") == "text" and mid.get("text") == EVICTED:
                out.append(False)
            else:
                return out, Violation(
                    "observation-wrapper",
                    f"{where}: observation holds neither an image nor the text {EVICTED!r}",
                )
            i += 3
            continue
        if is_img:
            return out, Violation("observation-wrapper", f"{where}: image outside <observation>")
        if EVICTED in text:
            return out, Violation(
                "observation-wrapper", f"{where}: {EVICTED!r} outside its <observation> wrapper"
            )
        i += 1
    return out, None


def _check_messages(
    messages: list[dict[str, Any]], budget: int, code_actions: bool = False
) -> Violation | None:
    observations: list[bool] = []
    first_user = True
    pending_tool: str | None = None
    for idx, msg in enumerate(messages[1:], start=1):
        role = msg.get("role")
        content = msg.get("content")
        if role == "tool":
            return Violation(
                "roles",
                f"message {idx}: a 'tool' message; tool outputs must be "
                "user <tool_output> messages in structured mode",
            )
        if role not in ("user", "assistant"):
            return Violation("roles", f"message {idx}: unexpected role {role!r}")
        if role == "assistant":
            if pending_tool is not None:
                return Violation(
                    "tool-output-user",
                    f"message {idx}: assistant turn follows an "
                    f"assistant turn without a <tool_output> for {pending_tool!r}",
                )
            if "reasoning_content" in msg or "reasoning" in msg:
                return Violation(
                    "assistant-step-json", f"message {idx}: reasoning fed back in an assistant turn"
                )
            if not isinstance(content, str):
                return Violation(
                    "assistant-step-json",
                    f"message {idx}: assistant content must be the Step JSON string",
                )
            if "<think>" in content:
                return Violation("assistant-step-json", f"message {idx}: <think> in assistant turn")
            try:
                step = parse_step(content, code_actions)
            except StepParseError as exc:
                return Violation(
                    "assistant-step-json", f"message {idx}: not a parsed Step JSON ({exc.reason})"
                )
            name = step.tool_call.tool_name
            pending_tool = None if name == "answer" else name
            continue
        text = _text_of(content)
        if first_user:
            first_user = False
            parts = _parts(content)
            head = parts[0].get("text", "") if parts else ""
            if not (head.startswith(TASK_OPEN) and TASK_CLOSE in head):
                return Violation(
                    "task-first",
                    f"message {idx}: the first user message must "
                    "start with a <task>...</task> text part",
                )
        if text.startswith("<tool_output"):
            m = _TOOL_OUTPUT.match(text)
            if not m:
                return Violation("tool-output-user", f"message {idx}: malformed <tool_output>")
            tool = m.group(1)
            if tool != REASK_TOOL and tool != pending_tool:
                return Violation(
                    "tool-output-user",
                    f"message {idx}: <tool_output tool={tool!r}> "
                    f"does not answer the last tool call ({pending_tool!r})",
                )
            pending_tool = None
            continue
        if pending_tool is not None:
            return Violation(
                "tool-output-user",
                f"message {idx}: expected a user <tool_output "
                f'tool="{pending_tool}"> after the assistant turn',
            )
        obs, bad = _observations(idx, msg)
        if bad:
            return bad
        observations.extend(obs)
    n_img = sum(observations)
    if n_img > budget:
        # worded as vLLM words its --limit-mm-per-prompt refusal (the client maps it)
        return Violation(
            "image-budget",
            f"At most {budget} image(s) may be provided in one prompt ({n_img} images sent)",
        )
    want = min(budget, len(observations))
    expected = [False] * (len(observations) - want) + [True] * want
    if observations != expected:
        kept = [i for i, has in enumerate(observations) if has]
        return Violation(
            "image-budget",
            f"observations with images are {kept}; expected the "
            f"last {want} of {len(observations)} (older ones evicted)",
        )
    return None


def check_request(body: dict[str, Any], image_budget: int = 3) -> Violation | None:
    """Return the first convention the request breaks, or None when it conforms."""
    for key in ("tools", "tool_choice", "functions"):
        if key in body:
            return Violation("no-tools", f"field {key!r} present; structured mode sends no tools")
    so = body.get("structured_outputs")
    schema = so.get("json") if isinstance(so, dict) else None
    if not isinstance(schema, dict):
        return Violation(
            "structured-outputs", "missing structured_outputs.json (the Step JSON schema)"
        )
    kwargs = body.get("chat_template_kwargs")
    if not (isinstance(kwargs, dict) and kwargs.get("enable_thinking") is True):
        return Violation("thinking-on", "chat_template_kwargs.enable_thinking must be true")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return Violation("roles", "no messages")
    if messages[0].get("role") != "system":
        return Violation("system-prompt", "the first message must be the system prompt")
    block = extract_output_format(_text_of(messages[0].get("content")))
    if block is None:
        return Violation("system-prompt", "system prompt has no <output_format> block")
    try:
        prompt_schema = json.loads(block)
    except json.JSONDecodeError as exc:
        return Violation("system-prompt", f"<output_format> is not JSON ({exc.msg})")
    if prompt_schema != schema:
        return Violation(
            "schema-identical", "the schema in <output_format> differs from structured_outputs.json"
        )
    if any(m.get("role") == "system" for m in messages[1:]):
        return Violation("roles", "more than one system message")
    code_actions = schema == step_json_schema(code_actions=True)  # the hybrid protocol's schema
    return _check_messages(messages, image_budget, code_actions)
