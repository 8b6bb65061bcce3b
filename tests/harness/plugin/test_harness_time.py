"""Where the time goes: each model turn records the harness's own seconds (screenshot, action,
settle, record), each result gets its ``harness`` section with the host's load, and the summary
(JSON, terminal, HTML) shows them beside the model's latency and says when the host was
overloaded. The agent runs against the real reference endpoint (HTTP on loopback) and an
in-memory env whose action and settle take known times."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from computer_env.base import InputEvent, StepResult
from fixtures.cases.attempt import Attempt
from fixtures.cases.records import harness_time
from fixtures.cases.records.harness_time import HarnessTimes, case_times
from fixtures.cases.records.results import TaskResult, read_result, write_result
from fixtures.cases.records.run_time import summarize_harness
from fixtures.report.report_html import summary_html
from fixtures.report.summary import format_summary, summarize
from holo_agent import HoloComputerAgent, StepRecord, TurnTimes
from holo_agent.recorder import Recorder
from holo_agent.records import read_traj
from holo_agent.reference import ReferenceEndpoint
from tests.harness.helpers.memenv import MemoryEnv
from tests.harness.helpers.polling import scaled

TASK = "Click OK twice, then say done."
SOLUTION = [
    {
        "note": None,
        "thought": "t",
        "tool_call": {"tool_name": "click", "element": "OK", "x": 500, "y": 500},
    },
    {
        "note": None,
        "thought": "t",
        "tool_call": {"tool_name": "click", "element": "OK", "x": 510, "y": 500},
    },
    {"note": None, "thought": "t", "tool_call": {"tool_name": "answer", "content": "done"}},
]


class SlowEnv(MemoryEnv):
    """Each step spends 0.05 s acting and 0.1 s settling, and says so in ``info``."""

    def step(self, event: InputEvent) -> StepResult:
        time.sleep(0.05)
        result = super().step(event)
        time.sleep(0.1)
        return StepResult(output=result.output, info={**result.info, "settle_s": 0.1})


def _run(tmp_path: Path) -> tuple[list[StepRecord], Attempt]:
    attempt = Attempt(number=1)
    recorder = Recorder(tmp_path)
    with ReferenceEndpoint({TASK: SOLUTION}) as ep:
        agent = HoloComputerAgent(
            ep.url, "reference-policy", recorder=recorder, on_step=attempt.observe_step
        )
        traj = agent.run(SlowEnv(TASK, 1280, 800), max_steps=5)
    attempt.observe_trajectory(traj)
    return traj.steps, attempt


def test_every_turn_records_where_its_harness_time_went(tmp_path: Path) -> None:
    steps, attempt = _run(tmp_path)
    acted = [r.harness for r in steps[:2]]
    for t in acted:
        assert t is not None
        assert t.settle_s == pytest.approx(0.1)
        assert 0.05 <= t.action_s < scaled(0.5)
        assert 0 < t.observe_s < scaled(1) and 0 < t.record_s < scaled(1)
        assert t.non_model_s == pytest.approx(t.observe_s + t.action_s + t.settle_s + t.record_s)
    answer = steps[2].harness
    assert answer is not None and answer.action_s == 0 and answer.settle_s == 0
    on_disk = read_traj(tmp_path)
    assert [r.harness is not None for r in on_disk] == [True, True, True]
    h = attempt.harness
    assert h is not None and h.turns == 3
    assert h.settle_s == pytest.approx(0.2 / 3, abs=1e-3)
    assert h.non_model_s == pytest.approx(
        h.observe_s + h.action_s + h.settle_s + h.record_s, abs=1e-3
    )
    assert h.model_s > 0 and h.load_mean is not None and h.cores >= 1


def _result(case: str, harness: HarnessTimes | None) -> TaskResult:
    return TaskResult(
        benchmark="osworld",
        case_id=case,
        domain="os",
        task_id=case,
        outcome="passed",
        score=1.0,
        harness=harness,
    )


def test_result_json_keeps_its_own_section(tmp_path: Path) -> None:
    _, attempt = _run(tmp_path / "traj")
    result = TaskResult(
        benchmark="osworld",
        case_id="os/a",
        domain="os",
        task_id="a",
        outcome="passed",
        score=1.0,
        **{
            k: v for k, v in attempt.result_fields().items() if k in ("harness", "timings", "steps")
        },
    )
    write_result(tmp_path, result)
    back = read_result(tmp_path)
    assert back is not None and back.harness == attempt.harness


def _times(turns: int, settle: float, load: float) -> HarnessTimes:
    return HarnessTimes(
        turns=turns,
        model_s=1.0,
        non_model_s=settle + 0.03,
        settle_s=settle,
        action_s=0.02,
        observe_s=0.01,
        record_s=0.0,
        cores=2,
        load_mean=load,
        load_max=load + 1,
    )


def test_summary_weights_cases_by_turns_and_says_so_in_every_view() -> None:
    results = [
        _result("os/a", _times(3, 0.1, 1.0)),
        _result("os/b", _times(1, 0.5, 1.0)),
        _result("os/c", None),
    ]
    summary = summarize(results, reference_policy=True)
    h = summary.harness
    assert h is not None and h.turns == 4 and h.cases == 2
    assert h.settle_s == pytest.approx(0.2) and h.non_model_s == pytest.approx(0.23)
    assert not h.overloaded
    text = format_summary(summary)
    assert "time per model turn (4 turns): model 1.000 s, harness 0.230 s (settle 0.200" in text
    assert "OVERLOADED" not in text
    assert "model 1.000 s · harness 0.230 s (settle 0.200" in summary_html(summary)
    assert summary.model_validate_json(summary.model_dump_json()) == summary


def test_an_overloaded_host_is_named_in_the_terminal_and_the_summary() -> None:
    results = [_result("os/a", _times(2, 0.1, 17.0)), _result("os/b", _times(2, 0.1, 28.0))]
    summary = summarize(results, reference_policy=True)
    assert summary.harness is not None and summary.harness.overloaded
    text = format_summary(summary)
    first = text.splitlines()[:6]
    assert any("HOST OVERLOADED: load averaged 22.5 on 2 cores" in line for line in first)
    assert "Host overloaded: load averaged 22.5 on 2 cores" in summary_html(summary)


def test_no_turns_no_section() -> None:
    assert case_times([], [1.0]) is None
    assert summarize_harness([_result("os/a", None)]) is None


def test_turn_times_read_from_older_lines_without_them() -> None:
    rec = StepRecord.model_validate({"index": 0, "step": 0, "time": 0, "latency_s": 1})
    assert rec.harness is None
    assert TurnTimes().non_model_s == 0
    assert harness_time.OVERLOAD_RATIO >= 2
