"""``--setup-ahead`` and the spare desktop as a state machine: the real ``VMPool``, ``Spare`` and
``WorkerPipeline`` (set-up ahead on, score behind off) with their real threads, on fake desktops.

The desktop is not the point here (``test_setup_ahead.py`` runs the same flows on real local
sandboxes): ``FakeDesktop`` (``tests/harness/helpers/pipeline_rig.py``) keeps a desktop's state
in memory and can be made to block, fail, die or stop drawing; the pool's health check asks it
whether it draws. Each test drives one path of the pool and the set-up ahead and checks which
desktop is handed out, what state it is in and which one becomes the spare. The pipeline with
score behind on: ``test_pipeline_states.py``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from computer_env.desktop.providers.base import DesktopHandle
from computer_env.errors import SetupError, VMStartError
from fixtures.cases.attempt import Attempt
from fixtures.cases.pipeline import Next, NextCase
from tests.harness.helpers.pipeline_rig import (
    FakeDesktop,
    PipelineRig,
    SetUp,
    fake_health_check,
    pipeline_threads,
)
from tests.harness.helpers.polling import wait_for


@pytest.fixture(autouse=True)
def fake_desktops(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    yield from fake_health_check(monkeypatch)


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[PipelineRig]:
    """Case 1 runs (case 2 is next); set-up ahead on, score behind off."""
    r = PipelineRig(tmp_path, score_behind=False)
    yield r
    assert not r.teardown(), "a thread of the pool outlived its close"


def mark(case: NextCase, handle: DesktopHandle, attempt: Attempt) -> None:
    """A set-up: leaves a file on the desktop."""
    FakeDesktop.of(handle).files.add("set-up")


def work_folder(rig: PipelineRig, key: str = "case-2") -> Path:
    folder = rig.steps.case(key).work_folder
    assert folder is not None
    return folder


def test_the_first_acquire_starts_a_desktop_and_the_spare_in_the_background(
    rig: PipelineRig,
) -> None:
    handle = rig.pool.acquire()
    assert rig.desk(handle) is rig.made[0] and rig.made[0].starts == 1
    wait_for(rig.pool.spare_prepared, "the spare's start", timeout=10)
    assert len(rig.made) == 2 and rig.made[1].starts == 1 and rig.made[1].resets == 0


def test_the_next_acquire_hands_out_the_spare_and_resets_the_used_one_behind(
    rig: PipelineRig,
) -> None:
    first = rig.pool.acquire()
    rig.desk(first).files.add("left by case 1")
    second = rig.pool.acquire()  # waits for the spare
    assert rig.desk(second) is rig.made[1] and rig.pool.provider is rig.made[1]
    wait_for(rig.pool.spare_prepared, "the used desktop's reset", timeout=10)
    assert rig.made[0].resets == 1 and rig.made[0].files == set()
    third = rig.pool.acquire()
    assert rig.desk(third) is rig.made[0] and len(rig.made) == 2  # two desktops take turns


def test_without_a_spare_each_acquire_resets_the_one_desktop(tmp_path: Path) -> None:
    r = PipelineRig(tmp_path, spare=False, score_behind=False)
    try:
        r.pool.acquire()
        r.made[0].files.add("left")
        r.pool.acquire()
        assert len(r.made) == 1 and r.made[0].resets == 1 and r.made[0].files == set()
        assert not r.pipeline.agent_starts(r.steps)  # nothing to set the next case up on
        assert r.pipeline.next is Next.NONE and r.steps.set_ups == []
    finally:
        r.close()


def test_a_dead_desktop_is_replaced_and_counted(tmp_path: Path) -> None:
    r = PipelineRig(tmp_path, spare=False)
    try:
        r.pool.acquire()
        r.made[0].alive = False
        handle = r.pool.acquire()
        assert r.desk(handle) is r.made[1] and r.made[0].closes == 1
        assert r.pool.replacements == 1
    finally:
        r.close()


def test_a_desktop_that_answers_but_cannot_draw_is_replaced(tmp_path: Path) -> None:
    r = PipelineRig(tmp_path, spare=False)
    try:
        r.pool.acquire()
        r.made[0].draws = False
        handle = r.pool.acquire()
        assert r.desk(handle) is r.made[1] and r.made[0].closes == 1
        assert r.pool.replacements == 1
    finally:
        r.close()


def test_a_spare_that_cannot_draw_is_closed_and_the_one_in_use_reset(rig: PipelineRig) -> None:
    first = rig.pool.acquire()
    wait_for(rig.pool.spare_prepared, "the spare's start", timeout=10)
    rig.made[1].draws = False  # the spare came up but cannot draw
    handle = rig.pool.acquire()
    assert rig.desk(handle) is rig.made[0] and rig.desk(first) is rig.made[0]
    assert rig.made[0].resets == 1 and rig.made[1].closes == 1


def test_a_spare_that_failed_to_start_is_dropped_and_the_one_in_use_reset(
    rig: PipelineRig,
) -> None:
    rig.failing = {1}  # the first spare
    rig.pool.acquire()
    handle = rig.pool.acquire()  # the spare failed: the one in use, reset
    assert rig.desk(handle) is rig.made[0] and rig.made[0].resets == 1
    assert rig.made[1].starts == 1 and rig.made[1].closes >= 1 and rig.made[1].handle is None
    wait_for(rig.pool.spare_prepared, "a new spare's start", timeout=10)
    assert len(rig.made) == 3 and rig.made[2].handle is not None  # and a new spare is made


def test_a_desktop_that_fails_to_start_fails_acquire_and_is_closed(tmp_path: Path) -> None:
    r = PipelineRig(tmp_path, spare=False)
    try:
        r.failing = {0}
        with pytest.raises(VMStartError, match="does not start"):
            r.pool.acquire()
        assert r.made[0].closes == 1 and r.pool.provider is None
        handle = r.pool.acquire()  # the next try starts a new one
        assert r.desk(handle) is r.made[1]
    finally:
        r.close()


def test_the_set_up_ahead_is_handed_to_its_case_on_the_spare(rig: PipelineRig) -> None:
    rig.steps.set_up_with = mark
    rig.pool.acquire()
    assert rig.pipeline.agent_starts(rig.steps)
    assert not rig.pipeline.agent_starts(rig.steps)  # already under way
    assert rig.pipeline.next in (Next.SETTING_UP, Next.SET_UP)
    got = rig.pipeline.prepared("case-2")
    assert got is not None and got.error is None and got.key == "case-2"
    assert got.value_as(SetUp).thread == "setup-ahead", "the set-up ran in its own thread"
    assert got.attempt.timings.reset_s is not None  # the wait for the spare, recorded
    assert rig.pool.provider is rig.made[1] and rig.made[1].files == {"set-up"}
    assert work_folder(rig).is_dir(), "a case handed its set-up keeps its work folder"
    assert rig.pipeline.next is Next.NONE and got.value_as(SetUp).released == 0
    wait_for(rig.pool.spare_prepared, "the used desktop's reset", timeout=10)
    assert rig.made[0].resets == 1  # the used desktop became the spare


def test_a_set_up_for_another_case_is_discarded_and_its_spare_reset(rig: PipelineRig) -> None:
    rig.steps.set_up_with = mark
    rig.pool.acquire()
    assert rig.pipeline.agent_starts(rig.steps)
    assert rig.pipeline.prepared("case-1-rerun") is None  # the current case's rerun came first
    assert [s.released for s in rig.steps.set_ups] == [1] and not work_folder(rig).exists()
    assert rig.pipeline.next is Next.NONE
    handle = rig.pool.acquire()  # the rerun gets the spare, reset: nothing of the set-up
    assert rig.desk(handle) is rig.made[1] and rig.made[1].files == set()


def test_a_failed_set_up_is_the_next_cases_own_and_the_pool_stays_usable(
    rig: PipelineRig,
) -> None:
    def fail(case: NextCase, handle: DesktopHandle, attempt: Attempt) -> None:
        mark(case, handle, attempt)
        raise SetupError("the task's download failed")

    rig.steps.set_up_with = fail
    first = rig.pool.acquire()
    assert rig.pipeline.agent_starts(rig.steps)
    got = rig.pipeline.prepared("case-2")
    assert got is not None and isinstance(got.error, SetupError) and got.value is None
    assert rig.pool.provider is rig.made[0] and rig.pool.handle == first  # nothing handed out
    assert work_folder(rig).is_dir(), "a failed set-up's work folder stays for a look"
    again = rig.pool.acquire()  # its rerun: the spare, reset after the failure
    assert rig.desk(again) is rig.made[1] and rig.made[1].files == set()


def test_a_case_waits_for_a_set_up_in_flight_and_says_how_long(rig: PipelineRig) -> None:
    going, finish = threading.Event(), threading.Event()

    def slow(case: NextCase, handle: DesktopHandle, attempt: Attempt) -> None:
        going.set()
        assert finish.wait(30)
        mark(case, handle, attempt)

    rig.steps.set_up_with = slow
    rig.pool.acquire()
    assert rig.pipeline.agent_starts(rig.steps)
    assert going.wait(10) and rig.pipeline.next is Next.SETTING_UP
    threading.Timer(0.3, finish.set).start()  # what is measured: the case's wait
    got = rig.pipeline.prepared("case-2")
    assert got is not None and got.error is None and got.waited_s >= 0.2


def test_without_a_usable_spare_the_case_is_set_up_at_its_start(rig: PipelineRig) -> None:
    rig.pool.acquire()
    wait_for(rig.pool.spare_prepared, "the spare's start", timeout=10)
    rig.made[1].draws = False  # the spare will not pass the health check
    assert rig.pipeline.agent_starts(rig.steps)
    assert rig.pipeline.prepared("case-2") is None  # nothing prepared: the case sets up itself
    assert rig.steps.set_ups == []
    handle = rig.pool.acquire()
    assert rig.desk(handle) is rig.made[0] and rig.made[0].resets == 1


def test_closing_during_a_set_up_ends_it_and_closes_every_desktop(rig: PipelineRig) -> None:
    started, never = threading.Event(), threading.Event()

    def endless(case: NextCase, handle: DesktopHandle, attempt: Attempt) -> None:
        started.set()
        while not never.wait(0.05):
            if FakeDesktop.of(handle).closes:  # its desktop went: a real step fails then
                raise VMStartError("the desktop was closed under the set-up")

    rig.steps.set_up_with = endless
    rig.pool.acquire()
    assert rig.pipeline.agent_starts(rig.steps)
    assert started.wait(10)
    rig.close()
    assert not work_folder(rig).exists()
    assert all(d.closes >= 1 for d in rig.made) and len(rig.made) == 2
    assert not rig.pipeline.agent_starts(rig.steps)  # closed: nothing starts
    assert not pipeline_threads()


def test_a_set_up_left_at_session_end_is_released_and_closed_not_reset(
    rig: PipelineRig,
) -> None:
    rig.steps.set_up_with = mark
    rig.pool.acquire()
    assert rig.pipeline.agent_starts(rig.steps)
    wait_for(
        lambda: rig.steps.set_up_ended and rig.pipeline.next is Next.SET_UP,
        "the set-up ahead to end",
        timeout=10,
    )
    rig.close()
    assert [s.released for s in rig.steps.set_ups] == [1] and not work_folder(rig).exists()
    assert rig.made[1].resets == 0 and rig.made[1].closes == 1


def test_a_held_desktop_is_reset_only_once_its_case_lets_go(rig: PipelineRig) -> None:
    """Score behind: the case before is still scored on its desktop when the next case takes
    the one set up for it; the held one is reset (to become the spare) only after."""
    rig.steps.set_up_with = mark
    first = rig.pool.acquire()
    rig.desk(first).files.add("left by case 1")
    assert rig.pipeline.agent_starts(rig.steps)
    done = rig.pool.hold()
    got = rig.pipeline.prepared("case-2")
    assert got is not None and rig.pool.provider is rig.made[1]
    assert rig.made[0].files == {"left by case 1"} and rig.made[0].resets == 0
    assert not rig.pool.spare_prepared(), "the spare is not made before its case lets go"
    done.set()
    wait_for(rig.pool.spare_prepared, "the held desktop's reset", timeout=10)
    assert rig.made[0].resets == 1 and rig.made[0].files == set()


def test_an_acquire_waits_for_a_held_desktop(rig: PipelineRig) -> None:
    rig.pool.acquire()
    held = rig.pool.hold()
    threading.Timer(0.3, held.set).start()
    rig.pool.acquire()
    assert held.is_set()


def test_closing_the_pool_ends_a_hold_and_refuses_acquire(rig: PipelineRig) -> None:
    rig.pool.acquire()
    held = rig.pool.hold()
    rig.pool.close()
    assert held.is_set()
    with pytest.raises(VMStartError, match="closed"):
        rig.pool.acquire()
    assert rig.pool.hold().is_set(), "a hold on a closed pool is over at once"


def test_ports_allowed_reach_every_desktop_made_later(rig: PipelineRig) -> None:
    rig.pool.allow_host_port(8123)
    rig.pool.acquire()
    rig.pool.allow_host_port(9000)
    wait_for(rig.pool.spare_prepared, "the spare's start", timeout=10)
    assert all(d.ports == {8123, 9000} for d in rig.made) and len(rig.made) == 2


def test_take_reserved_without_a_reservation_is_refused(rig: PipelineRig) -> None:
    rig.pool.acquire()
    with pytest.raises(VMStartError, match="set up ahead"):
        rig.pool.take_reserved()
