"""``--setup-ahead``: the next case is set up on the spare desktop while the current one plays.
Real local sandbox desktops throughout (the pool's real ``LocalSandboxProvider``); what a
"set-up" does here is a real command in the desktop, so what is handed out can be checked."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import psutil
import pytest

from computer_env.desktop.providers.base import DesktopHandle, DesktopProvider
from computer_env.desktop.providers.local.provider import LocalSandboxProvider
from computer_env.errors import SetupError
from fixtures.cases.attempt import Attempt
from fixtures.cases.desktops.ahead import AheadSetup
from fixtures.cases.desktops.pool import VMPool
from tests.harness.helpers.localdesk import guest_sh
from tests.harness.helpers.polling import wait_for

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(
        os.geteuid() != 0 or not shutil.which("bwrap"),
        reason="the local sandbox needs root and bubblewrap",
    ),
]

MARKER = "~/set-up-ahead"


def _pool(made: list[LocalSandboxProvider]) -> VMPool:
    def factory() -> DesktopProvider:
        made.append(LocalSandboxProvider(width=640, height=480, ready_timeout=60.0))
        return made[-1]

    return VMPool(factory, spare=True)


def _rig(tmp_path: Path) -> tuple[list[LocalSandboxProvider], VMPool, AheadSetup, Path]:
    """The desktops made, a pool with a spare, its set-up ahead, and an empty work folder."""
    made: list[LocalSandboxProvider] = []
    pool = _pool(made)
    folder = tmp_path / "work"
    folder.mkdir()
    return made, pool, AheadSetup(pool), folder


def _marked(handle: DesktopHandle) -> bool:
    return guest_sh(handle, f"test -e {MARKER}")["returncode"] == 0


def _mark(handle: DesktopHandle, attempt: Attempt) -> str:
    """A set-up: leaves a file on the desktop; says which thread ran it."""
    assert guest_sh(handle, f"echo ahead > {MARKER}")["returncode"] == 0
    return threading.current_thread().name


def _gone(made: list[LocalSandboxProvider], pids: list[int]) -> bool:
    return all(p.handle is None and p.pids() == [] for p in made) and not any(
        psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        for pid in pids
    )


def test_the_next_case_gets_the_desktop_set_up_ahead_and_the_used_one_is_reset(
    tmp_path: Path,
) -> None:
    made, pool, ahead, folder = _rig(tmp_path)
    try:
        first = pool.acquire()  # case 1: the spare starts behind
        assert guest_sh(first, f"echo case1 > {MARKER}")["returncode"] == 0
        assert ahead.start("case-2", _mark, release=lambda v: None, work_folder=folder)
        assert not ahead.start("case-2", _mark, release=lambda v: None)  # already under way
        got = ahead.take("case-2")
        assert got is not None and got.error is None
        assert got.value == "setup-ahead", "the set-up ran in the set-up-ahead thread"
        assert got.attempt.timings.reset_s is not None  # the wait for the spare, recorded
        assert pool.provider is made[1] and pool.handle is not None
        assert pool.handle.url != first.url and _marked(pool.handle)  # as the set-up left it
        assert folder.is_dir(), "a case that was handed its set-up keeps its work folder"
        wait_for(pool.spare_prepared, "the used desktop's reset", timeout=120)
        third = pool.acquire()  # case 3, set up at its start: the first desktop, reset
        assert pool.provider is made[0] and not _marked(third)
        pids = [pid for p in made for pid in p.pids()]
    finally:
        ahead.close()
        pool.close()
    assert _gone(made, pids)


def test_a_set_up_nobody_takes_is_discarded_and_its_desktop_reset(tmp_path: Path) -> None:
    made, pool, ahead, folder = _rig(tmp_path)
    released: list[str] = []
    try:
        pool.acquire()
        assert ahead.start("case-2", _mark, release=released.append, work_folder=folder)
        assert ahead.take("case-1-rerun") is None  # the current case's rerun came first
        assert released == ["setup-ahead"] and not folder.exists()
        assert ahead.pending is None
        handle = pool.acquire()  # the rerun gets the spare once it is reset: no marker
        assert pool.provider is made[1] and not _marked(handle)
    finally:
        ahead.close()
        pool.close()


def test_a_failed_set_up_is_the_next_cases_and_leaves_a_usable_pool(tmp_path: Path) -> None:
    made, pool, ahead, folder = _rig(tmp_path)

    def fail(handle: DesktopHandle, attempt: Attempt) -> None:
        _mark(handle, attempt)
        raise SetupError("the task's download failed")

    try:
        first = pool.acquire()
        assert ahead.start("case-2", fail, release=lambda v: None, work_folder=folder)
        got = ahead.take("case-2")
        assert got is not None and isinstance(got.error, SetupError)
        assert pool.provider is made[0] and pool.handle == first  # nothing was handed out
        assert folder.is_dir(), "a failed set-up's work folder stays for a look"
        again = pool.acquire()  # the case's rerun: the spare, reset after the failure
        assert pool.provider is made[1] and not _marked(again)
    finally:
        ahead.close()
        pool.close()


def test_closing_during_a_set_up_ahead_ends_it_and_leaves_no_desktop(tmp_path: Path) -> None:
    made, pool, ahead, folder = _rig(tmp_path)
    started = threading.Event()

    def endless(handle: DesktopHandle, attempt: Attempt) -> None:
        started.set()
        guest_sh(handle, "sleep 600", timeout=700)  # a set-up step that would not end

    try:
        pool.acquire()
        assert ahead.start("case-2", endless, release=lambda v: None, work_folder=folder)
        assert started.wait(120), "the set-up ahead did not start"
        pids = [pid for p in made for pid in p.pids()]
    finally:
        ahead.close()  # the session ends (an interrupt): the set-up loses its desktop
        pool.close()
    assert not [t for t in threading.enumerate() if t.name == "setup-ahead"]
    assert not folder.exists()
    assert _gone(made, pids)


def test_a_set_up_left_at_session_end_is_closed_not_reset(tmp_path: Path) -> None:
    made, pool, ahead, folder = _rig(tmp_path)
    released: list[str] = []
    try:
        pool.acquire()
        assert ahead.start("case-2", _mark, release=released.append, work_folder=folder)
        wait_for(ahead.prepared, "the set-up ahead to end", timeout=120)
        pids = [pid for p in made for pid in p.pids()]
    finally:
        ahead.close()  # -x, or the last case failed: the next case never runs
        pool.close()
    assert released == ["setup-ahead"] and not folder.exists()
    assert not ahead.start("case-3", _mark, release=released.append)  # closed: nothing starts
    assert not [t for t in threading.enumerate() if t.name in ("setup-ahead", "spare-desktop")]
    assert _gone(made, pids) and len(made) == 2


def test_a_held_desktop_is_reset_only_once_its_case_lets_go(tmp_path: Path) -> None:
    """Score behind: the next case takes the desktop set up for it while the case before is
    still scored on its own; that one stays as its agent left it until the case lets go, and
    only then becomes the reset spare (an acquire in between waits for it)."""
    made, pool, ahead, folder = _rig(tmp_path)
    try:
        first = pool.acquire()
        assert guest_sh(first, f"echo case1 > {MARKER}")["returncode"] == 0
        assert ahead.start("case-2", _mark, release=lambda v: None, work_folder=folder)
        done = pool.hold()  # case 1's agent ended: it is scored on its own desktop
        got = ahead.take("case-2")
        assert got is not None and got.error is None and pool.provider is made[1]
        spare = pool._spare
        assert spare is not None and spare.after is done
        wait_for(lambda: spare._thread.is_alive(), "the spare's thread", timeout=5)
        assert _marked(first), "the held desktop was reset while its case was scored"
        assert not spare.prepared(), "the spare is not made before its case lets go"
        done.set()  # case 1 is scored
        wait_for(pool.spare_prepared, "the held desktop's reset", timeout=120)
        third = pool.acquire()  # the first desktop, now reset
        assert pool.provider is made[0] and not _marked(third)
        # an acquire while the desktop in use is held waits for its case to let go
        held = pool.hold()
        threading.Timer(1.0, held.set).start()
        handed = pool.acquire()
        assert held.is_set() and handed.url in {p.handle.url for p in made if p.handle}
        pids = [pid for p in made for pid in p.pids()]
    finally:
        ahead.close()
        pool.close()
    assert _gone(made, pids)


def test_closing_the_pool_ends_a_hold(tmp_path: Path) -> None:
    """A session that ends while a case is scored behind closes both desktops at once."""
    made, pool, ahead, folder = _rig(tmp_path)
    try:
        pool.acquire()
        assert ahead.start("case-2", _mark, release=lambda v: None, work_folder=folder)
        done = pool.hold()
        assert ahead.take("case-2") is not None
        pids = [pid for p in made for pid in p.pids()]
    finally:
        ahead.close()
        pool.close()
    assert done.is_set()
    assert _gone(made, pids)
