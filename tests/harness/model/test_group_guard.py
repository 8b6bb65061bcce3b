"""``computer_env.procs.group_guard``: a guarded command's whole process group ends with the
guard's parent, even when that parent is killed with SIGKILL (real processes: a shell that
leaves a background child, as vLLM's API server leaves its engine core)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from tests.harness.helpers.polling import wait_for

GUARD = [sys.executable, "-m", "computer_env.procs.group_guard", "--"]
ROOT = Path(__file__).resolve().parents[3]


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of process group ``pgid``."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_bytes().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != b"Z":
            out.append(int(entry.name))
    return out


def test_a_parent_killed_by_sigkill_takes_the_whole_guarded_group_with_it() -> None:
    """The parent (a Python process that spawned the guard as the harness does) is SIGKILLed:
    the guarded shell and the background child it left are gone within seconds."""
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from computer_env.procs import spawn; "
            f"p = spawn({GUARD!r} + ['sh', '-c', 'sleep 300 & exec sleep 301']); "
            "print(p.pid, flush=True); time.sleep(300)",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert parent.stdout is not None
        guard = int(parent.stdout.readline())
        wait_for(lambda: len(group_members(guard)) >= 3, "guard, shell and its child", 30)
        parent.kill()
        parent.wait(timeout=10)
        wait_for(lambda: not group_members(guard), "the guarded group to end", 30, interval=0.1)
    finally:
        parent.kill()


def test_sigterm_ends_the_group_and_an_exit_passes_through() -> None:
    """SIGTERM to the guard ends the group (128+15); a command that exits on its own gives its
    status, and what it left running in the group is ended too."""
    guard = subprocess.Popen(
        GUARD + ["sh", "-c", "sleep 300 & exec sleep 301"], cwd=ROOT, start_new_session=True
    )
    wait_for(lambda: len(group_members(guard.pid)) >= 3, "guard, shell and its child", 30)
    guard.send_signal(signal.SIGTERM)
    assert guard.wait(timeout=30) == 128 + signal.SIGTERM
    wait_for(lambda: not group_members(guard.pid), "the guarded group to end", 30)
    done = subprocess.Popen(
        GUARD + ["sh", "-c", "sleep 300 & exit 7"], cwd=ROOT, start_new_session=True
    )
    assert done.wait(timeout=60) == 7
    assert not group_members(done.pid)  # the sleep the shell left was ended with the group
