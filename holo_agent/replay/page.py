"""The step-by-step replay page of one task folder (``replay.html``).

``python -m holo_agent.replay DIR [--self-contained]`` or :func:`render_replay`. Reads
``traj.jsonl``, ``reasoning.jsonl``, ``agent.json``, ``trajectory.json`` and ``result.json``
(fields ``instruction``, ``outcome``, ``score``, ``evaluator``, ``infra_reason``,
``reference_policy``), whatever is present. Every piece of model or task text is HTML-escaped.
Images are linked relative to the folder, or inlined as data URLs with ``self_contained``.
"""

from __future__ import annotations

import base64
import json
import mimetypes
from html import escape
from pathlib import Path
from typing import Any

from holo_agent.recorder import atomic_write, read_traj
from holo_agent.replay.assets import CSS, JS
from holo_agent.replay.evidence import evidence_section
from holo_agent.replay.protocols import code_html, judge_badges, judge_field

REFERENCE_LABEL = "reference policy — harness check, not a model score"


def _e(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


MAX_TEXT_CHARS = 4000
"""Longer model text (note, thought, raw output, reasoning...) is cut on the page, so a replay
stays small and fast; the full text stays in ``traj.jsonl`` / ``reasoning.jsonl``."""


def _cut(value: Any, where: str = "traj.jsonl", limit: int = MAX_TEXT_CHARS) -> Any:
    """``value`` as text, cut to ``limit`` characters with a note saying where the rest is."""
    if value is None:
        return None
    text = str(value)
    if len(text) <= limit:
        return text
    return (f"{text[:limit]}\n… [{len(text) - limit:,} more characters cut here; the full "
            f"text is in {where}]")


def _load_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _reasoning(task_dir: Path) -> dict[int, str]:
    out: dict[int, str] = {}
    path = task_dir / "reasoning.jsonl"
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
                out[int(row["index"])] = str(row["reasoning"])
            except (ValueError, KeyError, TypeError):
                continue
    return out


def _img_src(task_dir: Path, name: str | None, inline: bool) -> str | None:
    if not name or "/" in name or "\\" in name or not (task_dir / name).is_file():
        return None
    if not inline:
        return name
    mime = mimetypes.guess_type(name)[0] or "image/png"
    return f"data:{mime};base64," + base64.b64encode((task_dir / name).read_bytes()).decode()


def _overlay(call: dict[str, Any], size: list[int] | None) -> str:
    """SVG drawn over the screenshot: crosshair, drag arrow or scroll marker (sent-image pixels)."""
    if not size or not call:
        return ""
    w, h = int(size[0]), int(size[1])
    r = max(w, h) / 80

    def p(x: Any, y: Any) -> tuple[float, float] | None:
        if isinstance(x, int) and isinstance(y, int):
            return x / 1000 * w, y / 1000 * h
        return None

    name = call.get("tool_name")
    body = ""
    stroke = f'stroke-width="{r / 3:.1f}" fill="none"'
    if name in ("click", "double_click", "right_click", "move_to"):
        pt = p(call.get("x"), call.get("y"))
        if pt:
            x, y = pt
            color = {"right_click": "#ffb020", "move_to": "#4da3ff"}.get(name, "#ff3b6b")
            body = (f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r:.1f}" stroke="{color}" {stroke}/>'
                    f'<line x1="{x - 2 * r:.1f}" y1="{y:.1f}" x2="{x + 2 * r:.1f}" y2="{y:.1f}" '
                    f'stroke="{color}" {stroke}/><line x1="{x:.1f}" y1="{y - 2 * r:.1f}" '
                    f'x2="{x:.1f}" y2="{y + 2 * r:.1f}" stroke="{color}" {stroke}/>')
            if name == "double_click":
                body += (f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r * 1.6:.1f}" '
                         f'stroke="{color}" {stroke}/>')
    elif name == "drag":
        a, b = p(call.get("from_x"), call.get("from_y")), p(call.get("to_x"), call.get("to_y"))
        if a and b:
            body = (f'<line x1="{a[0]:.1f}" y1="{a[1]:.1f}" x2="{b[0]:.1f}" y2="{b[1]:.1f}" '
                    f'stroke="#ff3b6b" {stroke} marker-end="url(#arrow)"/>'
                    f'<circle cx="{a[0]:.1f}" cy="{a[1]:.1f}" r="{r / 2:.1f}" fill="#ff3b6b"/>')
    elif name == "scroll":
        pt = p(call.get("x"), call.get("y")) or (w / 2, h / 2)
        dx, dy = {"up": (0, -1), "down": (0, 1), "left": (-1, 0), "right": (1, 0)}.get(
            str(call.get("direction")), (0, 1))
        x, y = pt
        body = (f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r:.1f}" stroke="#2fbf71" {stroke}/>'
                f'<line x1="{x:.1f}" y1="{y:.1f}" '
                f'x2="{x + dx * 4 * r:.1f}" y2="{y + dy * 4 * r:.1f}" '
                f'stroke="#2fbf71" {stroke} marker-end="url(#arrow-g)"/>')
    if not body:
        return ""
    defs = (f'<defs><marker id="arrow" viewBox="0 0 10 10" refX="8" refY="5" markerWidth="5" '
            f'markerHeight="5" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
            f'fill="#ff3b6b"/></marker><marker id="arrow-g" viewBox="0 0 10 10" refX="8" refY="5" '
            f'markerWidth="5" markerHeight="5" orient="auto-start-reverse"><path '
            f'd="M0,0 L10,5 L0,10 z" fill="#2fbf71"/></marker></defs>')
    return f'<svg viewBox="0 0 {w} {h}" preserveAspectRatio="none">{defs}{body}</svg>'


def _action_text(call: dict[str, Any]) -> str:
    if not call:
        return ""
    args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in call.items()
                     if k != "tool_name")
    return f"{call.get('tool_name')}({args})"


def _field(label: str, value: Any, cls: str = "value") -> str:
    if value is None or value == "":
        return ""
    return (f'<div class="field"><div class="label">{_e(label)}</div>'
            f'<div class="{cls}">{_e(_cut(value))}</div></div>')


def _step_html(i: int, row: dict[str, Any], reasoning: str | None, src: str | None) -> str:
    call = row.get("tool_call") or {}
    shot = '<div class="noshot">no screenshot</div>'
    if src:
        shot = (f'<img src="{_e(src)}" alt="screenshot {_e(row.get("screenshot"))}" '
                f'loading="lazy">{_overlay(call, row.get("image_size"))}')
    typed = ""
    if call.get("tool_name") == "write":
        enter = " ⏎" if call.get("press_enter") else ""
        typed = (f'<div class="field"><div class="label">typed</div>'
                 f'<span class="typed">{_e(_cut(call.get("content")))}{enter}</span></div>')
    elif call.get("tool_name") in ("press_key", "hotkey"):
        keys = call.get("keys") or [call.get("key")]
        typed = '<div class="field"><div class="label">keys</div>' + "+".join(
            f"<kbd>{_e(k)}</kbd>" for k in keys) + "</div>"
    tokens = [f"{k.split('_')[0]} {row[k]}" for k in
              ("prompt_tokens", "completion_tokens", "reasoning_tokens") if row.get(k) is not None]
    stats = [f"latency {row.get('latency_s', 0):.2f}s"] + [f"{t} tok" for t in tokens]
    if (row.get("attempts") or 1) > 1:
        stats.append(f"{row['attempts']} attempts")
    if row.get("pixel"):
        stats.append("px " + ", ".join(f"{k}={v}" for k, v in row["pixel"].items()))
    title = f"Step {row.get('step', i)}"
    if row.get("reask"):
        title += f" · re-ask {row['reask']}"
    badge = '<span class="badge bad">error</span>' if row.get("error") else ""
    parts = [
        f'<h2>{_e(title)} {badge}</h2>',
        f'<div class="action">{_e(_cut(_action_text(call))) or "—"}</div>' if call else "",
        typed,
        _field("note", row.get("note")),
        _field("thought", row.get("thought")),
        _field("error", row.get("error"), "value error"),
        _field("raw output", row.get("raw_output")),
        code_html(row.get("code")) or _field("tool output", row.get("tool_output")),
        f'<div class="stats">{"".join(f"<span>{_e(s)}</span>" for s in stats)}</div>',
        (f'<details class="reasoning"><summary>reasoning</summary>'
         f'<pre>{_e(_cut(reasoning, "reasoning.jsonl"))}</pre></details>'
         if reasoning else ""),
    ]
    return (f'<section class="step" id="step-{i}" data-index="{i}"><div class="shot">{shot}</div>'
            f'<div class="info">{"".join(parts)}</div></section>')


def _header(result: dict[str, Any], agent: dict[str, Any], summary: dict[str, Any]) -> str:
    instruction = (result.get("instruction") or agent.get("instruction")
                   or summary.get("instruction"))
    badges = []
    outcome = result.get("outcome")
    if outcome is not None:
        cls = {"passed": "ok", "failed": "bad"}.get(str(outcome), "warn")
        badges.append(f'<span class="badge {cls}">outcome: {_e(outcome)}</span>')
    if result.get("score") is not None:
        badges.append(f'<span class="badge">score: {_e(result.get("score"))}</span>')
    badges += judge_badges(result)  # the judge model's verdict beside the rule score
    if summary.get("end"):
        badges.append(f'<span class="badge">episode: {_e(summary.get("end"))}</span>')
    if agent.get("model"):
        badges.append(f'<span class="badge">model: {_e(agent.get("model"))}</span>')
    if result.get("reference_policy"):
        badges.append(f'<span class="refpolicy">{_e(REFERENCE_LABEL)}</span>')
    extra = ""
    if result.get("infra_reason"):
        extra += _field("infrastructure", result.get("infra_reason"), "value error")
    extra += judge_field(result)
    if summary.get("answer") is not None:
        extra += _field("answer", summary.get("answer"))
    if summary.get("error"):
        extra += _field("episode error", summary.get("error"), "value error")
    if result.get("evaluator") is not None:
        ev = result["evaluator"]
        text = ev if isinstance(ev, str) else json.dumps(ev, indent=2, ensure_ascii=False)
        extra += (f'<details class="evaluator" open><summary>evaluator</summary>'
                  f'<pre>{_e(_cut(text, "result.json", 5 * MAX_TEXT_CHARS))}</pre></details>')
    totals = summary.get("totals") or {}
    if totals:
        extra += ('<div class="stats">' + "".join(
            f"<span>{_e(k)}: {_e(round(v, 2) if isinstance(v, float) else v)}</span>"
            for k, v in totals.items()) + "</div>")
    return (f'<header><h1>Replay</h1><p class="instruction">{_e(instruction)}</p>'
            f'<div class="meta">{"".join(badges)}</div>{extra}'
            f'<div class="help"><kbd>j</kbd>/<kbd>k</kbd> or arrow keys: next/previous step</div>'
            f'</header>')


def render_replay(task_dir: Path, *, self_contained: bool = False) -> Path:
    """Write ``task_dir/replay.html`` and return its path."""
    task_dir = Path(task_dir)
    rows = read_traj(task_dir)
    reasoning = _reasoning(task_dir)
    result = _load_json(task_dir / "result.json")
    agent = _load_json(task_dir / "agent.json")
    summary = _load_json(task_dir / "trajectory.json")
    thumbs, cards = [], []
    for i, row in enumerate(rows):
        src = _img_src(task_dir, row.get("screenshot"), self_contained)
        img = f'<img src="{_e(src)}" alt="">' if src else ""
        cls = "thumb err" if row.get("error") else "thumb"
        label = f"{row.get('step', i)} {(row.get('tool_call') or {}).get('tool_name') or 'error'}"
        thumbs.append(f'<div class="{cls}" data-index="{i}">{img}{_e(label)}</div>')
        cards.append(_step_html(i, row, reasoning.get(int(row.get("index", i))), src))
    if not cards:
        cards.append('<div class="noshot">no steps recorded</div>')
    title = _e((result.get("instruction") or agent.get("instruction") or "replay")[:80])
    html = (
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{title}</title><style>{CSS}</style></head><body>"
        f"{_header(result, agent, summary)}"
        f"{evidence_section(task_dir, result, inline=self_contained)}"
        f'<nav class="filmstrip">{"".join(thumbs)}</nav>'
        f'<main>{"".join(cards)}</main>'
        f"<script>{JS}</script></body></html>"
    )
    out = task_dir / "replay.html"
    atomic_write(out, html)
    return out
