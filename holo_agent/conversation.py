"""The chat layout of the structured-output agent loop.

Messages, in order:

- ``system``: the prompt followed by the ``<output_format>`` block.
- ``user`` (first): a text part ``<task>\\n{instruction}\\n</task>``, then the first observation
  (parts ``<observation>``, the screenshot as an ``image_url`` data URL, ``</observation>``).
  The reference endpoint identifies the task from this ``<task>`` block.
- ``assistant``: the parsed Step JSON only (``Step.model_dump_json()``); never raw text or
  reasoning.
- ``user``: ``<tool_output tool="NAME">\\n{result}\\n</tool_output>`` (a text string).
- ``user``: the next observation, and so on.

Only the last ``image_budget`` screenshots are sent; older ones keep their observation wrapper
with the text ``[screenshot evicted]`` in place of the image part.

A re-ask after malformed output adds no assistant turn: it appends a user
``<tool_output tool="invalid_output">`` naming the problem, so the number of assistant turns (the
step index) is unchanged.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from holo_agent.tools import CodeStep, Step

TASK_OPEN, TASK_CLOSE = "<task>", "</task>"
OBS_OPEN, OBS_CLOSE = "<observation>", "</observation>"
EVICTED = "[screenshot evicted]"
REASK_TOOL = "invalid_output"


def data_url(image: bytes, mime: str) -> str:
    """Encode image bytes as a ``data:`` URL."""
    return f"data:{mime};base64,{base64.b64encode(image).decode('ascii')}"


def tool_output_text(tool: str, text: str) -> str:
    """The text of a tool-output user message."""
    return f'<tool_output tool="{tool}">\n{text}\n</tool_output>'


def reask_text(reason: str) -> str:
    """The re-ask message after malformed output."""
    return tool_output_text(
        REASK_TOOL,
        f"Your last output was rejected ({reason}). Reply with exactly one JSON Step object "
        "matching the schema in <output_format>; coordinates are single integers in [0, 1000].",
    )


@dataclass
class _Obs:
    image: bytes
    mime: str


@dataclass
class _Text:
    role: str
    text: str


class Conversation:
    """Builds the message list for each request from the episode so far."""

    def __init__(self, system_prompt: str, instruction: str, image_budget: int = 3) -> None:
        if image_budget < 1:
            raise ValueError("image_budget must be >= 1")
        self.system_prompt = system_prompt
        self.instruction = instruction
        self.image_budget = image_budget
        self._turns: list[_Obs | _Text] = []

    def add_observation(self, image: bytes, mime: str) -> None:
        """Append a screenshot (the exact bytes sent)."""
        self._turns.append(_Obs(image, mime))

    def add_step(self, step: Step | CodeStep) -> None:
        """Append the assistant turn: the parsed Step JSON."""
        self._turns.append(_Text("assistant", step.model_dump_json()))

    def add_tool_output(self, tool: str, text: str) -> None:
        """Append a tool result as a user message."""
        self._turns.append(_Text("user", tool_output_text(tool, text)))

    def add_reask(self, reason: str) -> None:
        """Append a re-ask naming the problem with the last output."""
        self._turns.append(_Text("user", reask_text(reason)))

    def images_sent(self) -> int:
        """How many screenshots the next request carries (the last ``image_budget``)."""
        return min(self.image_budget, sum(isinstance(t, _Obs) for t in self._turns))

    def messages(self) -> list[dict[str, Any]]:
        """The OpenAI chat messages for the next request, with old screenshots evicted."""
        n_obs = sum(isinstance(t, _Obs) for t in self._turns)
        keep_from = n_obs - self.image_budget
        msgs: list[dict[str, Any]] = [{"role": "system", "content": self.system_prompt}]
        obs_i = 0
        for turn in self._turns:
            if isinstance(turn, _Text):
                msgs.append({"role": turn.role, "content": turn.text})
                continue
            if obs_i >= keep_from:
                middle: dict[str, Any] = {
                    "type": "image_url",
                    "image_url": {"url": data_url(turn.image, turn.mime)},
                }
            else:
                middle = {"type": "text", "text": EVICTED}
            parts = [
                {"type": "text", "text": OBS_OPEN},
                middle,
                {"type": "text", "text": OBS_CLOSE},
            ]
            if obs_i == 0:
                task = {"type": "text", "text": f"{TASK_OPEN}\n{self.instruction}\n{TASK_CLOSE}"}
                parts.insert(0, task)
            msgs.append({"role": "user", "content": parts})
            obs_i += 1
        return msgs
