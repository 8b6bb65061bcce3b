"""``python -m computer_env.procs.group_guard -- CMD ...``: run CMD in this process's group and
end the whole group when this process's parent dies.

Why: :func:`computer_env.procs.spawn` gives a child ``PR_SET_PDEATHSIG``, which reaches that
child only. A server whose own children outlive it (vLLM's API server forks its engine core,
which forks its workers) leaves them orphaned when the harness is killed with SIGKILL: seen with
a real ``vllm serve``, the engine core and worker kept running and holding their memory. The
guard is spawned in its place (own session, so it leads the group), asks for SIGTERM when its
parent dies, and on that or on SIGTERM/SIGINT/SIGHUP ends the group: SIGTERM to every member,
up to ``HOLO_GUARD_GRACE_S`` seconds (default 20) for them to exit, then SIGKILL. When CMD exits
on its own, whatever it left in the group is ended the same way and its exit status is the
guard's.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from computer_env.procs._spawn import set_pdeathsig

GRACE_ENV = "HOLO_GUARD_GRACE_S"


class _Stop(Exception):
    """A signal asked the guard to end the group."""


def _on_signal(signum: int, frame: object) -> None:
    raise _Stop(signum)


def _others_in_group(group: int) -> list[int]:
    """Live members of process group ``group`` other than this process (zombies excluded)."""
    me, out = os.getpid(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] != b"Z":  # fields: state, ppid, pgrp
            out.append(int(entry))
    return out


def end_group(grace_s: float) -> None:
    """SIGTERM the group, wait until its other members are gone (at most ``grace_s``), SIGKILL
    what is left (this process included: the call does not return then)."""
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)  # the group's own SIGTERM reaches the guard too
    group = os.getpgid(0)
    os.killpg(group, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while _others_in_group(group) and time.monotonic() < deadline:
        try:
            os.waitpid(-1, os.WNOHANG)  # reap the direct child, so it is not counted
        except ChildProcessError:
            pass
        time.sleep(0.1)
    if _others_in_group(group):
        os.killpg(group, signal.SIGKILL)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        print("usage: python -m computer_env.procs.group_guard -- CMD ...", file=sys.stderr)
        return 2
    grace = float(os.environ.get(GRACE_ENV, "20"))
    parent = os.getppid()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _on_signal)
    set_pdeathsig(signal.SIGTERM)
    try:
        if os.getppid() != parent:  # the parent died before the request took effect
            raise _Stop(signal.SIGTERM)
        child = subprocess.Popen(argv)  # stays in this process's group
        rc = child.wait()
    except _Stop:
        end_group(grace)
        return 128 + signal.SIGTERM
    end_group(min(grace, 5.0))
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
