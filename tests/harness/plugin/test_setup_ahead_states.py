"""``--setup-ahead`` and the spare desktop as a state machine: the real ``VMPool``, ``Spare`` and
``AheadSetup`` with their real threads, on fake desktops.

The desktop is not the point here (``test_setup_ahead.py`` runs the same flows on real local
sandboxes): :class:`FakeDesktop` is a ``DesktopProvider`` that keeps a desktop's state (the
files a set-up or an agent left) in memory, counts its starts, resets and closes, and can be
made to block, fail, die or stop drawing. The pool's health check (``desktop_draws``: a
screenshot over HTTP) is replaced by one that asks the fake desktop whether it draws. Each
test drives one path of the pool and the set-up ahead and checks which desktop is handed out,
what state it is in and which one becomes the spare.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from computer_env.desktop.providers.base import DesktopHandle, DesktopProvider
from computer_env.errors import SetupError, VMStartError
from fixtures.cases.attempt import Attempt
from fixtures.cases.desktops import pool as pool_module
from fixtures.cases.desktops import spare as spare_module
from fixtures.cases.desktops.ahead import AheadSetup
from fixtures.cases.desktops.pool import VMPool
from tests.harness.helpers.polling import wait_for

_numbers = itertools.count(1)
_desktops: dict[str, FakeDesktop] = {}


class FakeDesktop(DesktopProvider):
    """A desktop in memory: ``files`` is what is on it (a reset empties it);
    ``fail_start``/``alive``/``draws`` make it fail to start, die or stop drawing."""

    name = "fake"

    def __init__(self) -> None:
        self.number = next(_numbers)
        self.files: set[str] = set()
        self.starts = self.resets = self.closes = 0
        self.alive = True
        self.draws = True
        self.fail_start = False
        self.handle: DesktopHandle | None = None
        self.ports: set[int] = set()

    def _boot(self) -> DesktopHandle:
        self.files.clear()
        url = f"http://fake-{self.number}.invalid:{self.starts + self.resets}"
        self.handle = DesktopHandle(url=url, token="t", provider=self.name)
        _desktops[url] = self
        return self.handle

    def start(self) -> DesktopHandle:
        self.starts += 1
        if self.fail_start:
            raise VMStartError(f"fake desktop {self.number} does not start")
        return self._boot()

    def reset(self) -> DesktopHandle:
        self.resets += 1
        return self._boot()

    def is_alive(self) -> bool:
        return self.alive and self.closes == 0

    def close(self) -> None:
        self.closes += 1
        self.handle = None

    def allow_host_port(self, port: int) -> None:
        self.ports.add(port)


def _draws(handle: DesktopHandle) -> bool:
    """The health check, asked of the fake desktop behind ``handle`` (its latest handle only:
    a handle from before a reset no longer draws, as a real one no longer answers)."""
    desk = _desktops.get(handle.url)
    return bool(desk is not None and desk.handle == handle and desk.is_alive() and desk.draws)


@pytest.fixture(autouse=True)
def fake_health_check(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(pool_module, "desktop_draws", _draws)
    monkeypatch.setattr(spare_module, "desktop_draws", _draws)
    yield
    _desktops.clear()


class Rig:
    """A pool with a spare over fake desktops, its set-up ahead, and a work folder."""

    def __init__(self, tmp_path: Path, spare: bool = True) -> None:
        self.made: list[FakeDesktop] = []
        self.pool = VMPool(self.factory, spare=spare)
        self.ahead = AheadSetup(self.pool)
        self.folder = tmp_path / "work"
        self.folder.mkdir()
        self.failing: set[int] = set()
        """which desktops (by the order they are made, from 0) fail to start"""

    def factory(self) -> DesktopProvider:
        desk = FakeDesktop()
        desk.fail_start = len(self.made) in self.failing
        self.made.append(desk)
        return desk

    def desk(self, handle: DesktopHandle | None) -> FakeDesktop:
        assert handle is not None
        return _desktops[handle.url]

    def close(self) -> None:
        self.ahead.close()
        self.pool.close()


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    r = Rig(tmp_path)
    yield r
    r.close()
    assert not [
        t
        for t in threading.enumerate()
        if t.name in ("setup-ahead", "spare-desktop") and t.is_alive()
    ], "a thread of the pool outlived its close"


def mark(handle: DesktopHandle, attempt: Attempt) -> str:
    """A set-up: leaves a file on the desktop; returns the thread it ran in."""
    _desktops[handle.url].files.add("set-up")
    return threading.current_thread().name


def test_the_first_acquire_starts_a_desktop_and_the_spare_in_the_background(rig: Rig) -> None:
    handle = rig.pool.acquire()
    assert rig.desk(handle) is rig.made[0] and rig.made[0].starts == 1
    wait_for(rig.pool.spare_prepared, "the spare's start", timeout=10)
    assert len(rig.made) == 2 and rig.made[1].starts == 1 and rig.made[1].resets == 0


def test_the_next_acquire_hands_out_the_spare_and_resets_the_used_one_behind(rig: Rig) -> None:
    first = rig.pool.acquire()
    rig.desk(first).files.add("left by case 1")
    second = rig.pool.acquire()  # waits for the spare
    assert rig.desk(second) is rig.made[1] and rig.pool.provider is rig.made[1]
    wait_for(rig.pool.spare_prepared, "the used desktop's reset", timeout=10)
    assert rig.made[0].resets == 1 and rig.made[0].files == set()
    third = rig.pool.acquire()
    assert rig.desk(third) is rig.made[0] and len(rig.made) == 2  # two desktops take turns


def test_without_a_spare_each_acquire_resets_the_one_desktop(tmp_path: Path) -> None:
    r = Rig(tmp_path, spare=False)
    try:
        r.pool.acquire()
        r.made[0].files.add("left")
        r.pool.acquire()
        assert len(r.made) == 1 and r.made[0].resets == 1 and r.made[0].files == set()
        assert not r.ahead.start("case-2", mark, release=lambda v: None)  # nothing to set up on
    finally:
        r.close()


def test_a_dead_desktop_is_replaced_and_counted(tmp_path: Path) -> None:
    r = Rig(tmp_path, spare=False)
    try:
        r.pool.acquire()
        r.made[0].alive = False
        handle = r.pool.acquire()
        assert r.desk(handle) is r.made[1] and r.made[0].closes == 1
        assert r.pool.replacements == 1
    finally:
        r.close()


def test_a_desktop_that_answers_but_cannot_draw_is_replaced(tmp_path: Path) -> None:
    r = Rig(tmp_path, spare=False)
    try:
        r.pool.acquire()
        r.made[0].draws = False
        handle = r.pool.acquire()
        assert r.desk(handle) is r.made[1] and r.made[0].closes == 1
        assert r.pool.replacements == 1
    finally:
        r.close()


def test_a_spare_that_cannot_draw_is_closed_and_the_one_in_use_reset(rig: Rig) -> None:
    first = rig.pool.acquire()
    wait_for(rig.pool.spare_prepared, "the spare's start", timeout=10)
    rig.made[1].draws = False  # the spare came up but cannot draw
    handle = rig.pool.acquire()
    assert rig.desk(handle) is rig.made[0] and rig.desk(first) is rig.made[0]
    assert rig.made[0].resets == 1 and rig.made[1].closes == 1


def test_a_spare_that_failed_to_start_is_dropped_and_the_one_in_use_reset(rig: Rig) -> None:
    rig.failing = {1}  # the first spare
    rig.pool.acquire()
    handle = rig.pool.acquire()  # the spare failed: the one in use, reset
    assert rig.desk(handle) is rig.made[0] and rig.made[0].resets == 1
    assert rig.made[1].starts == 1 and rig.made[1].closes >= 1 and rig.made[1].handle is None
    wait_for(rig.pool.spare_prepared, "a new spare's start", timeout=10)
    assert len(rig.made) == 3 and rig.made[2].handle is not None  # and a new spare is made


def test_a_desktop_that_fails_to_start_fails_acquire_and_is_closed(tmp_path: Path) -> None:
    r = Rig(tmp_path, spare=False)
    try:
        r.failing = {0}
        with pytest.raises(VMStartError, match="does not start"):
            r.pool.acquire()
        assert r.made[0].closes == 1 and r.pool.provider is None
        handle = r.pool.acquire()  # the next try starts a new one
        assert r.desk(handle) is r.made[1]
    finally:
        r.close()


def test_the_set_up_ahead_is_handed_to_its_case_on_the_spare(rig: Rig) -> None:
    rig.pool.acquire()
    assert rig.ahead.start("case-2", mark, release=lambda v: None, work_folder=rig.folder)
    assert not rig.ahead.start("case-2", mark, release=lambda v: None)  # already under way
    assert rig.ahead.pending == "case-2"
    got = rig.ahead.take("case-2")
    assert got is not None and got.error is None and got.value == "setup-ahead"
    assert got.attempt.timings.reset_s is not None  # the wait for the spare, recorded
    assert rig.pool.provider is rig.made[1] and rig.made[1].files == {"set-up"}
    assert rig.folder.is_dir(), "a case handed its set-up keeps its work folder"
    wait_for(rig.pool.spare_prepared, "the used desktop's reset", timeout=10)
    assert rig.made[0].resets == 1  # the used desktop became the spare


def test_a_set_up_for_another_case_is_discarded_and_its_spare_reset(rig: Rig) -> None:
    released: list[str] = []
    rig.pool.acquire()
    assert rig.ahead.start("case-2", mark, release=released.append, work_folder=rig.folder)
    assert rig.ahead.take("case-1-rerun") is None  # the current case's rerun came first
    assert released == ["setup-ahead"] and not rig.folder.exists()
    assert rig.ahead.pending is None
    handle = rig.pool.acquire()  # the rerun gets the spare, reset: nothing of the set-up
    assert rig.desk(handle) is rig.made[1] and rig.made[1].files == set()


def test_a_failed_set_up_is_the_next_cases_own_and_the_pool_stays_usable(rig: Rig) -> None:
    def fail(handle: DesktopHandle, attempt: Attempt) -> None:
        mark(handle, attempt)
        raise SetupError("the task's download failed")

    first = rig.pool.acquire()
    assert rig.ahead.start("case-2", fail, release=lambda v: None, work_folder=rig.folder)
    got = rig.ahead.take("case-2")
    assert got is not None and isinstance(got.error, SetupError) and got.value is None
    assert rig.pool.provider is rig.made[0] and rig.pool.handle == first  # nothing handed out
    assert rig.folder.is_dir(), "a failed set-up's work folder stays for a look"
    again = rig.pool.acquire()  # its rerun: the spare, reset after the failure
    assert rig.desk(again) is rig.made[1] and rig.made[1].files == set()


def test_a_case_waits_for_a_set_up_in_flight_and_says_how_long(rig: Rig) -> None:
    going, finish = threading.Event(), threading.Event()

    def slow(handle: DesktopHandle, attempt: Attempt) -> str:
        going.set()
        assert finish.wait(30)
        return mark(handle, attempt)

    rig.pool.acquire()
    assert rig.ahead.start("case-2", slow, release=lambda v: None)
    assert going.wait(10) and not rig.ahead.prepared()
    threading.Timer(0.3, finish.set).start()
    got = rig.ahead.take("case-2")
    assert got is not None and got.error is None and got.waited_s >= 0.2


def test_without_a_usable_spare_the_case_is_set_up_at_its_start(rig: Rig) -> None:
    rig.pool.acquire()
    rig.made[1].draws = False  # the spare will not pass the health check
    assert rig.ahead.start("case-2", mark, release=lambda v: None)
    assert rig.ahead.take("case-2") is None  # nothing prepared: the case sets up itself
    handle = rig.pool.acquire()
    assert rig.desk(handle) is rig.made[0] and rig.made[0].resets == 1


def test_closing_during_a_set_up_ends_it_and_closes_every_desktop(rig: Rig) -> None:
    started, never = threading.Event(), threading.Event()

    def endless(handle: DesktopHandle, attempt: Attempt) -> None:
        started.set()
        while not never.wait(0.05):
            if _desktops[handle.url].closes:  # its desktop went: a real step fails then
                raise VMStartError("the desktop was closed under the set-up")

    rig.pool.acquire()
    assert rig.ahead.start("case-2", endless, release=lambda v: None, work_folder=rig.folder)
    assert started.wait(10)
    rig.close()
    assert not rig.folder.exists()
    assert all(d.closes >= 1 for d in rig.made) and len(rig.made) == 2
    assert not rig.ahead.start("case-3", mark, release=lambda v: None)  # closed: nothing starts


def test_a_set_up_left_at_session_end_is_released_and_closed_not_reset(rig: Rig) -> None:
    released: list[str] = []
    rig.pool.acquire()
    assert rig.ahead.start("case-2", mark, release=released.append, work_folder=rig.folder)
    wait_for(rig.ahead.prepared, "the set-up ahead to end", timeout=10)
    rig.close()
    assert released == ["setup-ahead"] and not rig.folder.exists()
    assert rig.made[1].resets == 0 and rig.made[1].closes == 1


def test_a_held_desktop_is_reset_only_once_its_case_lets_go(rig: Rig) -> None:
    """Score behind: the case before is still scored on its desktop when the next case takes
    the one set up for it; the held one is reset (to become the spare) only after."""
    first = rig.pool.acquire()
    rig.desk(first).files.add("left by case 1")
    assert rig.ahead.start("case-2", mark, release=lambda v: None)
    done = rig.pool.hold()
    got = rig.ahead.take("case-2")
    assert got is not None and rig.pool.provider is rig.made[1]
    assert rig.made[0].files == {"left by case 1"} and rig.made[0].resets == 0
    assert not rig.pool.spare_prepared(), "the spare is not made before its case lets go"
    done.set()
    wait_for(rig.pool.spare_prepared, "the held desktop's reset", timeout=10)
    assert rig.made[0].resets == 1 and rig.made[0].files == set()


def test_an_acquire_waits_for_a_held_desktop(rig: Rig) -> None:
    rig.pool.acquire()
    held = rig.pool.hold()
    threading.Timer(0.3, held.set).start()
    rig.pool.acquire()
    assert held.is_set()


def test_closing_the_pool_ends_a_hold_and_refuses_acquire(rig: Rig) -> None:
    rig.pool.acquire()
    held = rig.pool.hold()
    rig.pool.close()
    assert held.is_set()
    with pytest.raises(VMStartError, match="closed"):
        rig.pool.acquire()
    assert rig.pool.hold().is_set(), "a hold on a closed pool is over at once"


def test_ports_allowed_reach_every_desktop_made_later(rig: Rig) -> None:
    rig.pool.allow_host_port(8123)
    rig.pool.acquire()
    rig.pool.allow_host_port(9000)
    wait_for(rig.pool.spare_prepared, "the spare's start", timeout=10)
    assert all(d.ports == {8123, 9000} for d in rig.made) and len(rig.made) == 2


def test_take_reserved_without_a_reservation_is_refused(rig: Rig) -> None:
    rig.pool.acquire()
    with pytest.raises(VMStartError, match="set up ahead"):
        rig.pool.take_reserved()
