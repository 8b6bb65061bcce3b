"""The replay's "what was scored" section, from ``scored.json`` in the task folder: the screen
at scoring time, the files the evaluator read (links), where the result differed from what was
expected, and links to earlier attempts' folders. The template escapes every text; a link is
only made to a file that lies inside the task folder.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

__all__ = ["evidence_view"]

ROLE_LABELS = {
    "result": "result (what the agent produced)",
    "expected": "expected",
    "other": "also written while scoring (e.g. by postconfig)",
}


def _inside(task_dir: Path, rel: Any) -> Path | None:
    if not isinstance(rel, str) or not rel or rel.startswith("/") or "\\" in rel:
        return None
    path = (task_dir / rel).resolve()
    root = task_dir.resolve()
    return path if root in path.parents and path.is_file() else None


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [x for x in value or [] if isinstance(x, dict)]


def _files(task_dir: Path, data: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for f in _dicts(data.get("files")):
        inside = _inside(task_dir, f.get("path")) is not None
        out.append(
            {
                "role": ROLE_LABELS.get(str(f.get("role")), str(f.get("role"))),
                "name": f.get("path") or f.get("source"),
                "bytes": f.get("bytes"),
                "href": quote(str(f.get("path"))) if inside else None,
                "note": f.get("note"),
            }
        )
    return out


def _earlier(task_dir: Path, result: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for a in _dicts(result.get("earlier_attempts")):
        folder = str(a.get("folder") or "")
        replay = _inside(task_dir, f"{folder}/replay.html")
        out.append(
            {
                "attempt": a.get("attempt"),
                "outcome": a.get("outcome"),
                "message": a.get("message"),
                "folder": folder,
                "href": f"{quote(folder)}/replay.html" if replay else None,
            }
        )
    return out


def evidence_view(
    task_dir: Path, result: dict[str, Any], *, inline: bool = False
) -> dict[str, Any] | None:
    """What the section shows (None when nothing was kept)."""
    task_dir = Path(task_dir)
    try:
        data = json.loads((task_dir / "scored.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    shot = _inside(task_dir, data.get("screenshot"))
    src = None
    if shot is not None:
        src = (
            "data:image/png;base64," + base64.b64encode(shot.read_bytes()).decode()
            if inline
            else quote(shot.name)
        )
    explanations = [
        {
            "func": x.get("func"),
            "result": x.get("result"),
            "expected": x.get("expected"),
            "score": x.get("score"),
            "text": "\n".join(str(line) for line in x.get("lines") or []),
        }
        for x in _dicts(data.get("explanations"))
    ]
    view = {
        "screenshot": src,
        "explanations": explanations,
        "files": _files(task_dir, data),
        "earlier": _earlier(task_dir, result),
    }
    return view if any(view.values()) else None
