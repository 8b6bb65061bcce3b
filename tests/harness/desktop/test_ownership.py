"""Who may remove what local desktops leave on the host
(``computer_env.desktop.providers.local.ownership``), and how a slot's lock file and a cgroup's
name carry the run. Pure rules over real processes (alive, ended, on another host) and real
files in a temporary state folder; no desktop, no root (``test_desktop_leftovers.py`` checks the
same on real desktops)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from computer_env.desktop.providers.local import cgroups, netns, ownership
from computer_env.desktop.providers.local.ownership import (
    RUN_ENV,
    Run,
    Sweeper,
    current_run,
    explicit_sweeper,
    may_sweep,
    new_run,
    prune_records,
    record,
    start_run,
)


@pytest.fixture(autouse=True)
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Run records and slot locks in a folder of the test's own."""
    monkeypatch.setattr(ownership, "STATE_DIR", tmp_path)
    monkeypatch.setattr(netns, "LOCK_DIR", tmp_path)
    monkeypatch.delenv(RUN_ENV, raising=False)
    yield tmp_path


@pytest.fixture
def ended() -> Run:
    """A run whose owner process has ended (a real process, started and reaped)."""
    proc = subprocess.Popen(["sleep", "60"])
    run = new_run(pid=proc.pid)
    proc.kill()
    proc.wait(timeout=30)
    return run


@pytest.fixture
def living() -> Iterator[Run]:
    """A run whose owner process lives for the test."""
    proc = subprocess.Popen(["sleep", "600"])
    try:
        yield new_run(pid=proc.pid)
    finally:
        proc.kill()
        proc.wait(timeout=30)


def test_a_run_round_trips_and_anything_else_is_no_run() -> None:
    run = new_run()
    assert Run.decode(run.encode()) == run and run.pid == os.getpid()
    for bad in ("", "abc", "xyz:1:2:h", "0123456789ab:pid:2:h", "0123456789ab:1:2"):
        assert Run.decode(bad) is None, bad


def test_a_run_lives_while_its_owner_does(ended: Run, living: Run) -> None:
    assert new_run().alive() is True and living.alive() is True
    assert ended.alive() is False
    assert Run(living.id, living.pid, living.start + 1, living.host).alive() is False  # reused
    assert Run(living.id, living.pid, living.start, "another-host").alive() is None
    with pytest.raises(ValueError, match="no process"):
        new_run(pid=ended.pid)


def test_an_owner_named_in_bytes_that_are_not_utf8_still_lives() -> None:
    """A process names itself in any bytes (prctl PR_SET_NAME; the audit's exploits do): a
    name that is not UTF-8 must not make a living owner look gone (its run swept)."""
    rename = (
        "import ctypes, sys, time\n"
        "ctypes.CDLL(None).prctl(15, b'\\xff\\xfe-owner', 0, 0, 0)\n"
        "print('named', flush=True)\n"
        "time.sleep(600)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", rename], stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"named\n"
        assert b"\xff\xfe-owner" in Path(f"/proc/{proc.pid}/stat").read_bytes()
        run = new_run(pid=proc.pid)
        assert run.alive() is True
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert run.alive() is False


def test_a_run_is_handed_to_children_and_a_new_one_replaces_it() -> None:
    first = current_run()  # none in the environment: this process's own, handed on
    assert os.environ[RUN_ENV] == first.encode() and current_run() == first
    child = subprocess.run(
        [sys.executable, "-c", f"import os; print(os.environ[{RUN_ENV!r}])"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert child.stdout.strip() == first.encode()
    second = start_run()  # a child suite's controller: a run of its own
    assert second.id != first.id and current_run() == second


def test_the_rules_of_who_may_sweep(ended: Run, living: Run) -> None:
    mine = new_run()
    for run in (mine, ended, living):
        record(run)
    me, explicit = Sweeper(mine), explicit_sweeper()
    assert may_sweep(mine.id, me)  # the run's own
    assert may_sweep(None, me) and may_sweep("not-a-run-id", me)  # made before runs
    assert may_sweep(ended.id, me) and may_sweep(ended.id, explicit)  # its run ended
    assert not may_sweep(living.id, me) and not may_sweep(living.id, explicit)  # it lives
    assert may_sweep(living.id, Sweeper(living))  # ... and sweeps its own
    assert may_sweep("0123456789abcdef", me)  # never recorded here: nothing says it lives
    foreign = Run("00aa11bb22cc", living.pid, living.start, "another-host")
    record(foreign)
    assert not may_sweep(foreign.id, me)  # unknowable here: left to its own run
    assert may_sweep(foreign.id, explicit)  # the explicit sweep removes it


def test_records_of_ended_runs_are_pruned(state_dir: Path, ended: Run, living: Run) -> None:
    mine = new_run()
    foreign = Run("00aa11bb22cc", 1, 1, "another-host")
    for run in (mine, ended, living, foreign):
        record(run)
    (state_dir / "runs" / "0123456789ab").write_text("garbage")
    assert sorted(prune_records(Sweeper(mine))) == sorted([ended.id, "0123456789ab"])
    assert prune_records(explicit_sweeper()) == [foreign.id]
    assert sorted(p.name for p in (state_dir / "runs").iterdir()) == sorted([mine.id, living.id])


def test_a_slot_lock_records_its_run_and_a_clean_release_clears_it(living: Run) -> None:
    record(living)
    fd = netns._try_lock(7)
    assert fd is not None
    try:
        assert netns._read_run(fd) is None  # a new slot: nobody's
        netns._write_owner(fd, living.id, living.pid)
        assert netns._try_lock(7) is None  # held
        assert netns._read_run(fd) == living.id
    finally:
        os.close(fd)
    again = netns._try_lock(7)  # the owner died: the lock is free, the record stays
    assert again is not None
    try:
        assert netns._read_run(again) == living.id
        assert not may_sweep(netns._read_run(again), Sweeper(new_run()))
        netns._write_owner(again, "", 0)  # a clean release or a sweep
        assert netns._read_run(again) is None
    finally:
        os.close(again)


def test_a_cgroup_name_carries_its_owner_and_run() -> None:
    new = cgroups._NAME.match("holo-desktop-4242-0123456789ab-a1b2c3")
    old = cgroups._NAME.match("holo-desktop-4242-a1b2c3")
    assert new is not None and new.groups() == ("4242", "0123456789ab")
    assert old is not None and old.groups() == ("4242", None)
    assert cgroups._NAME.match("holo-desktop-x-a1b2c3") is None


def test_stale_cgroups_are_those_of_dead_owners_a_sweeper_may_remove(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ended: Run, living: Run
) -> None:
    mine = new_run()
    for run in (mine, ended, living):
        record(run)
    dead_pid = ended.pid
    dirs = {name: tmp_path / name for name in ("mine", "ended", "living", "old", "alive")}
    for d in dirs.values():
        d.mkdir()
    owned = [
        (dirs["mine"], dead_pid, mine.id),
        (dirs["ended"], dead_pid, ended.id),
        (dirs["living"], dead_pid, living.id),
        (dirs["old"], dead_pid, None),
        (dirs["alive"], os.getpid(), living.id),
    ]
    monkeypatch.setattr(cgroups, "_owned", lambda: owned)
    stale = cgroups.stale_cgroups(Sweeper(mine))
    assert stale == [dirs["mine"], dirs["ended"], dirs["old"]]  # never a live owner's
    # the living run's own sweep: its own and the ended run's; this process's run lives
    assert cgroups.stale_cgroups(Sweeper(living)) == [dirs["ended"], dirs["living"], dirs["old"]]
