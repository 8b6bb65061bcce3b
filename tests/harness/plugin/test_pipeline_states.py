"""``WorkerPipeline`` as a state machine: the current case's ``Phase`` and the next case's
``Next`` through a worker's cases, with the real pool, spare, set-up ahead and agent started
ahead, their real threads, on fake desktops (``tests/harness/helpers/pipeline_rig.py``).

A test plays the calls a worker makes, in a case's order (``case_starts``, ``prepared``,
``agent_starts``, ``agent_ended``, ``scored``, ``case_ends``; ``take_over`` for an agent started
ahead), with a fake benchmark (``FakeSteps``) whose agent plays until the test lets it finish,
and checks which desktop each case gets, which is held, reset or closed, what of a case that
will not have it is removed, and that no thread outlives the pipeline's close.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from types import SimpleNamespace

import pytest

from computer_env.desktop.providers.base import DesktopHandle
from computer_env.errors import SetupError
from fixtures.cases.attempt import Attempt
from fixtures.cases.desktops.pool import VMPool
from fixtures.cases.pipeline import (
    AgentAhead,
    Next,
    NextCase,
    Phase,
    StoppedAhead,
    WorkerPipeline,
    pipeline_choice,
)
from fixtures.cases.pipeline import _setup_ahead as setup_ahead_module
from fixtures.cases.pipeline._agent_ahead import AgentsAhead
from tests.harness.helpers.parsed_settings import settings_of
from tests.harness.helpers.pipeline_rig import (
    FakeDesktop,
    FakeSteps,
    PipelineRig,
    Played,
    fake_health_check,
    pipeline_threads,
)
from tests.harness.helpers.polling import wait_for


@pytest.fixture(autouse=True)
def fake_desktops(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    yield from fake_health_check(monkeypatch)


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[PipelineRig]:
    """Cases 1, 2 and 3 on one worker; set-up ahead and score behind on."""
    r = PipelineRig(tmp_path)
    r.steps.set_up_with = mark
    yield r
    assert not r.teardown(), "a thread of the pipeline outlived its close"


def mark(case: NextCase, handle: DesktopHandle, attempt: Attempt) -> None:
    """A set-up: leaves a file naming its case on the desktop."""
    FakeDesktop.of(handle).files.add(f"set up {case.key}")


def folders(steps: FakeSteps, key: str) -> tuple[Path, Path]:
    """``key``'s results folder and work folder."""
    case = steps.case(key)
    assert case.work_folder is not None
    return case.case_dir, case.work_folder


def case_one_scored_behind(rig: PipelineRig) -> AgentAhead:
    """Case 1 sets itself up and plays while case 2 is set up ahead; its agent ends and case 2's
    agent starts while case 1 is scored. Returns (case 1 still scored) once case 2's agent has
    its desktop; what the pipeline hands out along the way is checked."""
    p, steps = rig.pipeline, rig.steps
    assert p.case_starts("case-1") is None and p.phase is Phase.SETTING_UP
    assert p.prepared("case-1") is None  # nothing was set up ahead for the first case
    rig.pool.acquire()
    rig.in_use().files.add("played case-1")
    assert p.agent_starts(steps) and p.phase is Phase.PLAYING
    set_up_ahead(rig, "case-2")
    assert rig.made[1].files == {"set up case-2"}, "case 2 was set up on the spare"
    assert p.agent_ended(steps)
    assert p.phase is Phase.SCORING_BEHIND and p.next is Next.PLAYING
    assert steps.event("started", "case-2").wait(10), "case 2's agent did not start"
    assert rig.in_use() is rig.made[1], "case 2's agent has the desktop set up for it"
    assert rig.made[0].files == {"played case-1"} and rig.made[0].resets == 0
    assert not rig.pool.spare_prepared(), "case 1's desktop is reset while it is scored"
    assert steps.begun == ["case-2"] and folders(steps, "case-2")[0].is_dir()
    return pipeline_run(rig, "case-2")


def set_up_ahead(rig: PipelineRig, key: str, nth: int = 1) -> None:
    """Wait until ``key``'s ``nth`` set-up ahead has ended (done or failed), its thread too."""
    wait_for(
        lambda: rig.steps.set_up_ended.count(key) >= nth and rig.pipeline.next is Next.SET_UP,
        f"{key}'s set-up ahead to end",
        timeout=10,
    )


def pipeline_run(rig: PipelineRig, key: str) -> AgentAhead:
    """The agent the pipeline started ahead for ``key`` (looked at, not taken)."""
    run = rig.pipeline._behind
    assert run is not None and run.key == key
    return run


def take_over(rig: PipelineRig, run: AgentAhead) -> Future[Played]:
    """The case's runner takes its agent started ahead over, in a thread of its own (it waits
    for the agent's turn, which the test ends; a daemon, so that a failed test cannot keep the
    process)."""
    turn: Future[Played] = Future()

    def runner() -> None:
        try:
            turn.set_result(rig.pipeline.take_over(run, rig.steps, Played))
        except BaseException as exc:  # noqa: BLE001 - the test's to see
            turn.set_exception(exc)

    threading.Thread(target=runner, name="runner", daemon=True).start()
    return turn


def removed(steps: FakeSteps, key: str) -> bool:
    """Nothing of ``key``'s agent started ahead is left: its closers ran, its folders are
    gone."""
    case_dir, work = folders(steps, key)
    return key in steps.closed and not case_dir.exists() and not work.exists()


def test_a_worker_s_cases_through_the_pipeline(rig: PipelineRig) -> None:
    p, steps = rig.pipeline, rig.steps
    assert (p.phase, p.next) == (Phase.IDLE, Next.NONE)
    assert p.setup_ahead and p.score_behind

    # case 1: set up itself; case 2 set up ahead; case 2's agent plays while case 1 is scored
    case_one_scored_behind(rig)
    first = Attempt(number=1)
    p.scored(first, time.monotonic())
    assert first.timings.scored_behind and first.timings.score_wait_s == 0.0
    p.case_ends()
    assert p.phase is Phase.IDLE and p.next is Next.PLAYING
    wait_for(rig.pool.spare_prepared, "case 1's desktop reset as the spare", timeout=10)
    assert rig.made[0].resets == 1 and rig.made[0].files == set()

    # case 2: its runner takes its agent over, which sets case 3 up ahead
    rig.now("case-2")
    run = p.case_starts("case-2")
    assert run is not None and run.key == "case-2" and run.running()
    assert p.phase is Phase.PLAYING and p.next is Next.NONE
    turn = take_over(rig, run)
    set_up_ahead(rig, "case-3")
    assert rig.made[0].files == {"set up case-3"} and not turn.done()
    steps.finish("case-2")
    played = turn.result(timeout=30)
    assert (played.key, played.set_up_ahead, played.thread) == ("case-2", True, "agent-ahead")
    assert rig.desk(played.handle) is rig.made[1] and run.agent_ended is not None
    assert p.agent_ended(steps) and p.phase is Phase.SCORING_BEHIND
    assert steps.event("started", "case-3").wait(10)
    assert rig.in_use() is rig.made[0] and rig.made[1].resets == 0
    p.scored(Attempt(number=1), time.monotonic())
    p.case_ends()
    run.close()  # the runner closes what the turn opened
    assert steps.closed == ["case-2"] and folders(steps, "case-2")[0].is_dir()
    wait_for(rig.pool.spare_prepared, "case 2's desktop reset as the spare", timeout=10)
    assert rig.made[1].files == set()

    # case 3, the last: nothing comes after it
    rig.now("case-3")
    last = p.case_starts("case-3")
    assert last is not None and p.next is Next.NONE
    steps.finish("case-3")
    assert p.take_over(last, steps, Played).handle == rig.made[0].handle
    assert p.next is Next.NONE and p.phase is Phase.PLAYING
    assert not p.agent_ended(steps) and p.phase is Phase.SCORING
    third = Attempt(number=1)
    p.scored(third, time.monotonic())
    assert not third.timings.scored_behind
    p.case_ends()
    assert (p.phase, p.next) == (Phase.IDLE, Next.NONE)

    assert [(s.key, s.thread, s.released) for s in steps.set_ups] == [
        ("case-2", "setup-ahead", 0),
        ("case-3", "setup-ahead", 0),
    ]
    assert steps.begun == ["case-2", "case-3"] and len(rig.made) == 2


@pytest.mark.parametrize("case_ended", [True, False], ids=["after-its-end", "hold-left"])
def test_a_rerun_of_the_case_before_discards_the_agent_started_ahead(
    rig: PipelineRig, case_ended: bool
) -> None:
    p, steps = rig.pipeline, rig.steps
    run = case_one_scored_behind(rig)
    p.scored(Attempt(number=1), time.monotonic())
    if case_ended:
        p.case_ends()
    assert steps.event("turned", "case-2").wait(10)
    # case 1 failed and is rerun (its next item is still case 2): case 2's agent must go
    assert p.case_starts("case-1-attempt-2") is None
    assert isinstance(run.error, StoppedAhead) and not run.running()
    assert removed(steps, "case-2")
    assert p.phase is Phase.SETTING_UP and p.next is Next.NONE
    assert p.prepared("case-1-attempt-2") is None
    handle = rig.pool.acquire()  # case 1's own desktop, reset: nothing of either turn
    assert rig.desk(handle) is rig.made[0] and rig.made[0].files == set()
    wait_for(rig.pool.spare_prepared, "case 2's desktop reset as the spare", timeout=10)
    assert rig.made[1].files == set()
    # the rerun plays: case 2 is set up ahead again, and its agent starts again
    assert p.agent_starts(steps)
    set_up_ahead(rig, "case-2", nth=2)
    assert folders(steps, "case-2")[1].is_dir()
    assert p.agent_ended(steps) and steps.begun == ["case-2", "case-2"]
    again = pipeline_run(rig, "case-2")
    assert again is not run and again.running()


def test_the_next_case_s_agent_is_stopped_when_the_case_sets_up_again(
    rig: PipelineRig, caplog: pytest.LogCaptureFixture
) -> None:
    """The initial-state check (a crash on the agent's state) sets the case up again while it
    is scored: the next case's agent stops, plays later from the start."""
    p, steps = rig.pipeline, rig.steps
    run = case_one_scored_behind(rig)
    scoring = time.monotonic()
    with caplog.at_level(logging.INFO, logger="fixtures.cases.pipeline"):
        p.stop_next_agent("case-1: set up again while scoring")
    assert "case-1: set up again while scoring" in caplog.text
    assert isinstance(run.error, StoppedAhead) and removed(steps, "case-2")
    assert p.phase is Phase.SCORING and p.next is Next.NONE
    handle = rig.pool.acquire()  # case 1's desktop, let go of and reset
    assert rig.desk(handle) is rig.made[0] and rig.made[0].files == set()
    first = Attempt(number=1)
    p.scored(first, scoring)
    assert not first.timings.scored_behind and first.timings.score_wait_s is not None
    p.case_ends()
    rig.now("case-2")
    assert p.case_starts("case-2") is None and p.phase is Phase.SETTING_UP
    assert p.prepared("case-2") is None, "case 2 sets itself up, from the start"


def test_stopping_the_next_agent_when_none_plays_only_moves_to_scoring(
    rig: PipelineRig,
) -> None:
    p = rig.pipeline
    assert p.case_starts("case-1") is None
    rig.pool.acquire()
    p.stop_next_agent("nothing plays ahead")
    assert p.phase is Phase.SCORING and p.next is Next.NONE


@pytest.mark.parametrize("why", ["not-this-worker-s", "last-case"])
def test_a_next_case_that_will_not_play_here_is_not_set_up_ahead(tmp_path: Path, why: str) -> None:
    """``next_case`` says None (reused by ``--resume``, skipped before a desktop), or there is
    no next item: nothing is made ahead and case 1 is scored alone."""
    r = PipelineRig(tmp_path, cases=("case-1",) if why == "last-case" else ("case-1", "case-2"))
    r.steps.skipped = {"case-2"}
    try:
        p = r.pipeline
        assert p.case_starts("case-1") is None
        r.pool.acquire()
        assert not p.agent_starts(r.steps) and p.next is Next.NONE
        assert not p.agent_ended(r.steps) and p.phase is Phase.SCORING
        attempt = Attempt(number=1)
        p.scored(attempt, time.monotonic() - 2.0)
        assert not attempt.timings.scored_behind and attempt.timings.score_wait_s >= 2.0
        p.case_ends()
        wait_for(r.pool.spare_prepared, "the spare's start", timeout=10)
        assert r.made[1].files == set() and r.made[1].resets == 0
        assert r.steps.set_ups == [] and r.steps.begun == []
    finally:
        r.close()


def test_with_score_behind_off_the_next_case_only_takes_its_set_up(tmp_path: Path) -> None:
    r = PipelineRig(tmp_path, score_behind=False)
    r.steps.set_up_with = mark
    try:
        p = r.pipeline
        assert p.setup_ahead and not p.score_behind
        assert p.case_starts("case-1") is None
        first = r.pool.acquire()
        assert p.agent_starts(r.steps)
        set_up_ahead(r, "case-2")
        assert not p.agent_ended(r.steps)
        assert p.phase is Phase.SCORING and p.next is Next.SET_UP and r.steps.begun == []
        assert r.pool.handle == first, "case 1 keeps its desktop while it is scored"
        p.case_ends()
        r.now("case-2")
        assert p.case_starts("case-2") is None and p.phase is Phase.SETTING_UP
        got = p.prepared("case-2")
        assert got is not None and got.error is None and r.in_use() is r.made[1]
        assert r.made[1].files == {"set up case-2"}
    finally:
        r.close()


def test_a_failed_set_up_ahead_fails_its_own_case_not_the_one_before(rig: PipelineRig) -> None:
    def fail(case: NextCase, handle: DesktopHandle, attempt: Attempt) -> None:
        mark(case, handle, attempt)
        raise SetupError("the task's download failed")

    p, steps = rig.pipeline, rig.steps
    steps.set_up_with = fail
    assert p.case_starts("case-1") is None
    first = rig.pool.acquire()
    assert p.agent_starts(steps)
    set_up_ahead(rig, "case-2")
    assert p.agent_ended(steps)  # case 2's turn starts, and fails at once, as its own
    run = pipeline_run(rig, "case-2")
    run.wait_started()
    attempt = Attempt(number=1)
    p.scored(attempt, time.monotonic())
    assert attempt.timings.scored_behind and rig.pool.handle == first
    p.case_ends()
    rig.now("case-2")
    assert p.case_starts("case-2") is run
    with pytest.raises(SetupError, match="download failed"):
        p.take_over(run, steps, Played)
    assert folders(steps, "case-2")[1].is_dir(), "a failed set-up's work folder stays"
    # its rerun sets itself up: the spare, reset after the failure
    assert p.case_starts("case-2-attempt-2") is None and p.prepared("case-2-attempt-2") is None
    handle = rig.pool.acquire()
    assert rig.desk(handle) is rig.made[1] and rig.made[1].files == set()


def test_an_interrupt_in_the_runner_stops_the_agent_it_took_over(rig: PipelineRig) -> None:
    p, steps = rig.pipeline, rig.steps
    run = case_one_scored_behind(rig)
    p.scored(Attempt(number=1), time.monotonic())
    p.case_ends()
    rig.now("case-2")
    assert p.case_starts("case-2") is run
    steps.interrupt_next_case = True  # Ctrl-C while the runner sets case 3 up ahead
    with pytest.raises(KeyboardInterrupt):
        p.take_over(run, steps, Played)
    assert isinstance(run.error, StoppedAhead) and not run.running()
    assert "agent-ahead" not in pipeline_threads(), "the agent must not play on alone"


def test_a_turn_that_returns_what_its_case_does_not_expect_is_refused(rig: PipelineRig) -> None:
    p, steps = rig.pipeline, rig.steps
    run = case_one_scored_behind(rig)
    p.case_ends()
    rig.now("case-2")
    assert p.case_starts("case-2") is run
    steps.finish("case-2")
    steps.skipped = {"case-3"}
    with pytest.raises(TypeError, match="is a Played, not a str"):
        p.take_over(run, steps, str)
    assert not run.running()


def test_scored_behind_counts_only_the_scoring_left_after_the_next_agent_ended(
    rig: PipelineRig,
) -> None:
    p, steps = rig.pipeline, rig.steps
    run = case_one_scored_behind(rig)
    scoring = time.monotonic() - 100.0  # case 1's scoring began long ago
    steps.finish("case-2")
    wait_for(lambda: run.agent_ended is not None, "case 2's agent turn to end", timeout=10)
    attempt = Attempt(number=1)
    before = time.monotonic()
    p.scored(attempt, scoring)
    after = time.monotonic()
    wait, ended = attempt.timings.score_wait_s, run.agent_ended
    assert attempt.timings.scored_behind and wait is not None and ended is not None
    # what was left once case 2's agent ended, not since case 1's scoring began (ms rounding)
    assert before - ended - 0.001 <= wait <= after - ended + 0.001 and wait < 50.0


def test_closing_while_the_next_agent_plays_stops_it_and_leaves_nothing(
    rig: PipelineRig,
) -> None:
    p, steps = rig.pipeline, rig.steps
    run = case_one_scored_behind(rig)
    held = p._hold  # set once case 1 lets go of its desktop
    assert held is not None and not held.is_set()
    rig.close()  # the session ends (-x, an interrupt) while case 1 is scored
    assert isinstance(run.error, StoppedAhead) and removed(steps, "case-2")
    assert held.is_set(), "case 1's desktop is let go of"
    assert all(d.closes >= 1 for d in rig.made) and len(rig.made) == 2
    assert not pipeline_threads()
    assert (p.phase, p.next) == (Phase.IDLE, Next.NONE)
    # nothing starts afterwards
    assert not p.agent_starts(steps) and not p.agent_ended(steps) and p.next is Next.NONE
    p.close()  # idempotent


def test_closing_during_a_set_up_ahead_ends_it(rig: PipelineRig) -> None:
    p, steps = rig.pipeline, rig.steps

    def endless(case: NextCase, handle: DesktopHandle, attempt: Attempt) -> None:
        steps.event("started", "set-up").set()
        wait_for(lambda: FakeDesktop.of(handle).closes, "the desktop to close", timeout=60)
        raise SetupError("the desktop was closed under the set-up")

    steps.set_up_with = endless
    assert p.case_starts("case-1") is None
    rig.pool.acquire()
    assert p.agent_starts(steps) and steps.event("started", "set-up").wait(10)
    assert p.next is Next.SETTING_UP
    rig.close()
    assert not folders(steps, "case-2")[1].exists()
    assert all(d.closes >= 1 for d in rig.made) and not pipeline_threads()
    assert not p.agent_starts(steps) and p.next is Next.NONE


@pytest.mark.parametrize(
    ("args", "spare", "expected", "why"),
    [
        ((), True, (True, True), "set-up ahead and score behind on (host has room)"),
        (("--setup-ahead", "off"), True, (False, False), "--setup-ahead off"),
        (("--check-evaluators",), True, (False, False), "--check-evaluators"),
        ((), False, (False, False), "it needs the spare desktop: host has room"),
        (("--score-behind", "off"), True, (True, False), "score behind off (--score-behind"),
        (("--live",), True, (True, False), "score behind off (--live"),
    ],
    ids=["on", "setup-ahead-off", "check-evaluators", "no-spare", "score-behind-off", "live"],
)
def test_the_pipeline_the_settings_ask_for(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    args: tuple[str, ...],
    spare: bool,
    expected: tuple[bool, bool],
    why: str,
) -> None:
    for name in ("HOLO_SETUP_AHEAD", "HOLO_SCORE_BEHIND", "HOLO_SPARE_DESKTOP"):
        monkeypatch.delenv(name, raising=False)
    settings = settings_of(*args)
    setup_ahead, score_behind, reason = pipeline_choice(settings, spare, "host has room")
    assert (setup_ahead, score_behind) == expected and why in reason
    pool = VMPool(FakeDesktop, spare=spare)
    with caplog.at_level(logging.INFO, logger="fixtures.cases.pipeline"):
        pipeline = WorkerPipeline.for_settings(settings, pool, lambda: None, "host has room")
    try:
        assert (pipeline.setup_ahead, pipeline.score_behind) == expected
        assert reason in caplog.text
    finally:
        pipeline.close()
        pool.close()


def test_with_the_pipeline_off_nothing_is_made_ahead(tmp_path: Path) -> None:
    r = PipelineRig(tmp_path, setup_ahead=False)
    try:
        p = r.pipeline
        assert not p.setup_ahead and not p.score_behind
        assert p.case_starts("case-1") is None
        first = r.pool.acquire()
        assert not p.agent_starts(r.steps) and p.next is Next.NONE
        assert not p.agent_ended(r.steps) and p.phase is Phase.SCORING
        p.case_ends()
        r.now("case-2")
        assert p.case_starts("case-2") is None and p.prepared("case-2") is None
        assert r.pool.acquire() != first and r.steps.set_ups == []
    finally:
        r.close()


# -- known faults of the pipeline: each scenario passes once its fault is fixed ---------------


def no_usable_spare_for_case_two(rig: PipelineRig) -> None:
    """Case 1 plays; case 2's set-up ahead finds no usable spare (it cannot draw), so nothing
    is set up ahead for case 2."""
    p = rig.pipeline
    assert p.case_starts("case-1") is None
    rig.pool.acquire()
    wait_for(rig.pool.spare_prepared, "the spare's start", timeout=10)
    rig.made[1].draws = False
    assert p.agent_starts(rig.steps)
    wait_for(lambda: p.next is Next.SET_UP, "the set-up ahead to end", timeout=10)
    assert rig.steps.set_up_ended == [], "nothing was set up ahead"


def test_no_agent_starts_ahead_without_a_desktop_set_up_for_it(
    rig: PipelineRig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A set-up ahead that found no usable spare leaves nothing for case 2's agent to play on:
    it does not start (it would only wait for case 1's held desktop, and case 1 would be
    reported scored behind while nothing played)."""
    monkeypatch.setattr(AgentsAhead, "STOP_TIMEOUT", 2.0)
    p = rig.pipeline
    no_usable_spare_for_case_two(rig)
    try:
        assert not p.agent_ended(rig.steps)
        assert p.phase is Phase.SCORING and p.next is not Next.PLAYING
        assert "agent-ahead" not in pipeline_threads()
    finally:
        p.case_ends()


@pytest.mark.parametrize("how", ["stop_next_agent", "close"])
def test_letting_the_next_agent_go_does_not_wait_for_the_desktop_it_waits_for(
    rig: PipelineRig, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """An agent started ahead that waits for case 1's held desktop (its benchmark sets itself
    up from the pool) is let go of at once: the hold ends before the agent is stopped."""
    monkeypatch.setattr(AgentsAhead, "STOP_TIMEOUT", 30.0)
    p = rig.pipeline
    waiting = threading.Event()

    def play_from_the_pool(run: AgentAhead) -> None:
        run.agent_started.set()
        waiting.set()
        rig.pool.acquire()  # behind case 1's hold
        run.check()

    assert p.case_starts("case-1") is None
    rig.pool.acquire()
    assert p.agent_starts(rig.steps)
    set_up_ahead(rig, "case-2")
    monkeypatch.setattr(rig.steps, "play", play_from_the_pool)
    assert p.agent_ended(rig.steps)
    assert waiting.wait(10), "the agent ahead did not start"
    t0 = time.monotonic()
    if how == "close":
        p.close()
    else:
        p.stop_next_agent("case-1: set up again while scoring")
    waited = time.monotonic() - t0
    wait_for(lambda: "agent-ahead" not in pipeline_threads(), "the agent to stop", timeout=10)
    assert waited < AgentsAhead.STOP_TIMEOUT / 2, f"{how} waited for the agent's stop timeout"


def test_next_never_says_set_up_before_the_set_up_ran(
    rig: PipelineRig, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[Next] = []

    class Watched(threading.Thread):
        def start(self) -> None:
            seen.append(rig.pipeline.next)  # what another thread may read at this moment
            super().start()

    monkeypatch.setattr(setup_ahead_module, "threading", SimpleNamespace(Thread=Watched))
    assert rig.pipeline.case_starts("case-1") is None
    rig.pool.acquire()
    assert rig.pipeline.agent_starts(rig.steps)
    set_up_ahead(rig, "case-2")
    assert seen and Next.SET_UP not in seen
