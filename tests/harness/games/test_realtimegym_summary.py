"""The RealtimeGym score table of the summary (per game and load, per pacing setting) from
result records, and the per-budget collection of token pacing."""

from __future__ import annotations

import csv
import io
import subprocess
import sys
from pathlib import Path

from fixtures.cases.records.results import TaskResult
from fixtures.report.report_html import summary_html
from fixtures.report.summary import format_summary, summarize, summary_csv
from fixtures.report.tables.game_table import game_tables, pacing_label
from tests.harness.helpers.suite import ROOT


def _result(
    game: str,
    load: str,
    seed: int,
    raw: float,
    bound: float,
    *,
    tokens: int | None = None,
    outcome: str = "passed",
) -> TaskResult:
    score = raw / bound
    case_id = f"{game}/{load}/seed{seed}" + (f"/tokens{tokens}" if tokens else "")
    return TaskResult(
        benchmark="realtimegym",
        case_id=case_id,
        domain=game,
        group=f"{game}/{load}",
        task_id=case_id.split("/", 1)[1],
        outcome=outcome,  # type: ignore[arg-type]
        score=score if outcome in ("passed", "failed") else None,
        raw_score=raw if outcome in ("passed", "failed") else None,
        evaluator=[
            {
                "bound": bound,
                "expert": bound,
                "ceiling": bound + 3,
                "raw_score": raw,
                "load": load,
                "pacing": "turn",
                "turn_seconds": None,
                "turn_tokens": tokens,
            }
        ],
    )


def test_table_per_budget_with_raw_and_normalised() -> None:
    results = [
        _result("freeway", "E", 0, 80, 87, tokens=4096),
        _result("freeway", "E", 1, 0, 89, tokens=4096),
        _result("snake", "H", 0, 9, 27, tokens=4096),
        _result("snake", "H", 0, 18, 27, tokens=8192),
        _result("freeway", "E", 0, 87, 87, tokens=8192),
        _result("overcooked", "M", 0, 0, 56, tokens=8192, outcome="unscored"),
    ]
    tables = game_tables(results)
    assert [t.pacing for t in tables] == ["turn, 4096 tokens a turn", "turn, 8192 tokens a turn"]
    low, high = tables
    fw = low.cells["freeway"]["E"]
    assert fw.n == 2 and fw.mean_raw == 40 and fw.bound == 88
    assert abs(fw.mean_score - (80 / 87) / 2) < 1e-9
    assert low.cells["snake"]["H"].mean_score == 1 / 3 and high.cells["snake"]["H"].mean_raw == 18
    assert "overcooked" not in high.cells  # unscored cases never enter a mean
    assert set(low.by_load) == {"E", "H"} and low.by_load["E"].mean_raw is None
    summary = summarize(results, reference_policy=False)
    text = format_summary(summary)
    assert "pacing: turn, 4096 tokens a turn" in text
    assert "raw 40 (expert 88, ceiling 91) → 46.0% n=2" in text
    rows = [
        r for r in csv.DictReader(io.StringIO(summary_csv(summary))) if r["level"] == "game_load"
    ]
    assert {(r["name"], r["pacing"]) for r in rows} >= {
        ("freeway/E", "turn, 4096 tokens a turn"),
        ("snake/H", "turn, 8192 tokens a turn"),
        ("all/E", "turn, 4096 tokens a turn"),
    }
    assert next(r for r in rows if r["name"] == "freeway/E")["mean_raw"] == "40.0"
    page = summary_html(summary)
    assert "RealtimeGym per load — pacing: turn, 4096 tokens a turn" in page
    assert (
        "<tr><td>freeway</td><td>raw 40 (expert 88, ceiling 91) → 46.0% n=2</td>"
        "<td>—</td><td>—</td></tr>"
    ) in page


def test_a_player_above_the_expert_shows_above_one() -> None:
    """raw / expert is never clipped: beating the expert shows as more than 100%."""
    results = [_result("overcooked", "E", 0, 140, 112), _result("snake", "H", 6, 25, 20)]
    (table,) = game_tables(results)
    assert table.cells["overcooked"]["E"].mean_score == 1.25
    assert table.cells["snake"]["H"].mean_score == 1.25
    text = format_summary(summarize(results, reference_policy=False))
    assert "raw 140 (expert 112, ceiling 115) → 125.0% n=1" in text


def test_game_table_html_escapes_game_names() -> None:
    summary = summarize([_result("<b>x</b>", "E", 0, 1, 2)], reference_policy=False)
    page = summary_html(summary)
    assert "<td>&lt;b&gt;x&lt;/b&gt;</td>" in page and "<b>x</b>" not in page


def test_pacing_labels() -> None:
    assert pacing_label({"pacing": "turn"}) == "turn"
    assert pacing_label({"pacing": "realtime", "turn_seconds": 1.0}) == "realtime, 1 s a turn"
    assert pacing_label({"pacing": "wallclock", "turn_seconds": 0.5}) == "wallclock, 0.5 s a turn"
    assert pacing_label({"pacing": "turn", "turn_tokens": 8192}) == "turn, 8192 tokens a turn"


def test_several_token_budgets_collect_one_case_per_budget(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "tests/realtimegym",
            "--collect-only",
            "-q",
            "--results-dir",
            str(tmp_path),
            "-o",
            f"cache_dir={tmp_path / 'cache'}",
            "--games",
            "freeway,overcooked",
            "--loads",
            "E",
            "--seeds",
            "0,1",
            "--turn-tokens",
            "8192,4096",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    ids = sorted(
        line.split("[", 1)[1].rstrip("]")
        for line in proc.stdout.splitlines()
        if "::test_realtimegym[" in line
    )
    assert ids == sorted(
        f"{case}/tokens{b}"
        for b in (4096, 8192)
        for case in ("freeway/E/seed0", "freeway/E/seed1", "overcooked/E/seed0")
    )
