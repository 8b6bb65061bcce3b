"""The case runner drives any benchmark through one protocol (``fixtures.cases.benchmark``) and
hands it a frozen per-case context (``fixtures.cases.context.CaseContext``) instead of setting
the case's events, work folder and exploit on the worker's state around each case.

The first test plugs a fourth benchmark into the runner in a real child pytest run (real
plugin, real worker state, real result files); the second is an ``--audit`` run of one
RealtimeGym seed, where the exploit must be the one that plays."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from holo_agent.reference.exploits import model_name
from tests.harness.helpers.audit_suite import audit_run

CONFTEST = '''
import dataclasses, json, os
from pathlib import Path

import pytest

from computer_env.errors import NetworkError
from fixtures.cases.case import CaseRunner
from fixtures.cases.context import CaseContext, CaseInfo
from fixtures.cases.outcomes import CaseSkipped


class Probe:
    """A benchmark of this test: ``how`` says how its one attempt ends."""

    watched = True

    def __init__(self, how):
        self.how = how
        self.info = CaseInfo(benchmark="synthetic", case_id=f"probe/{how}", domain="probe",
                             task_id=how, instruction=f"end by {how}")

    def unavailable(self):
        return "no such thing here" if self.how == "unavailable" else None

    def play(self, case, attempt, case_dir):
        worker_fields = {f.name for f in dataclasses.fields(case.worker)}
        try:
            case.work_id = "changed"
            frozen = False
        except dataclasses.FrozenInstanceError:
            frozen = True
        case.phase("setup", "probing")
        seen = {"type": type(case).__name__, "work_id": case.work_id, "exploit": case.exploit,
                "attempt": case.attempt_number, "threshold": case.threshold,
                "events": case.events is not None, "on_step": case.on_step is not None,
                "frozen": frozen, "worker_fields": sorted(worker_fields)}
        Path(os.environ["SEEN_DIR"], f"{self.how}.json").write_text(json.dumps(seen))
        (case_dir / "played.txt").write_text("played")
        if self.how == "skip":
            raise CaseSkipped("the probe cannot run here")
        if self.how == "infra":
            raise NetworkError("the probe's network went down")
        attempt.score = 1.0 if self.how == "pass" else 0.25


@pytest.fixture
def probe_case(request, worker_state):
    return CaseRunner(request, worker_state, Probe(request.param))
'''

PROBE = """
import pytest


@pytest.mark.parametrize("probe_case", ["pass", "fail", "skip", "infra", "unavailable"],
                         indirect=True)
def test_probe(probe_case):
    probe_case.run()
"""


def test_a_new_benchmark_runs_through_the_protocol_with_a_frozen_context(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_probe.py").write_text(PROBE)
    seen_dir = tmp_path / "seen"
    seen_dir.mkdir()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "test_probe.py",
            "-p",
            "fixtures.run.plugin",
            "-q",
            "-n",
            "0",
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            "--results-dir",
            str(tmp_path / "res"),
            "--run",
            "probe",
            "--infra-reruns",
            "0",
            "-rsxX",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        start_new_session=True,
        env={**os.environ, "SEEN_DIR": str(seen_dir)},
    )
    out = proc.stdout + proc.stderr
    assert "1 passed" in out and "1 failed" in out and "2 skipped" in out and "1 xfailed" in out, (
        out[-3000:]
    )
    assert "no such thing here" in out and "infra: network" in out, out[-3000:]
    played = {p.stem: json.loads(p.read_text()) for p in seen_dir.glob("*.json")}
    assert sorted(played) == ["fail", "infra", "pass", "skip"]  # "unavailable" never played
    for how, seen in played.items():
        assert seen["type"] == "CaseContext" and seen["frozen"], seen
        assert seen["work_id"] == f"{how}/probe-attempt-1", seen
        assert (seen["exploit"], seen["attempt"], seen["threshold"]) == (None, 1, 1.0), seen
        assert seen["events"] and seen["on_step"], seen
        assert not {"events", "work_id", "exploit"} & set(seen["worker_fields"]), seen
    results = {
        p.parent.name: json.loads(p.read_text())
        for p in (tmp_path / "res" / "probe").rglob("result.json")
    }
    outcomes = {case: r["outcome"] for case, r in results.items()}
    assert outcomes == {
        "pass": "passed",
        "fail": "failed",
        "skip": "skipped",
        "infra": "unscored",
    }, outcomes
    assert "score 0.25 < threshold 1" in results["fail"]["message"]
    assert results["infra"]["infra_category"] == "network"


def test_audit_plays_the_exploit_on_a_game(tmp_path: Path) -> None:
    """Under ``--audit`` a RealtimeGym case is played by the exploit's endpoint (the worker's
    exploit was only ever set for watched cases, so games played the reference player)."""
    audit = audit_run(
        tmp_path,
        ["do-nothing", "input-flood"],
        "--games",
        "freeway",
        "--loads",
        "E",
        "--seeds",
        "0",
        target="tests/realtimegym",
        timeout=900,
    )
    results = audit.results()
    assert set(results) == {
        ("freeway/E/seed0", "do-nothing"),
        ("freeway/E/seed0", "input-flood"),
    }, audit.run.output[-3000:]
    for (_, exploit), r in results.items():
        assert r["versions"]["model"] == model_name(exploit), r["versions"]
        assert r["outcome"] != "unscored", r["message"]
    assert audit.harness_flaws() == [], audit.harness_flaws()
