"""Typed records of an episode: one ``StepRecord`` per model turn, and the ``Trajectory``."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

EndReason = Literal["answered", "infeasible", "max_steps", "malformed", "env_done"]
"""How an episode ended (``env_done``: the environment itself ended it, e.g. a game over)."""


class StepRecord(BaseModel):
    """One model turn: the request's result, the parsed Step (or the error) and what it did.

    A malformed output that was re-asked is its own record with ``error`` set and ``reask`` > 0
    on the records that follow for the same observation. ``pixel`` holds the env-pixel
    coordinates the tool call was converted to; ``image_size`` is the size of the image sent,
    ``env_size`` the size of the env's screenshot.
    """

    index: int
    step: int = Field(description="number of accepted Steps before this turn (the step index)")
    reask: int = 0
    time: float = Field(description="UNIX time the model reply arrived")
    latency_s: float
    attempts: int = 1
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reasoning_tokens: int | None = None
    note: str | None = None
    thought: str | None = None
    tool_call: dict[str, Any] | None = None
    event: dict[str, Any] | None = None
    pixel: dict[str, int | None] | None = None
    tool_output: str | None = None
    screenshot: str | None = None
    image_size: tuple[int, int] | None = None
    env_size: tuple[int, int] | None = None
    reasoning: str | None = None
    raw_output: str | None = None
    error: str | None = None
    code: dict[str, Any] | None = Field(
        default=None, description="a code action: language, code, output (cut at 64 KB), "
        "exit_code, timed_out, duration_s, truncated")


class Totals(BaseModel):
    """Sums over all model turns of an episode."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    latency_s: float = 0.0


class Trajectory(BaseModel):
    """An episode: its steps, how it ended, the answer (if any), the error (if any), totals."""

    instruction: str
    steps: list[StepRecord] = Field(default_factory=list)
    end: EndReason | None = None
    answer: str | None = None
    error: str | None = None
    totals: Totals = Field(default_factory=Totals)

    def add(self, record: StepRecord) -> None:
        """Append a record and update the totals."""
        self.steps.append(record)
        t = self.totals
        t.requests += 1
        t.prompt_tokens += record.prompt_tokens or 0
        t.completion_tokens += record.completion_tokens or 0
        t.reasoning_tokens += record.reasoning_tokens or 0
        t.latency_s += record.latency_s
