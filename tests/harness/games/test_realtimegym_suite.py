"""``pytest tests/realtimegym`` end to end: with RealtimeGym installed, the 9 game x load
combinations play through the real agent loop and the reference endpoint at the default pass
threshold and leave replays and a summary with raw and normalised scores per game and load and
the pacing; without it, every case skips with one clear reason. Bad RealtimeGym options are
usage errors that name the option."""

from __future__ import annotations

import csv
import io
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.helpers.parsed_settings import settings_of
from tests.harness.helpers.suite import ROOT, run_suite

SHADOW = str(ROOT / "tests" / "harness" / "helpers" / "no_realtimegym")


def test_suite_skips_cleanly_without_realtimegym(tmp_path: Path) -> None:
    run = run_suite(
        tmp_path,
        "rtg-none",
        "--seeds",
        "0",
        target="tests/realtimegym",
        env={"PYTHONPATH": SHADOW},
        timeout=300,
    )
    assert run.rc == 0, run.output[-3000:]
    assert "9 skipped" in run.output, run.output[-2000:]
    reasons = {
        line.split("] ", 1)[-1] for line in run.output.splitlines() if line.startswith("SKIPPED")
    }
    assert len(reasons) == 1 and "RealtimeGym is not usable" in reasons.pop()


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (("--turn-seconds", "0"), "--turn-seconds"),
        (("--pacing", "realtime", "--turn-seconds", "-1"), "--turn-seconds"),
        (("--seeds", "8"), "--seeds"),
        (("--seeds", "0-9"), "--seeds"),
        (("--games", "pong"), "--games"),
        (("--loads", "X"), "--loads"),
        (("--pacing", "fast"), "--pacing"),
        (("--pacing", "realtime", "--turn-tokens", "100"), "--turn-tokens"),
        (("--turn-tokens", "4096,lots"), "--turn-tokens"),
        (("--turn-tokens", "0"), "--turn-tokens"),
    ],
)
def test_bad_game_options_are_usage_errors(args: tuple[str, ...], option: str) -> None:
    """Through the suite's real option parser and ``Settings``, in process (the run's own
    start-up check: the next test)."""
    with pytest.raises(pytest.UsageError) as error:
        settings_of(*args)
    assert option in str(error.value), str(error.value)


def test_a_bad_game_option_stops_the_run_at_start_up(tmp_path: Path) -> None:
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
            "pong",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    text = proc.stdout + proc.stderr
    assert proc.returncode == 4, text[-2000:]  # a usage error, before anything runs
    error = next((line for line in text.splitlines() if line.startswith("ERROR:")), "")
    assert error.startswith("ERROR: --games:") and "Traceback" not in text, text[-2000:]
    assert not list(tmp_path.rglob("result.json"))


@pytest.mark.parametrize("pacing", ["turn", "realtime"])
def test_all_nine_game_load_combinations_play_and_summarise(tmp_path: Path, pacing: str) -> None:
    """At the default threshold. Realtime pacing charges the model's own seconds: 2 s a turn
    is far above the reference endpoint's latency even on a loaded 2-core machine."""
    from computer_env.realtimegym import realtimegym_available

    ok, why = realtimegym_available()
    if not ok:
        pytest.skip(why)
    run = run_suite(
        tmp_path,
        f"rtg-{pacing}",
        "--seeds",
        "0",
        "-n",
        "1",
        "--pacing",
        pacing,
        "--turn-seconds",
        "2",
        target="tests/realtimegym",
        timeout=1200,
    )
    assert run.rc == 0, run.output[-3000:]
    results = run.results()
    assert len(results) == 9
    assert {r["group"] for r in results.values()} == {
        f"{g}/{x}" for g in ("freeway", "snake", "overcooked") for x in "EMH"
    }
    for r in results.values():
        ev = r["evaluator"][0]
        assert r["outcome"] == "passed" and 0.5 <= r["score"] <= 1.0
        assert r["raw_score"] == ev["raw_score"] and ev["bound"] > 0 and ev["pacing"] == pacing
        assert ev["bound"] == ev["expert"] <= ev["ceiling"]
        assert r["score"] == pytest.approx(r["raw_score"] / ev["expert"])  # never clipped
        folder = run.run_dir / r["artifact_dir"]
        assert (folder / "replay.html").is_file() and list(folder.glob("step_*.png"))
    summary = run.summary
    assert summary["reference_policy"] is True
    (table,) = summary["games"]
    label = "turn" if pacing == "turn" else "realtime, 2 s a turn"
    assert table["pacing"] == label and set(table["by_load"]) == set("EMH")
    for game in ("freeway", "snake", "overcooked"):
        for load in "EMH":
            cell = table["cells"][game][load]
            assert cell["n"] == 1 and cell["mean_raw"] is not None and cell["bound"] > 0
    rows = list(csv.DictReader(io.StringIO((run.run_dir / "summary.csv").read_text())))
    game_rows = [row for row in rows if row["level"] == "game_load"]
    assert {row["name"] for row in game_rows} >= {"freeway/E", "snake/H", "all/M"}
    assert all(
        row["pacing"] == label and row["mean_raw"] and row["bound"]
        for row in game_rows
        if not row["name"].startswith("all/")
    )
    assert f"pacing: {label}" in run.output and "raw" in run.output
    print({cid: (r["raw_score"], round(r["score"], 3)) for cid, r in sorted(results.items())})
