"""``JudgeClient``: asks an OpenAI-compatible judge model for a verdict (the ``openai`` package).

A judge that cannot be reached, answers an error, or replies without a verdict gives an
*unscored* :class:`Judgement` (``status="unscored"`` with the error): the rule score is never
touched by a judge failure.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from pydantic import BaseModel

from holo_agent.judge.request import JudgeParseError, build_judge_messages, parse_verdict

log = logging.getLogger(__name__)


class Judgement(BaseModel):
    """One judge answer (what ``result.json``'s ``judge`` holds, with the rule score added)."""

    status: str  # "scored" | "unscored"
    verdict: int | None = None  # 1 done, 0 not done
    reason: str = ""
    model: str | None = None
    error: str | None = None
    latency_s: float | None = None


class JudgeClient:
    """One judge endpoint. ``model`` None: the first model its ``/v1/models`` lists."""

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        *,
        api_key: str | None = None,
        timeout: float = 120.0,
        max_retries: int = 2,
    ) -> None:
        from openai import OpenAI

        self.base_url = base_url
        self.model = model
        self._client = OpenAI(
            base_url=base_url, api_key=api_key or "EMPTY", timeout=timeout, max_retries=max_retries
        )

    def _model(self) -> str:
        if self.model is None:
            models = self._client.models.list()
            first = next(iter(models), None)
            if first is None:
                raise RuntimeError("the judge endpoint lists no model")
            self.model = first.id
        return self.model

    def judge(
        self,
        instruction: str,
        actions: list[dict[str, Any]],
        end: str | None,
        screenshots: list[tuple[bytes, str]],
    ) -> Judgement:
        """Ask for a verdict; never raises for endpoint trouble (an unscored judgement)."""
        t0 = time.monotonic()
        try:
            model = self._model()
            resp = self._client.chat.completions.create(
                model=model,
                temperature=0.0,
                messages=build_judge_messages(instruction, actions, end, screenshots),
            )
            content = resp.choices[0].message.content if resp.choices else None
            verdict, reason = parse_verdict(content)
        except JudgeParseError as exc:
            return Judgement(
                status="unscored",
                model=self.model,
                error=f"no verdict: {exc}",
                latency_s=round(time.monotonic() - t0, 3),
            )
        except Exception as exc:  # noqa: BLE001 - any endpoint failure leaves it unscored
            log.warning("judge %s failed: %s: %s", self.base_url, type(exc).__name__, exc)
            return Judgement(
                status="unscored",
                model=self.model,
                error=f"{type(exc).__name__}: {str(exc)[:300]}",
                latency_s=round(time.monotonic() - t0, 3),
            )
        return Judgement(
            status="scored",
            verdict=verdict,
            reason=reason,
            model=model,
            latency_s=round(time.monotonic() - t0, 3),
        )

    def close(self) -> None:
        self._client.close()
