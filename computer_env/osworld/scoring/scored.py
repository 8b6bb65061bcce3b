"""Keep what was scored: the screen at scoring time, the files the evaluator read, and where
they differ from what was expected.

Around ``evaluate()`` of one attempt::

    witness = ScoringWitness(ctx, case_dir)
    witness.before()            # scoring_screen.png; note the files already in the work folder
    ev = evaluate(task, ctx)
    kept = witness.after(detail, options)   # copies into scored/, writes scored.json

``scored.json`` (read by the replay page)::

    {"screenshot": "scoring_screen.png" | null,
     "files": [{"role": "result"|"expected"|"other", "path": "scored/result/orders.xlsx",
                "source": "<work folder path>", "bytes": 1234, "func": "compare_table"}],
     "explanations": [{"func": ..., "result": ..., "expected": ..., "lines": [...]}]}

The work folder (``ctx.task_cache_dir``) is this attempt's own, so what is kept is exactly
what this attempt's evaluator read.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from computer_env.atomic import atomic_write_bytes, atomic_write_json
from computer_env.osworld.scoring.explain import explain_files

__all__ = ["SCORED_JSON", "SCORING_SCREEN", "ScoringWitness"]

log = logging.getLogger(__name__)

SCORED_JSON = "scored.json"
SCORING_SCREEN = "scoring_screen.png"
KEEP_MAX_BYTES = 50_000_000


class ScoringWitness:
    """Keeps the evidence of one scoring (see the module docstring)."""

    def __init__(
        self, ctx: Any, case_dir: Path, *, explain: Callable[..., list[str]] = explain_files
    ) -> None:
        """``explain``: :func:`~computer_env.osworld.scoring.explain.explain_files` or a stand-in with
        its signature (e.g. the scoring process's)."""
        self.ctx = ctx
        self.explain = explain
        self.case_dir = Path(case_dir)
        self.work = Path(ctx.task_cache_dir)
        self._before: dict[Path, tuple[int, int]] = {}
        self.screenshot: str | None = None

    def _files(self) -> dict[Path, tuple[int, int]]:
        out = {}
        for path in self.work.rglob("*"):
            try:
                if path.is_file():
                    st = path.stat()
                    out[path] = (st.st_mtime_ns, st.st_size)
            except OSError:
                continue
        return out

    def before(self) -> None:
        """The screen as the agent left it (before postconfig), and the work folder's files."""
        try:
            atomic_write_bytes(self.case_dir / SCORING_SCREEN, self.ctx.client.screenshot())
            self.screenshot = SCORING_SCREEN
        except Exception as exc:  # noqa: BLE001 - evidence must never change the outcome
            log.warning("no screenshot at scoring time: %s", exc)
        self._before = self._files()

    def after(
        self, detail: list[dict[str, Any]], options: list[dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        """Copy what the evaluator read into ``scored/``, explain differences, write
        ``scored.json``; return its content."""
        now = self._files()
        files: list[dict[str, Any]] = []
        kept: dict[Path, str] = {}
        for path, stamp in sorted(now.items()):
            role, func = self._role(path, detail)
            if role is None and self._before.get(path) == stamp:
                continue  # a setup file the evaluator did not read
            role = role or "other"
            if stamp[1] > KEEP_MAX_BYTES:
                files.append(
                    {
                        "role": role,
                        "path": None,
                        "source": str(path),
                        "bytes": stamp[1],
                        "func": func,
                        "note": "too large to keep",
                    }
                )
                continue
            rel = Path("scored") / role / path.relative_to(self.work)
            try:
                atomic_write_bytes(self.case_dir / rel, path.read_bytes())
            except OSError as exc:
                log.warning("cannot keep %s: %s", path, exc)
                continue
            kept[path] = rel.as_posix()
            files.append(
                {
                    "role": role,
                    "path": rel.as_posix(),
                    "source": str(path),
                    "bytes": stamp[1],
                    "func": func,
                }
            )
        data = {
            "screenshot": self.screenshot,
            "files": files,
            "explanations": self._explain(detail, kept, options or []),
        }
        try:
            atomic_write_json(self.case_dir / SCORED_JSON, data)
        except OSError as exc:
            log.warning("cannot write %s: %s", SCORED_JSON, exc)
        return data

    @staticmethod
    def _role(path: Path, detail: list[dict[str, Any]]) -> tuple[str | None, str | None]:
        text = str(path)
        for d in detail:
            for role in ("result", "expected"):
                if text in str(d.get(role) or ""):
                    return role, d.get("func")
        return None, None

    def _explain(
        self, detail: list[dict[str, Any]], kept: dict[Path, str], options: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        out = []
        for i, d in enumerate(detail):
            result = next((p for p in kept if str(p) in str(d.get("result") or "")), None)
            expected = next((p for p in kept if str(p) in str(d.get("expected") or "")), None)
            if result is None or expected is None:
                continue
            opts = d.get("options") or (options[i] if i < len(options) else {}) or {}
            lines = self.explain(result, expected, func=str(d.get("func") or ""), options=opts)
            out.append(
                {
                    "func": d.get("func"),
                    "score": d.get("score"),
                    "result": kept[result],
                    "expected": kept[expected],
                    "lines": lines,
                }
            )
        return out
