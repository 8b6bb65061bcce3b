"""The replay page cuts very long model text and stays small (issue 11, item 7); the full text
stays in traj.jsonl."""

from __future__ import annotations

import json
from pathlib import Path

from holo_agent.replay import render_replay
from holo_agent.replay.page import MAX_TEXT_CHARS


def _write_traj(task_dir: Path, thought: str, steps: int = 3, typed: str | None = None) -> None:
    typed = thought if typed is None else typed
    rows = [
        {
            "index": i,
            "step": i + 1,
            "note": None,
            "thought": thought,
            "tool_call": {"tool_name": "write", "content": typed, "press_enter": False},
            "raw_output": thought,
            "latency_s": 0.1,
        }
        for i in range(steps)
    ]
    (task_dir / "traj.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (task_dir / "reasoning.jsonl").write_text(
        json.dumps({"index": 0, "step": 1, "reasoning": thought}) + "\n"
    )


def test_a_megabyte_thought_is_cut_on_the_page_and_kept_in_traj(tmp_path: Path) -> None:
    marker = "END-OF-THOUGHT-" + "z" * 8
    thought = "<b>x</b> " * 120_000 + marker  # over 1 MB, with markup that must stay escaped
    _write_traj(tmp_path, thought)
    page = render_replay(tmp_path)
    html = page.read_text(encoding="utf-8")
    assert len(html.encode()) < 300_000, len(html.encode())
    assert marker not in html and "<b>x</b>" not in html
    assert "the full text is in traj.jsonl" in html
    assert "the full text is in reasoning.jsonl" in html
    assert marker in (tmp_path / "traj.jsonl").read_text()  # nothing lost on disk


def test_short_text_is_shown_whole(tmp_path: Path) -> None:
    thought = "t" * (MAX_TEXT_CHARS - 1) + "!"
    _write_traj(tmp_path, thought, steps=1, typed="hello")
    html = render_replay(tmp_path).read_text(encoding="utf-8")
    assert thought in html and "more characters cut" not in html
