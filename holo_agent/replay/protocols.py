"""Replay pieces of the published protocols: a code action's script and output (hybrid GUI +
code), and the judge model's verdict beside the rule score. All text is HTML-escaped."""

from __future__ import annotations

from html import escape
from typing import Any

from holo_agent.code_tool import run_status

CODE_CHARS = 8000


def _e(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def _cut(text: str, limit: int = CODE_CHARS) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n… [{len(text) - limit:,} more characters; see traj.jsonl]"


def code_html(code: dict[str, Any] | None) -> str:
    """A code action: the script and what it printed, with its exit status."""
    if not code:
        return ""
    status = run_status(code)
    took = f" · {code['duration_s']:.2f} s" if isinstance(code.get("duration_s"), float) else ""
    cut = " · output cut for the model" if code.get("truncated") else ""
    return (f'<div class="field code-action"><div class="label">code '
            f'({_e(code.get("language"))}) · {_e(status)}{_e(took)}{_e(cut)}</div>'
            f'<pre class="code">{_e(_cut(str(code.get("code") or "")))}</pre>'
            f'<div class="label">output</div>'
            f'<pre class="code-output">{_e(_cut(str(code.get("output") or ""))) or "(none)"}'
            f'</pre></div>')


def judge_badges(result: dict[str, Any]) -> list[str]:
    """Header badges: the judge's verdict (or that it gave none) beside the rule score."""
    j = result.get("judge")
    if not isinstance(j, dict):
        return []
    if j.get("status") != "scored":
        return ['<span class="badge warn">judge: unscored</span>']
    done = bool(j.get("verdict"))
    agree = (j.get("rule_score") is not None and
             done == (float(j["rule_score"]) >= float(result.get("threshold") or 1.0)))
    cls = "ok" if agree else "bad"
    return [f'<span class="badge {cls}">judge ({_e(j.get("model"))}): '
            f'{"done" if done else "not done"}</span>',
            f'<span class="badge">rule score: {_e(j.get("rule_score"))}</span>',
            f'<span class="badge">scored by: {_e(j.get("score_by"))}</span>']


def judge_field(result: dict[str, Any]) -> str:
    """The judge's reason (or its error)."""
    j = result.get("judge")
    if not isinstance(j, dict):
        return ""
    text = j.get("reason") if j.get("status") == "scored" else f"no verdict: {j.get('error')}"
    cls = "value" if j.get("status") == "scored" else "value error"
    return (f'<div class="field"><div class="label">judge</div>'
            f'<div class="{cls}">{_e(_cut(str(text or "")))}</div></div>')
