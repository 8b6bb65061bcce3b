"""``pytest tests/realtimegym`` end to end: with RealtimeGym installed, the 9 game x load
combinations play through the real agent loop and the reference endpoint and leave replays and a
per-group summary; without it, every case skips with one clear reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness.suite import ROOT, run_suite

SHADOW = str(ROOT / "tests" / "harness" / "no_realtimegym")


def test_suite_skips_cleanly_without_realtimegym(tmp_path: Path) -> None:
    run = run_suite(tmp_path, "rtg-none", "--seeds", "0", target="tests/realtimegym",
                    env={"PYTHONPATH": SHADOW}, timeout=300)
    assert run.rc == 0, run.output[-3000:]
    assert "9 skipped" in run.output, run.output[-2000:]
    reasons = {line.split("] ", 1)[-1] for line in run.output.splitlines()
               if line.startswith("SKIPPED")}
    assert len(reasons) == 1 and "RealtimeGym is not usable" in reasons.pop()


@pytest.mark.parametrize("pacing", ["turn", "realtime"])
def test_all_nine_game_load_combinations_play_and_summarise(tmp_path: Path, pacing: str) -> None:
    from computer_env.realtimegym import realtimegym_available

    ok, why = realtimegym_available()
    if not ok:
        pytest.skip(why)
    run = run_suite(tmp_path, f"rtg-{pacing}", "--seeds", "0", "-n", "2", "--pacing", pacing,
                    "--turn-seconds", "0.1", "--game-pass-threshold", "0",
                    target="tests/realtimegym", timeout=1200)
    assert run.rc == 0, run.output[-3000:]
    results = run.results()
    assert len(results) == 9
    assert {r["group"] for r in results.values()} == {
        f"{g}/{x}" for g in ("freeway", "snake", "overcooked") for x in "EMH"}
    for r in results.values():
        assert r["outcome"] == "passed" and 0.0 <= r["score"] <= 1.0
        assert r["raw_score"] is not None and r["evaluator"][0]["pacing"] == pacing
        folder = run.run_dir / r["artifact_dir"]
        assert (folder / "replay.html").is_file() and list(folder.glob("step_*.png"))
    summary = run.summary
    assert set(summary["by_group"]) == {r["group"] for r in results.values()}
    assert summary["reference_policy"] is True
    print({cid: (r["raw_score"], round(r["score"], 3)) for cid, r in sorted(results.items())})
