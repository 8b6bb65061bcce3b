"""The replay's Jinja2 environment (``templates/``, autoescaped) and its ``cut`` filter."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2

__all__ = ["CODE_CHARS", "MAX_TEXT_CHARS", "TEMPLATES", "cut"]

MAX_TEXT_CHARS = 4000
"""Longer model text (note, thought, raw output, reasoning...) is cut on the page, so a replay
stays small and fast; the full text stays in ``traj.jsonl`` / ``reasoning.jsonl``."""
CODE_CHARS = 8000
"""A code action's script and output (and the judge's reason) are cut at this length."""


def cut(value: Any, where: str = "traj.jsonl", limit: int = MAX_TEXT_CHARS) -> str | None:
    """``value`` as text, cut to ``limit`` characters with a note saying where the rest is."""
    if value is None:
        return None
    text = str(value)
    if len(text) <= limit:
        return text
    return (
        f"{text[:limit]}\n… [{len(text) - limit:,} more characters cut here; the full "
        f"text is in {where}]"
    )


TEMPLATES = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    finalize=lambda value: "" if value is None else value,  # a missing value shows as nothing
)
TEMPLATES.filters["cut"] = cut
TEMPLATES.globals.update(MAX_TEXT_CHARS=MAX_TEXT_CHARS, CODE_CHARS=CODE_CHARS)
