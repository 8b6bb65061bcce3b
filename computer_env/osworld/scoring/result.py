"""What scoring a task gives: its score in [0, 1] and how it came about, the same whether
OSWorld's code ran in the scoring process (:mod:`computer_env.osworld.scoring.process`) or in
this one (:mod:`computer_env.osworld.scoring.in_process`), so that the worker reads an answer
without importing the evaluator."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from computer_env.osworld.prepare.setup import SetupReport


class MetricDetail(BaseModel):
    """One metric's inputs and value (inputs cut to the evaluator's ``PREVIEW_CHARS``)."""

    func: str
    score: float | None = None
    result_type: str | None = None
    expected_type: str | None = None
    result: str | None = None
    expected: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None
    skipped: bool = False


class EvalResult(BaseModel):
    """A task's score in [0, 1] with how it came about."""

    score: float
    detail: list[MetricDetail] = Field(default_factory=list)
    reason: str = ""
    backend: str = "osworld"
    postconfig: SetupReport | None = None
    seconds: float = 0.0


__all__ = ["EvalResult", "MetricDetail"]
