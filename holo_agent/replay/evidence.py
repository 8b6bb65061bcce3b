"""The replay's "what was scored" section, from ``scored.json`` in the task folder: the screen
at scoring time, the files the evaluator read (links), where the result differed from what was
expected, and links to earlier attempts' folders. Every text is escaped; a link is only made to
a file that lies inside the task folder.
"""

from __future__ import annotations

import base64
import json
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import quote

__all__ = ["evidence_section"]

ROLE_LABELS = {"result": "result (what the agent produced)",
               "expected": "expected",
               "other": "also written while scoring (e.g. by postconfig)"}


def _e(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def _inside(task_dir: Path, rel: Any) -> Path | None:
    if not isinstance(rel, str) or not rel or rel.startswith("/") or "\\" in rel:
        return None
    path = (task_dir / rel).resolve()
    root = task_dir.resolve()
    return path if root in path.parents and path.is_file() else None


def evidence_section(task_dir: Path, result: dict[str, Any], *, inline: bool = False) -> str:
    """HTML for the section ('' when nothing was kept)."""
    task_dir = Path(task_dir)
    try:
        data = json.loads((task_dir / "scored.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    parts: list[str] = []
    shot = _inside(task_dir, data.get("screenshot"))
    if shot is not None:
        src = ("data:image/png;base64," + base64.b64encode(shot.read_bytes()).decode()
               if inline else quote(shot.name))
        parts.append(f'<figure class="scoring-screen"><img src="{_e(src)}" '
                     f'alt="screen at scoring time" style="max-width:100%;border:1px solid #999">'
                     f"<figcaption>the screen when scoring started (as the agent left it)"
                     f"</figcaption></figure>")
    for x in data.get("explanations") or []:
        if not isinstance(x, dict):
            continue
        head = (f"{x.get('func')}: result <code>{_e(x.get('result'))}</code> vs expected "
                f"<code>{_e(x.get('expected'))}</code> (score {_e(x.get('score'))})")
        lines = "\n".join(str(line) for line in x.get("lines") or [])
        parts.append(f'<div class="explain"><p>{head}</p><pre>{_e(lines)}</pre></div>')
    files = []
    for f in data.get("files") or []:
        if not isinstance(f, dict):
            continue
        path = _inside(task_dir, f.get("path"))
        name = _e(f.get("path") or f.get("source"))
        link = f'<a href="{_e(quote(str(f.get("path"))))}">{name}</a>' if path else name
        role = ROLE_LABELS.get(str(f.get("role")), str(f.get("role")))
        files.append(f"<li>{_e(role)}: {link} ({_e(f.get('bytes'))} bytes)"
                     f"{' — ' + _e(f.get('note')) if f.get('note') else ''}</li>")
    if files:
        parts.append("<p>files the evaluator read (kept):</p><ul>" + "".join(files) + "</ul>")
    earlier = []
    for a in result.get("earlier_attempts") or []:
        if not isinstance(a, dict):
            continue
        folder = str(a.get("folder") or "")
        replay = _inside(task_dir, f"{folder}/replay.html")
        label = f"attempt {_e(a.get('attempt'))}: {_e(a.get('outcome'))} — {_e(a.get('message'))}"
        earlier.append(f'<li><a href="{_e(quote(folder))}/replay.html">{label}</a></li>'
                       if replay else f"<li>{label} (files in {_e(folder)}/)</li>")
    if earlier:
        parts.append("<p>earlier attempts (rerun):</p><ul>" + "".join(earlier) + "</ul>")
    if not parts:
        return ""
    return ('<details class="evaluator scored" open><summary>what was scored</summary>'
            + "".join(parts) + "</details>")
