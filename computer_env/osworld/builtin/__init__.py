"""Built-in OSWorld-format tasks for the local desktop, their input files and reference solutions.

Layout (like OSWorld's ``evaluation_examples/``): ``test_all.json`` and ``test_smoke.json``
(``{domain: [task ids]}``), ``examples/<domain>/<id>.json`` (task files), ``assets/`` (files and
pages served by :class:`computer_env.osworld.catalog.assets.AssetServer`) and ``solutions/<id>.json``
(one reference solution per task: a JSON list of Holo Steps) and ``solutions_code/<id>.json``
(for a few tasks, a solution using the code tool, played with ``--code-actions``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

BUILTIN_ROOT: Path = Path(__file__).resolve().parent
"""Root of the built-in task set (pass it wherever an OSWorld ``evaluation_examples`` is taken)."""

_COORD_ARGS: dict[str, tuple[str, ...]] = {
    "click": ("x", "y"),
    "double_click": ("x", "y"),
    "right_click": ("x", "y"),
    "move_to": ("x", "y"),
    "drag": ("from_x", "from_y", "to_x", "to_y"),
}
_REQUIRED_ARGS: dict[str, tuple[str, ...]] = {
    **{name: ("element", *args) for name, args in _COORD_ARGS.items() if name != "drag"},
    "drag": _COORD_ARGS["drag"],
    "write": ("content",),
    "press_key": ("key",),
    "hotkey": ("keys",),
    "scroll": ("direction",),
    "wait": ("seconds",),
    "answer": ("content",),
    "run_code": ("language", "code"),
}


class SolutionFormatError(ValueError):
    """A solution file is not a JSON list of Step-shaped objects."""


def _check_step(step: Any, where: str) -> None:
    if not isinstance(step, dict) or set(step) != {"note", "thought", "tool_call"}:
        raise SolutionFormatError(f"{where}: a step needs exactly note, thought and tool_call")
    if step["note"] is not None and not isinstance(step["note"], str):
        raise SolutionFormatError(f"{where}: note must be a string or null")
    if not isinstance(step["thought"], str):
        raise SolutionFormatError(f"{where}: thought must be a string")
    call = step["tool_call"]
    name = call.get("tool_name") if isinstance(call, dict) else None
    if name not in _REQUIRED_ARGS:
        raise SolutionFormatError(f"{where}: unknown tool_name {name!r}")
    missing = [a for a in _REQUIRED_ARGS[name] if a not in call]
    if missing:
        raise SolutionFormatError(f"{where}: {name} lacks {', '.join(missing)}")
    for arg in _COORD_ARGS.get(name, ()):
        value = call[arg]
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 1000:
            raise SolutionFormatError(f"{where}: {arg} must be an integer in [0, 1000]")


def load_solution(path: Path) -> list[dict[str, Any]]:
    """Read and validate one solution file."""
    steps = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(steps, list) or not steps:
        raise SolutionFormatError(f"{path.name}: a solution is a non-empty JSON list of steps")
    for i, step in enumerate(steps):
        _check_step(step, f"{path.name}[{i}]")
    if steps[-1]["tool_call"]["tool_name"] != "answer":
        raise SolutionFormatError(f"{path.name}: the last step must be an answer")
    return steps


def load_solutions(root: Path = BUILTIN_ROOT) -> dict[str, list[dict[str, Any]]]:
    """All reference solutions, keyed by task id."""
    return {p.stem: load_solution(p) for p in sorted((root / "solutions").glob("*.json"))}


def load_code_solutions(root: Path = BUILTIN_ROOT) -> dict[str, list[dict[str, Any]]]:
    """Alternative reference solutions that use the code tool (``run_code``), keyed by task id:
    what the reference endpoint plays for these tasks with ``--code-actions``."""
    return {p.stem: load_solution(p) for p in sorted((root / "solutions_code").glob("*.json"))}


def task_ids(root: Path = BUILTIN_ROOT, task_list: str = "test_all.json") -> list[tuple[str, str]]:
    """``(domain, task_id)`` pairs from a task list, in file order."""
    listing: dict[str, list[str]] = json.loads((root / task_list).read_text(encoding="utf-8"))
    return [(domain, tid) for domain, ids in listing.items() for tid in ids]


__all__ = [
    "BUILTIN_ROOT",
    "SolutionFormatError",
    "load_code_solutions",
    "load_solution",
    "load_solutions",
    "task_ids",
]
