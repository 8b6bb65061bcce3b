"""The run's critical path: its wall-clock beside the agents' turns over the workers, and what
the workers waited for, from result files (as ``summary.json``, the terminal and the report show
it). Pure arithmetic over real ``TaskResult`` models; the end-to-end figures are checked by the
suite runs (``test_setup_ahead_suite.py``) and printed by ``scripts/critical_path.py``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from fixtures.cases.records.critical_path import critical_path, format_critical_path
from fixtures.cases.records.harness_time import HarnessTimes
from fixtures.cases.records.results import TaskResult, Timings
from fixtures.report.report_html import summary_html
from fixtures.report.summary import format_summary, summarize

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _case(
    name: str,
    *,
    turns: int,
    setup_wait: float | None,
    score_wait: float | None,
    ahead: bool = False,
    finished: datetime = NOW,
) -> TaskResult:
    # each turn: the model 1.5 s, the harness 0.25 s; the agent's start/end 0.5 s besides
    agent = turns * 1.75 + 0.5
    timings = Timings(
        setup_s=2.0,
        settle_s=1.0,
        agent_s=agent,
        eval_s=0.5,
        total_s=(setup_wait or 3.0) + agent + (score_wait or 0.0),
        setup_wait_s=setup_wait,
        score_wait_s=score_wait,
        prepared_ahead=ahead or None,
    )
    return TaskResult(
        benchmark="osworld",
        case_id=f"os/{name}",
        domain="os",
        task_id=name,
        outcome="passed",
        score=1.0,
        timings=timings,
        finished_at=finished,
        harness=HarnessTimes(turns=turns, model_s=1.5, non_model_s=0.25),
    )


def test_the_split_adds_up_to_the_wall_clock_per_worker() -> None:
    results = [
        _case("a", turns=4, setup_wait=3.0, score_wait=1.0),
        _case("b", turns=4, setup_wait=0.1, score_wait=1.0, ahead=True),
    ]
    c = critical_path(results, wall_s=24.0, workers=2)
    assert c is not None
    assert c.agent_turns_s == pytest.approx(14.0) and c.ideal_s == pytest.approx(7.0)
    assert c.ratio == pytest.approx(24.0 / 7.0, abs=0.01)
    assert c.model_s == pytest.approx(6.0) and c.turn_harness_s == pytest.approx(1.0)
    assert c.setup_s == pytest.approx(1.55, abs=0.06) and c.scoring_s == pytest.approx(1.0)
    assert c.agent_other_s == pytest.approx(0.5) and c.prepared_ahead == 1
    busy = c.model_s + c.turn_harness_s + c.setup_s + c.scoring_s + c.agent_other_s
    assert c.idle_s == pytest.approx(24.0 - busy, abs=0.1)
    lines = format_critical_path(c)
    assert lines[0].startswith("critical path: wall-clock 24.0 s = 3.43x the ideal 7.0 s")
    assert "1 of 2 cases set up ahead" in lines[0] and "idle" in lines[1]


def test_older_results_and_reused_cases() -> None:
    old = _case("old", turns=2, setup_wait=None, score_wait=None)  # before these fields
    reused = _case(
        "reused", turns=9, setup_wait=1.0, score_wait=1.0, finished=NOW - timedelta(days=1)
    )
    c = critical_path([old, reused], wall_s=10.0, workers=4, started_at=NOW - timedelta(hours=1))
    assert c is not None and c.cases == 1 and c.workers == 1  # no more workers than cases
    assert c.setup_s == pytest.approx(3.0)  # setup_s + settle_s
    assert c.scoring_s == pytest.approx(0.0)  # what total_s leaves after set-up and agent
    assert critical_path([old], wall_s=None, workers=1) is None
    assert critical_path([], wall_s=5.0, workers=1) is None


def test_the_summary_terminal_and_report_show_it() -> None:
    results = [_case("a", turns=4, setup_wait=0.2, score_wait=1.0, ahead=True)]
    summary = summarize(results, reference_policy=True)
    assert summary.harness is not None
    path = critical_path(results, wall_s=12.0, workers=1)
    summary = summary.model_copy(
        update={"harness": summary.harness.model_copy(update={"critical_path": path})}
    )
    assert "critical path: wall-clock 12.0 s = 1.71x the ideal 7.0 s" in format_summary(summary)
    assert "Critical path: wall-clock 12.0 s = 1.71x the ideal 7.0 s" in summary_html(summary)
    assert summary.model_validate_json(summary.model_dump_json()) == summary
