"""``--setup-ahead`` (and score behind): the next case is set up on the spare desktop while the
current one plays. Real local sandbox desktops throughout (the pool's real
``LocalSandboxProvider``) under the real ``WorkerPipeline``; what a "set-up" does here is a real
command in the desktop, so what is handed out can be checked. The same flows on fake desktops,
with every state: ``test_setup_ahead_states.py`` and ``test_pipeline_states.py``."""

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
from fixtures.cases.desktops.pool import VMPool
from fixtures.cases.pipeline import Next, NextCase, Phase, WorkerPipeline
from tests.harness.helpers.localdesk import guest_sh
from tests.harness.helpers.pipeline_rig import FakeSteps, Played, SetUp, stand_in_item
from tests.harness.helpers.polling import wait_for

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(
        os.geteuid() != 0 or not shutil.which("bwrap"),
        reason="the local sandbox needs root and bubblewrap",
    ),
]

MARKER = "~/set-up-ahead"


class Rig:
    """The desktops made, a pool with a spare over them, the pipeline (case 1 runs, case 2 is
    next) and its steps, whose set-up leaves :data:`MARKER` on the desktop."""

    def __init__(self, tmp_path: Path, *, score_behind: bool = False) -> None:
        self.made: list[LocalSandboxProvider] = []
        self.pool = VMPool(self.factory, spare=True)
        self.pipeline = WorkerPipeline(
            self.pool, lambda: stand_in_item("case-2"), score_behind=score_behind
        )
        self.steps = FakeSteps(self.pipeline, tmp_path)
        self.steps.set_up_with = _mark
        folder = self.steps.case("case-2").work_folder
        assert folder is not None
        self.folder = folder
        """case 2's work folder (made by its set-up)"""

    def factory(self) -> DesktopProvider:
        self.made.append(LocalSandboxProvider(width=640, height=480, ready_timeout=60.0))
        return self.made[-1]

    def pids(self) -> list[int]:
        return [pid for p in self.made for pid in p.pids()]

    def close(self) -> None:
        self.pipeline.close()
        self.pool.close()


def _marked(handle: DesktopHandle) -> bool:
    return guest_sh(handle, f"test -e {MARKER}")["returncode"] == 0


def _mark(case: NextCase, handle: DesktopHandle, attempt: Attempt) -> None:
    """A set-up: leaves a file on the desktop."""
    assert guest_sh(handle, f"echo ahead > {MARKER}")["returncode"] == 0


def _gone(made: list[LocalSandboxProvider], pids: list[int]) -> bool:
    return all(p.handle is None and p.pids() == [] for p in made) and not any(
        psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        for pid in pids
    )


def test_the_next_case_gets_the_desktop_set_up_ahead_and_the_used_one_is_reset(
    tmp_path: Path,
) -> None:
    rig = Rig(tmp_path)
    pool, p = rig.pool, rig.pipeline
    try:
        first = pool.acquire()  # case 1: the spare starts behind
        assert guest_sh(first, f"echo case1 > {MARKER}")["returncode"] == 0
        assert p.agent_starts(rig.steps)
        assert not p.agent_starts(rig.steps)  # already under way
        got = p.prepared("case-2")
        assert got is not None and got.error is None
        assert got.value_as(SetUp).thread == "setup-ahead", "the set-up ran in its own thread"
        assert got.attempt.timings.reset_s is not None  # the wait for the spare, recorded
        assert pool.provider is rig.made[1] and pool.handle is not None
        assert pool.handle.url != first.url and _marked(pool.handle)  # as the set-up left it
        assert rig.folder.is_dir(), "a case that was handed its set-up keeps its work folder"
        wait_for(pool.spare_prepared, "the used desktop's reset", timeout=120)
        third = pool.acquire()  # case 3, set up at its start: the first desktop, reset
        assert pool.provider is rig.made[0] and not _marked(third)
        pids = rig.pids()
    finally:
        rig.close()
    assert _gone(rig.made, pids)


def test_a_set_up_nobody_takes_is_discarded_and_its_desktop_reset(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    pool, p = rig.pool, rig.pipeline
    try:
        pool.acquire()
        assert p.agent_starts(rig.steps)
        assert p.prepared("case-1-rerun") is None  # the current case's rerun came first
        assert [s.released for s in rig.steps.set_ups] == [1] and not rig.folder.exists()
        assert p.next is Next.NONE
        handle = pool.acquire()  # the rerun gets the spare once it is reset: no marker
        assert pool.provider is rig.made[1] and not _marked(handle)
    finally:
        rig.close()


def test_a_failed_set_up_is_the_next_cases_and_leaves_a_usable_pool(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    pool, p = rig.pool, rig.pipeline

    def fail(case: NextCase, handle: DesktopHandle, attempt: Attempt) -> None:
        _mark(case, handle, attempt)
        raise SetupError("the task's download failed")

    rig.steps.set_up_with = fail
    try:
        first = pool.acquire()
        assert p.agent_starts(rig.steps)
        got = p.prepared("case-2")
        assert got is not None and isinstance(got.error, SetupError)
        assert pool.provider is rig.made[0] and pool.handle == first  # nothing was handed out
        assert rig.folder.is_dir(), "a failed set-up's work folder stays for a look"
        again = pool.acquire()  # the case's rerun: the spare, reset after the failure
        assert pool.provider is rig.made[1] and not _marked(again)
    finally:
        rig.close()


def test_closing_during_a_set_up_ahead_ends_it_and_leaves_no_desktop(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    pool, p = rig.pool, rig.pipeline
    started = threading.Event()

    def endless(case: NextCase, handle: DesktopHandle, attempt: Attempt) -> None:
        started.set()
        guest_sh(handle, "sleep 600", timeout=700)  # a set-up step that would not end

    rig.steps.set_up_with = endless
    try:
        pool.acquire()
        assert p.agent_starts(rig.steps)
        assert started.wait(120), "the set-up ahead did not start"
        pids = rig.pids()
    finally:
        rig.close()  # the session ends (an interrupt): the set-up loses its desktop
    assert not [t for t in threading.enumerate() if t.name == "setup-ahead"]
    assert not rig.folder.exists()
    assert _gone(rig.made, pids)


def test_a_set_up_left_at_session_end_is_closed_not_reset(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    pool, p = rig.pool, rig.pipeline
    try:
        pool.acquire()
        assert p.agent_starts(rig.steps)
        wait_for(
            lambda: rig.steps.set_up_ended and p.next is Next.SET_UP,
            "the set-up ahead to end",
            timeout=120,
        )
        pids = rig.pids()
    finally:
        rig.close()  # -x, or the last case failed: the next case never runs
    assert [s.released for s in rig.steps.set_ups] == [1] and not rig.folder.exists()
    assert not p.agent_starts(rig.steps)  # closed: nothing starts
    assert not [t for t in threading.enumerate() if t.name in ("setup-ahead", "spare-desktop")]
    assert _gone(rig.made, pids) and len(rig.made) == 2


def test_a_held_desktop_is_reset_only_once_its_case_lets_go(tmp_path: Path) -> None:
    """Score behind: the next case's agent takes the desktop set up for it while the case
    before is still scored on its own; that one stays as its agent left it until the case
    lets go, and only then becomes the reset spare (an acquire in between waits for it)."""
    rig = Rig(tmp_path, score_behind=True)
    pool, p, steps = rig.pool, rig.pipeline, rig.steps
    try:
        first = pool.acquire()
        assert guest_sh(first, f"echo case1 > {MARKER}")["returncode"] == 0
        assert p.agent_starts(steps)
        assert p.agent_ended(steps)  # case 1's agent ended: it is scored on its own desktop
        assert p.phase is Phase.SCORING_BEHIND
        assert steps.event("started", "case-2").wait(120), "case 2's agent did not start"
        assert pool.provider is rig.made[1] and _marked(rig.made[1].handle)
        spare, done = pool._spare, p._hold
        assert spare is not None and done is not None and spare.after is done
        wait_for(lambda: spare._thread.is_alive(), "the spare's thread", timeout=5)
        assert _marked(first), "the held desktop was reset while its case was scored"
        assert not spare.prepared(), "the spare is not made before its case lets go"
        p.case_ends()  # case 1 is scored
        assert done.is_set()
        wait_for(pool.spare_prepared, "the held desktop's reset", timeout=120)
        run = p.case_starts("case-2")
        assert run is not None
        steps.finish("case-2")
        assert run.result(Played).handle == rig.made[1].handle
        p.case_ends()
        run.close()
        third = pool.acquire()  # case 3, set up at its start: the first desktop, now reset
        assert pool.provider is rig.made[0] and not _marked(third)
        # an acquire while the desktop in use is held waits for its case to let go
        held = pool.hold()
        threading.Timer(1.0, held.set).start()
        handed = pool.acquire()
        assert held.is_set() and handed.url in {d.handle.url for d in rig.made if d.handle}
        pids = rig.pids()
    finally:
        rig.close()
    assert _gone(rig.made, pids)


def test_closing_ends_a_hold(tmp_path: Path) -> None:
    """A session that ends while a case is scored behind closes both desktops at once, and
    the next case's agent started ahead with them."""
    rig = Rig(tmp_path, score_behind=True)
    pool, p, steps = rig.pool, rig.pipeline, rig.steps
    try:
        pool.acquire()
        assert p.agent_starts(steps) and p.agent_ended(steps)
        assert steps.event("started", "case-2").wait(120), "case 2's agent did not start"
        done = p._hold
        assert done is not None and not done.is_set()
        pids = rig.pids()
    finally:
        rig.close()
    assert done.is_set() and "case-2" in steps.closed
    assert not [t for t in threading.enumerate() if t.name == "agent-ahead"]
    assert _gone(rig.made, pids)
