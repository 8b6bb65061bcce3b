"""The self-contained replay page of a task folder: :func:`render_replay`.

Reads ``traj.jsonl`` and ``reasoning.jsonl`` (:func:`holo_agent.records.read_traj`),
``agent.json``, ``trajectory.json`` and ``result.json`` (fields ``instruction``, ``outcome``,
``score``, ``evaluator``, ``infra_reason``, ``reference_policy``), whatever is present, and renders
``templates/replay.html.j2`` (Jinja2, autoescaped: every piece of model or task text is
HTML-escaped). Images are linked relative to the folder, or inlined as data URLs with
``self_contained``.
"""

from __future__ import annotations

import base64
import json
import mimetypes
from pathlib import Path
from typing import Any

from holo_agent.code_tool import run_status
from holo_agent.recorder import atomic_write
from holo_agent.records import (
    RAW_OUTPUT_KEEP,
    REFERENCE_POLICY_LABEL,
    StepRecord,
    Trajectory,
    read_traj,
)
from holo_agent.replay.evidence import evidence_view
from holo_agent.replay.overlay import overlay
from holo_agent.replay.protocols import judge_view
from holo_agent.replay.templating import MAX_TEXT_CHARS, TEMPLATES
from holo_agent.tools import HotkeyTool, PressKeyTool, WriteTool

__all__ = ["MAX_TEXT_CHARS", "REFERENCE_LABEL", "render_replay"]

REFERENCE_LABEL = REFERENCE_POLICY_LABEL
"""The badge of a reference-policy run (the project's one label for it)."""

PAGE = TEMPLATES.get_template("replay.html.j2")


def _load_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _load_trajectory(path: Path) -> Trajectory | None:
    """``trajectory.json`` (the episode without its steps), None when absent or unreadable."""
    data = _load_json(path)
    if not data:
        return None
    try:
        return Trajectory.model_validate(data)
    except ValueError:
        return None


def _img_src(task_dir: Path, name: str | None, inline: bool) -> str | None:
    if not name or "/" in name or "\\" in name or not (task_dir / name).is_file():
        return None
    if not inline:
        return name
    mime = mimetypes.guess_type(name)[0] or "image/png"
    return f"data:{mime};base64," + base64.b64encode((task_dir / name).read_bytes()).decode()


def _action_text(call: dict[str, Any] | None) -> str:
    """``click(element="file", x=250, y=300)``: the call as recorded (any tool, known or not)."""
    if not call:
        return ""
    args = ", ".join(
        f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in call.items() if k != "tool_name"
    )
    return f"{call.get('tool_name')}({args})"


def _stats(rec: StepRecord) -> list[str]:
    tokens = [
        f"{name} {value}"
        for name, value in (
            ("prompt", rec.prompt_tokens),
            ("completion", rec.completion_tokens),
            ("reasoning", rec.reasoning_tokens),
        )
        if value is not None
    ]
    stats = [f"latency {rec.latency_s:.2f}s"] + [f"{t} tok" for t in tokens]
    if rec.attempts > 1:
        stats.append(f"{rec.attempts} attempts")
    if rec.pixel:
        stats.append("px " + ", ".join(f"{k}={v}" for k, v in rec.pixel.items()))
    return stats


def _raw_label(rec: StepRecord) -> str:
    """``raw output``, with its full size and hash when the record has them (it keeps only the
    first bytes of a long one)."""
    if rec.raw_output_size is None or not rec.raw_output_sha256:
        return "raw output"
    size = (
        f"{rec.raw_output_size} bytes"
        if rec.raw_output_size <= RAW_OUTPUT_KEEP
        else f"the first {RAW_OUTPUT_KEEP} of {rec.raw_output_size} bytes"
    )
    return f"raw output ({size}, sha256 {rec.raw_output_sha256[:16]}…)"


def _step_view(i: int, rec: StepRecord, src: str | None) -> dict[str, Any]:
    """What the step card shows (texts are cut and escaped in the template)."""
    call = rec.call
    name = (rec.tool_call or {}).get("tool_name")
    keys = None
    if isinstance(call, PressKeyTool):
        keys = [call.key]
    elif isinstance(call, HotkeyTool):
        keys = list(call.keys)
    code = rec.code_run
    title = f"Step {rec.step}" + (f" · re-ask {rec.reask}" if rec.reask else "")
    return {
        "i": i,
        "rec": rec,
        "src": src,
        "title": title,
        "action": _action_text(rec.tool_call),
        "overlay": overlay(call, rec.image_size) if src else None,
        "typed": call if isinstance(call, WriteTool) else None,
        "pressed": keys,
        "code": code,
        "code_status": run_status(rec.code or {}) if code else "",
        "stats": _stats(rec),
        "thumb": f"{rec.step} {name or 'error'}",
        "raw_label": _raw_label(rec),
    }


def _badges(
    result: dict[str, Any], agent: dict[str, Any], episode: Trajectory | None, judge: dict[str, Any]
) -> list[tuple[str, str]]:
    """The header's (css class, text) badges, in order."""
    out = []
    if result.get("outcome") is not None:
        outcome = str(result["outcome"])
        out.append(
            (
                f"badge {({'passed': 'ok', 'failed': 'bad'}).get(outcome, 'warn')}",
                f"outcome: {outcome}",
            )
        )
    if result.get("score") is not None:
        out.append(("badge", f"score: {result['score']}"))
    if result.get("failure_category"):
        out.append(("badge bad", f"failure: {result['failure_category']}"))
    out += judge["badges"]  # the judge model's verdict beside the rule score
    if episode is not None and episode.end:
        out.append(("badge", f"episode: {episode.end}"))
    if agent.get("model"):
        out.append(("badge", f"model: {agent['model']}"))
    if result.get("exploit"):  # --audit: a hostile policy played, not a model
        out.append(
            (
                "refpolicy",
                f"audit: exploit {result['exploit']} (a harness check, not a model score)",
            )
        )
    elif result.get("reference_policy"):
        out.append(("refpolicy", REFERENCE_LABEL))
    if result.get("known_task_flaw"):
        out.append(
            (
                "badge warn",
                "known task flaw: "
                + "; ".join(
                    f"{f.get('exploit')}: {f.get('explanation')}" for f in result["known_task_flaw"]
                ),
            )
        )
    return out


def _evaluator_text(result: dict[str, Any]) -> str | None:
    ev = result.get("evaluator")
    if ev is None:
        return None
    return ev if isinstance(ev, str) else json.dumps(ev, indent=2, ensure_ascii=False)


def render_replay(task_dir: Path, *, self_contained: bool = False) -> Path:
    """Write ``task_dir/replay.html`` and return its path."""
    task_dir = Path(task_dir)
    result = _load_json(task_dir / "result.json")
    agent = _load_json(task_dir / "agent.json")
    episode = _load_trajectory(task_dir / "trajectory.json")
    steps = [
        _step_view(i, rec, _img_src(task_dir, rec.screenshot, self_contained))
        for i, rec in enumerate(read_traj(task_dir))
    ]
    instruction = (
        result.get("instruction")
        or agent.get("instruction")
        or (episode.instruction if episode else None)
    )
    totals = episode.totals.model_dump() if episode else {}
    judge = judge_view(result)
    html = PAGE.render(
        title=str(result.get("instruction") or agent.get("instruction") or "replay")[:80],
        instruction=instruction,
        badges=_badges(result, agent, episode, judge),
        infra_reason=result.get("infra_reason"),
        judge=judge,
        episode=episode,
        tampered="\n".join(result.get("tampered") or []) or None,
        failure=result.get("message") if result.get("failure_category") else None,
        evaluator=_evaluator_text(result),
        totals={k: round(v, 2) if isinstance(v, float) else v for k, v in totals.items()},
        evidence=evidence_view(task_dir, result, inline=self_contained),
        steps=steps,
    )
    out = task_dir / "replay.html"
    atomic_write(out, html)
    return out
