"""The harness card of a real run: a child ``pytest tests/osworld`` of one built-in task (``-k``,
one xdist worker, a real local desktop, the real reference endpoint) writes ``card.json``;
``summary.json`` carries the same card; the terminal header, the summary and the report's first
screen show its key lines and the OSWorld-Verified verdict; comparing the run with itself under
``--strict`` is allowed."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from computer_env.osworld.builtin import BUILTIN_ROOT
from tests.harness.helpers.suite import ROOT, run_suite

pytestmark = pytest.mark.desktop

CASE = "os/os-create-report-file"


def test_a_builtin_run_writes_its_card_and_the_summary_carries_it(tmp_path: Path) -> None:
    run = run_suite(
        tmp_path,
        "carded",
        "-k",
        "os-create-report-file",
        "-n",
        "1",
        "-v",
        "--temperature",
        "0.4",
        "--max-steps",
        "15",
        timeout=900,
    )
    assert run.rc == 0, run.output[-4000:]
    assert set(run.results()) == {CASE}
    card = json.loads((run.run_dir / "card.json").read_text())
    assert card == run.summary["card"]
    assert card["complete"] is True and card["run"] == "carded"
    assert card["model"]["plays"] == "reference" and card["model"]["cases_by_model"] == {
        "reference-policy": 1
    }
    assert (card["sampling"]["temperature"], card["sampling"]["max_steps"]) == (0.4, 15)
    task_file = BUILTIN_ROOT / "examples" / f"{CASE}.json"
    sha = hashlib.sha256(task_file.read_bytes()).hexdigest()
    assert card["tasks"]["files"] == {CASE: sha[:16]}
    assert card["tasks"]["benchmarks"] == {"osworld": 1} and card["tasks"]["scored_tasks"] == 1
    assert card["environment"]["desktop"] == {"embedded desktop": 1}
    assert card["environment"]["providers"] == {"local": 1}
    assert card["versions"]["harness_commit"] not in ("", "unknown")
    verified = card["osworld_verified"]
    assert verified["comparable"] is False and verified["budget"] == 15
    assert any("reference endpoint played" in r for r in verified["reasons"])
    assert any("embedded desktop" in r for r in verified["reasons"])
    # the header (before any case), the summary and the report's first screen
    header = run.output[: run.output.index("benchmark summary")]
    assert "holo-bench: card: sampling temperature 0.4" in header
    assert "holo-bench: card: model the reference endpoint" in header
    summary = run.output[run.output.index("benchmark summary") :]
    assert verified["line"] in summary and "card: tasks built-in test_all" in summary
    report = (run.run_dir / "report.html").read_text()
    assert "Harness card: how these scores were made" in report
    assert "OSWorld-Verified: NOT comparable" in report
    strict = subprocess.run(
        [
            sys.executable,
            "-m",
            "fixtures.report.compare",
            str(run.run_dir),
            str(run.run_dir),
            "--strict",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert strict.returncode == 0, strict.stderr
    assert "Comparable: same task content" in strict.stdout
