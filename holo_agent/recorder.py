"""Writes an episode to its task folder as it runs, so a killed run keeps what happened.

Files in ``task_dir``:

- ``agent.json``: instruction, model, prompt name, sampling settings (never the API key).
- ``system_prompt.txt``: the exact system prompt sent.
- ``step_NNN.<ext>``: the exact image bytes sent for observation NNN (extension from the mime).
- ``traj.jsonl``: one JSON line per model turn (a ``StepRecord`` without its reasoning),
  flushed and fsynced after each line.
- ``reasoning.jsonl``: ``{"index", "step", "reasoning"}`` per model turn that returned reasoning.
- ``trajectory.json``: how the episode ended and the totals (written at the end).

Whole files are written atomically (:mod:`computer_env.atomic`: temporary name, then rename),
every file with mode 0644 so that a results folder can be served to others as it is. The files
are read back with :func:`holo_agent.records.read_traj` (re-exported here).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from computer_env.atomic import FILE_MODE, atomic_write
from holo_agent.images import extension_for
from holo_agent.records import StepRecord, Trajectory, read_traj

__all__ = ["FILE_MODE", "Recorder", "atomic_write", "read_traj"]


def _append_line(path: Path, obj: Any) -> None:
    """Append ``obj`` as one JSON line. The line is always valid UTF-8: a lone surrogate in any
    string (text from a model or a program) is written as its JSON escape, never refused."""
    line = json.dumps(obj, ensure_ascii=False) + "\n"
    data = line.encode("utf-8", "backslashreplace")  # '\ud800' inside a JSON string: its escape
    with open(path, "ab") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
        if f.tell() == len(data):  # just created: one mode for every file
            os.fchmod(f.fileno(), FILE_MODE)


class Recorder:
    """Records one task's episode into ``task_dir`` (created if missing)."""

    def __init__(self, task_dir: Path) -> None:
        self.task_dir = Path(task_dir)
        self.task_dir.mkdir(parents=True, exist_ok=True)
        self.traj_path = self.task_dir / "traj.jsonl"
        self.reasoning_path = self.task_dir / "reasoning.jsonl"

    def start(self, instruction: str, system_prompt: str, meta: dict[str, Any]) -> None:
        """Begin an episode: write the prompt and agent settings, clear old step lines."""
        for old in (self.traj_path, self.reasoning_path):
            old.unlink(missing_ok=True)
        atomic_write(self.task_dir / "system_prompt.txt", system_prompt)
        info = {"instruction": instruction, **meta}
        atomic_write(self.task_dir / "agent.json", json.dumps(info, indent=2, ensure_ascii=False))

    def save_screenshot(self, index: int, image: bytes, mime: str) -> str:
        """Save the exact image bytes sent for observation ``index``; return the file name."""
        name = f"step_{index:03d}{extension_for(mime)}"
        atomic_write(self.task_dir / name, image)
        return name

    def record_step(self, record: StepRecord) -> None:
        """Append one model turn to ``traj.jsonl`` (and its reasoning to ``reasoning.jsonl``)."""
        _append_line(self.traj_path, record.model_dump(mode="json", exclude={"reasoning"}))
        if record.reasoning:
            _append_line(
                self.reasoning_path,
                {
                    "index": record.index,
                    "step": record.step,
                    "reasoning": record.reasoning,
                },
            )

    def finish(self, trajectory: Trajectory) -> None:
        """Write the episode summary (end, answer, error, totals)."""
        summary = trajectory.model_dump(mode="json", exclude={"steps"})
        summary["n_records"] = len(trajectory.steps)
        atomic_write(
            self.task_dir / "trajectory.json", json.dumps(summary, indent=2, ensure_ascii=False)
        )
