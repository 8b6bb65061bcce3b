"""Faults of OSWorld's readers on what the agent left, in a real scoring process: a death by a
fault in C (SIGABRT) is EvaluatorAborted, made the agent's 0 (evaluator_crash) when the same
evaluation runs cleanly on the initial state (the control) and unscored when it dies there
too; a metric on a result far larger than the expected file gets a CPU budget that scales with
the expected file (SIGXCPU: EvaluatorTimedOut, the agent's 0), not the 20-minute limit."""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from computer_env.errors import EvaluatorTimedOut
from computer_env.osworld.scoring.process import EvaluatorAborted, ScorerFailed
from computer_env.osworld.scoring.process import ScoringProcess as Scorer
from computer_env.osworld.scoring.process._limits import budget_s
from tests.harness.helpers.suite import CHAOS, ROOT, run_suite, task_list_file

HARNESS = str(ROOT)
JOBS = "tests.harness.helpers.scorer_fault_jobs"


@pytest.fixture
def scorer(monkeypatch: pytest.MonkeyPatch) -> Iterator[Scorer]:
    monkeypatch.setenv("PYTHONPATH", HARNESS)  # the jobs' package, in the scoring process
    if HARNESS not in sys.path:
        sys.path.insert(0, HARNESS)
    s = Scorer(timeout=60)
    yield s
    s.close()


def test_a_fault_in_c_reading_the_agents_state_is_an_abort_elsewhere_the_environments(
    scorer: Scorer,
) -> None:
    with pytest.raises(EvaluatorAborted, match="killed by SIGABRT") as info:
        scorer.call(f"{JOBS}:abort", "the evaluation", reads_agent_state=True)
    assert info.value.signal_name == "SIGABRT"
    with pytest.raises(ScorerFailed, match="killed by SIGABRT") as other:
        scorer.call(f"{JOBS}:abort", "the setup")
    assert not isinstance(other.value, EvaluatorAborted)


def test_the_budget_scales_with_the_expected_file_and_spares_alike_sizes(tmp_path: Path) -> None:
    big, small, alike = tmp_path / "big", tmp_path / "small", tmp_path / "alike"
    big.write_bytes(b"x" * (16 << 20))
    small.write_bytes(b"x" * (1 << 20))
    alike.write_bytes(b"x" * (12 << 20))
    assert budget_s(str(big), str(small)) == pytest.approx(60.0 + 30.0)
    assert budget_s(str(big), str(alike)) is None  # not far larger
    assert budget_s(str(small), "x" * 10) is None  # no file: no budget
    assert budget_s(str(small), str(tmp_path / "none")) is None


def test_a_metric_on_a_far_larger_result_is_stopped_at_its_budget(
    scorer: Scorer, tmp_path: Path
) -> None:
    result, expected = tmp_path / "result.xml", tmp_path / "expected.xml"
    result.write_bytes(b"<r>" + b"x" * (16 << 20) + b"</r>")
    expected.write_bytes(b"<r>x</r>")
    assert (
        scorer.call(
            f"{JOBS}:spin_on",
            "the evaluation",
            str(expected),
            str(expected),
            reads_agent_state=True,
        )
        == "no budget"
    )
    t0 = time.monotonic()
    with pytest.raises(EvaluatorTimedOut, match="CPU budget"):
        scorer.call(
            f"{JOBS}:spin_on", "the evaluation", str(result), str(expected), reads_agent_state=True
        )
    assert time.monotonic() - t0 < 20  # its budget (1 s here), not the scorer's 60 s
    assert (
        scorer.call(f"{JOBS}:spin_on", "after", str(expected), str(expected)) == "no budget"
    )  # a fresh process, no limit left


@pytest.mark.parametrize(
    "mode, outcome",
    [("CHAOS_EVAL_ABORT", "failed"), ("CHAOS_EVAL_ABORT_ALWAYS", "error")],
    ids=["clean-on-initial-state", "aborts-there-too"],
)
@pytest.mark.desktop
@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("bwrap"),
    reason="the local sandbox needs root and bubblewrap",
)
def test_an_abort_on_the_agents_state_is_its_zero_only_when_the_initial_state_scores_cleanly(
    tmp_path: Path, mode: str, outcome: str
) -> None:
    task = "os-create-report-file"
    run = run_suite(
        tmp_path,
        "abort",
        "--task-list",
        str(task_list_file(tmp_path, {"os": [task]})),
        "-n0",
        *CHAOS,
        "--infra-rerun-delay",
        "0",
        env={"PYTHONPATH": HARNESS, mode: task},
    )
    (r,) = run.results().values()
    if outcome == "failed":  # the control ran cleanly: the agent's 0, at the first attempt
        assert (r["outcome"], r["score"], r["attempts"]) == ("failed", 0.0, 1), r["message"]
        assert r["failure_category"] == "evaluator_crash", r["message"]
        assert "SIGABRT" in r["message"] and "ran cleanly" in r["message"]
    else:  # it aborts on the initial state too: never the agent's
        assert r["score"] is None and r.get("failure_category") is None, r
        assert r["outcome"] not in ("passed", "failed"), r
