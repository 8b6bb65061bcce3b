"""``AgentsAhead`` (``fixtures.cases.pipeline._agent_ahead``): the next case's agent, started
while the current case is scored. The agent here is a real loop of turns in a real thread (no
desktop: what a turn does is the point only on the suite's end-to-end tests,
``test_setup_ahead_suite``; the pipeline that starts it: ``test_pipeline_states.py``)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from fixtures.cases.pipeline import AgentAhead, NextCase, StoppedAhead
from fixtures.cases.pipeline._agent_ahead import AgentsAhead, PlayFn
from tests.harness.helpers.pipeline_rig import pipeline_threads, stand_in_item
from tests.harness.helpers.polling import wait_for


def _run(tmp_path: Path, key: str) -> AgentAhead:
    """A run of ``key``'s agent, with its case folder begun and its work folder made."""
    case_dir = tmp_path / "results" / key
    case_dir.mkdir(parents=True)
    (case_dir / "trajectory.jsonl").write_text("{}\n")
    work = tmp_path / "work" / key
    work.mkdir(parents=True)
    return AgentAhead(NextCase(key, stand_in_item(key), case_dir, work), events=None)


def _turns(n: int, closed: list[str], turned: threading.Event | None = None) -> PlayFn:
    """An agent turn of ``n`` model turns, each checked; what it opens is closed into
    ``closed``."""

    def play(run: AgentAhead) -> str:
        run.closers.append(lambda: closed.append(run.key))
        run.agent_started.set()
        for i in range(n):
            run.check()  # as the agent's on_step does after each model turn
            if turned is not None:
                turned.set()
            threading.Event().wait(0.05)  # one "model turn"
            run.attempt.steps = i + 1
        return "played"

    return play


def test_the_case_takes_its_running_agent_over(tmp_path: Path) -> None:
    agent, closed = AgentsAhead(), list[str]()
    run = _run(tmp_path, "case-2")
    assert agent.start(run, _turns(5, closed))
    assert agent.pending == "case-2"
    assert not agent.start(run, _turns(5, closed))  # already under way
    got = agent.take("case-2")
    assert got is run and agent.pending is None
    got.wait_started()
    assert got.result(str) == "played" and got.attempt.steps == 5
    assert got.agent_ended is not None and got.agent_ended >= got.started
    assert run.case.case_dir.is_dir() and closed == [], "a taken run keeps what it made"
    got.close()  # its case ends
    got.close()
    assert closed == ["case-2"]


def test_another_case_first_stops_the_agent_at_its_next_turn_and_removes_its_files(
    tmp_path: Path,
) -> None:
    agent, closed = AgentsAhead(), list[str]()
    run = _run(tmp_path, "case-2")
    turned = threading.Event()
    assert agent.start(run, _turns(10_000, closed, turned))
    wait_for(turned.is_set, "the agent's first turn", timeout=10)
    assert agent.take("case-1-attempt-2") is None  # a rerun of the case before came first
    assert isinstance(run.error, StoppedAhead) and not run.running()
    assert run.attempt.steps < 10_000
    assert run.case.work_folder is not None
    assert closed == ["case-2"] and not run.case.case_dir.exists()
    assert not run.case.work_folder.exists()
    assert agent.pending is None


def test_another_agent_started_discards_the_one_before(tmp_path: Path) -> None:
    agent, closed = AgentsAhead(), list[str]()
    first, second = _run(tmp_path, "case-2"), _run(tmp_path, "case-3")
    assert agent.start(first, _turns(10_000, closed))
    assert agent.start(second, _turns(1, closed))
    assert isinstance(first.error, StoppedAhead) and not first.case.case_dir.exists()
    assert agent.pending == "case-3" and second.result(str) == "played"


def test_a_failed_turn_is_raised_in_the_case_that_takes_it(tmp_path: Path) -> None:
    agent = AgentsAhead()
    run = _run(tmp_path, "case-2")

    def fail(run: AgentAhead) -> None:
        raise TimeoutError("the model endpoint did not answer")

    assert agent.start(run, fail)
    got = agent.take("case-2")
    assert got is not None
    got.wait_started()  # a turn that failed before the agent had its desktop: not a hang
    with pytest.raises(TimeoutError, match="did not answer"):
        got.result(str)


def test_a_turn_that_returns_what_its_case_does_not_expect_is_refused(tmp_path: Path) -> None:
    agent = AgentsAhead()
    run = _run(tmp_path, "case-2")
    assert agent.start(run, _turns(1, []))
    with pytest.raises(TypeError, match="is a str, not a int"):
        run.result(int)


def test_closing_stops_the_agent_and_nothing_starts_after(tmp_path: Path) -> None:
    agent, closed = AgentsAhead(), list[str]()
    run = _run(tmp_path, "case-2")
    assert agent.start(run, _turns(10_000, closed))
    agent.close()
    assert not run.running() and isinstance(run.error, StoppedAhead)
    assert not run.case.case_dir.exists() and closed == ["case-2"]
    assert not agent.start(_run(tmp_path, "case-3"), _turns(1, closed))
    agent.close()  # idempotent
    assert "agent-ahead" not in pipeline_threads()
