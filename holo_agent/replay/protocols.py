"""Replay pieces of the published protocols: the judge model's verdict beside the rule score.
(A code action's script and output is drawn by the step template from the record's
``code_run``.) The template escapes every text."""

from __future__ import annotations

from typing import Any

__all__ = ["judge_view"]


def judge_view(result: dict[str, Any]) -> dict[str, Any]:
    """``{"badges": [(css class, text)...], "field": (css class, text) | None}``: the header
    badges (the judge's verdict, or that it gave none, beside the rule score) and its reason
    (or its error)."""
    j = result.get("judge")
    if not isinstance(j, dict):
        return {"badges": [], "field": None}
    if j.get("status") != "scored":
        return {
            "badges": [("badge warn", "judge: unscored")],
            "field": ("value error", f"no verdict: {j.get('error')}"),
        }
    done = bool(j.get("verdict"))
    agree = j.get("rule_score") is not None and done == (
        float(j["rule_score"]) >= float(result.get("threshold") or 1.0)
    )
    badges = [
        (
            f"badge {'ok' if agree else 'bad'}",
            f"judge ({j.get('model')}): {'done' if done else 'not done'}",
        ),
        ("badge", f"rule score: {j.get('rule_score')}"),
        ("badge", f"scored by: {j.get('score_by')}"),
    ]
    return {"badges": badges, "field": ("value", str(j.get("reason") or ""))}
