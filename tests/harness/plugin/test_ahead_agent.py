"""``fixtures.cases.ahead_agent``: the next case's agent, started while the current case is
scored. The agent here is a real loop of turns in a real thread (no desktop: what a turn does
is the point only on the suite's end-to-end tests, ``test_setup_ahead_suite``)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from fixtures.cases.ahead_agent import AheadAgent, AheadRun, StoppedAhead
from fixtures.cases.attempt import Attempt
from tests.harness.helpers.polling import wait_for


def _run(tmp_path: Path, key: str, released: list[Any]) -> AheadRun:
    case_dir = tmp_path / "results" / key
    case_dir.mkdir(parents=True)
    (case_dir / "trajectory.jsonl").write_text("{}\n")
    work = tmp_path / "work" / key
    work.mkdir(parents=True)
    return AheadRun(
        key=key,
        case=None,
        attempt=Attempt(number=1),
        case_dir=case_dir,
        work_folder=work,
        release=released.append,
    )


def _turns(n: int, turned: threading.Event | None = None):  # type: ignore[no-untyped-def]
    def play(run: AheadRun) -> str:
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
    agent, released = AheadAgent(), list[object]()
    run = _run(tmp_path, "case-2", released)
    assert agent.start(run, _turns(5))
    assert not agent.start(run, _turns(5))  # already under way
    got = agent.take("case-2")
    assert got is run and agent.pending is None
    got.wait_started()
    assert got.wait() == "played" and got.attempt.steps == 5 and got.agent_ended is not None
    assert run.case_dir.is_dir() and released == [], "a taken run keeps what it made"


def test_another_case_first_stops_the_agent_at_its_next_turn_and_removes_its_files(
    tmp_path: Path,
) -> None:
    agent, released = AheadAgent(), list[object]()
    run = _run(tmp_path, "case-2", released)
    turned = threading.Event()
    assert agent.start(run, _turns(10_000, turned))
    wait_for(turned.is_set, "the agent's first turn", timeout=10)
    assert agent.take("case-1-attempt-2") is None  # a rerun of the case before came first
    assert isinstance(run.error, StoppedAhead) and not run.running()
    assert run.attempt.steps < 10_000
    assert released == [None] and not run.case_dir.exists() and not run.work_folder.exists()
    assert agent.pending is None


def test_a_failed_turn_is_raised_in_the_case_that_takes_it(tmp_path: Path) -> None:
    agent, released = AheadAgent(), list[object]()
    run = _run(tmp_path, "case-2", released)

    def fail(run: AheadRun) -> None:
        raise TimeoutError("the model endpoint did not answer")

    assert agent.start(run, fail)
    got = agent.take("case-2")
    assert got is not None
    got.wait_started()  # a turn that failed before the agent had its desktop: not a hang
    with pytest.raises(TimeoutError, match="did not answer"):
        got.wait()


def test_closing_stops_the_agent_and_nothing_starts_after(tmp_path: Path) -> None:
    agent, released = AheadAgent(), list[object]()
    run = _run(tmp_path, "case-2", released)
    assert agent.start(run, _turns(10_000))
    agent.close()
    assert not run.running() and isinstance(run.error, StoppedAhead)
    assert not run.case_dir.exists()
    assert not agent.start(_run(tmp_path, "case-3", released), _turns(1))
    assert not [t for t in threading.enumerate() if t.name == "agent-ahead"]
