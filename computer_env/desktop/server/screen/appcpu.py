"""Is the app behind the active window still working? Its CPU time, read from ``/proc``.

An app that has taken an input event may answer it later, after work that draws nothing (a
save that writes the file and then maps a "keep current format?" dialog; a key that LibreOffice
hands to its main loop as a posted event): the screen is still while the answer is not there
yet. The kernel knows better: every thread's ``/proc/<pid>/task/<tid>/schedstat`` holds the
nanoseconds it ran and the nanoseconds it waited, runnable, for a core. Their sum over the app's
process tree (the active window's ``_NET_WM_PID`` and its descendants) grows while the app
works, even on a loaded host where it waits for a core rather than runs, and stays flat while it
sleeps. Threads in uninterruptible sleep (``D``: disk I/O) count as working too.

The kernel adds a wait to ``schedstat`` only once the thread runs again: a thread kept off the
cores for longer than the settle's window (a loaded host, or its desktop's CPU quota spent for
the period) looks idle by its times alone. So the state each thread is in at the reading counts
as well: a thread that is runnable (``R``) is working, whether it runs or waits for a core.
"""

from __future__ import annotations

import os
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

SAMPLE_S = 0.02
"""How often the app's CPU time is read while a settle waits."""
BUSY_SHARE = 0.15
"""An app using more than this share of one core over the window is working (idle apps wake
for timers: LibreOffice and mousepad use < 1 %, Chromium about 3 %, in short spikes)."""
MAX_PROCESSES = 64
"""At most this many processes of one app tree are read (a browser's renderers included)."""
PROC = "/proc"
"""Where the apps' pids are: the nest's ``/proc`` when the desktop has one (set by the CLI)."""


@dataclass(frozen=True)
class CpuSample:
    """One reading of an app tree: when, its busy nanoseconds so far, and who was read."""

    at: float  # time.monotonic()
    busy_ns: dict[int, int]  # pid -> ran + waited runnable, over all of its threads
    blocked: bool  # some thread was in uninterruptible sleep (disk I/O)
    runnable: bool = False  # some thread was running or waiting for a core (state R)


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        tasks = os.listdir(f"{PROC}/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"{PROC}/{pid}/task/{tid}/children", encoding="ascii") as f:
                out += [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            continue
    return out


def process_tree(pid: int) -> tuple[int, ...]:
    """``pid`` and its descendants (breadth first, at most :data:`MAX_PROCESSES`)."""
    seen: list[int] = [pid]
    i = 0
    while i < len(seen) and len(seen) < MAX_PROCESSES:
        for child in _children(seen[i]):
            if child not in seen:
                seen.append(child)
        i += 1
    return tuple(seen[:MAX_PROCESSES])


def _process_busy(pid: int) -> tuple[int, bool, bool]:
    """The process's busy nanoseconds (all threads), whether a thread is in disk I/O (``D``),
    whether one is runnable (``R``)."""
    total, blocked, runnable = 0, False, False
    base = f"{PROC}/{pid}/task"
    try:
        tasks = os.listdir(base)
    except OSError:
        return 0, False, False
    for tid in tasks:
        try:
            with open(f"{base}/{tid}/schedstat", "rb") as f:
                ran, waited, _ = f.read().split(maxsplit=2)
            total += int(ran) + int(waited)
            if not (blocked and runnable):
                with open(f"{base}/{tid}/stat", "rb") as f:
                    state = f.read().rpartition(b")")[2][:3]
                blocked |= state == b" D "
                runnable |= state == b" R "
        except (OSError, ValueError):
            continue
    return total, blocked, runnable


def sample(pids: tuple[int, ...]) -> CpuSample:
    """Read the busy time and the threads' states of ``pids`` now."""
    busy: dict[int, int] = {}
    blocked = runnable = False
    for pid in pids:
        ns, dee, ready = _process_busy(pid)
        if ns:
            busy[pid] = ns
        blocked |= dee
        runnable |= ready
    return CpuSample(at=time.monotonic(), busy_ns=busy, blocked=blocked, runnable=runnable)


def busy_fraction(before: CpuSample, after: CpuSample) -> float:
    """The share of one core the tree used (ran or waited for) between two samples; 1.0 when
    a thread was in disk I/O. A process that exited in between counts for nothing, one that
    started counts with all of its time (it started in between)."""
    if after.blocked:
        return 1.0
    span = max(1e-6, after.at - before.at)
    used = sum(max(0, ns - before.busy_ns.get(pid, 0)) for pid, ns in after.busy_ns.items())
    return used / 1e9 / span


def available() -> bool:
    """Does this kernel report per-thread scheduler times?"""
    return Path(f"/proc/{os.getpid()}/task/{os.getpid()}/schedstat").is_file()


class AppActivity:
    """CPU samples of one app tree during one settle: is it idle over the trailing window?"""

    def __init__(self, *, share: float = BUSY_SHARE) -> None:
        self.share = share
        self.pid = 0
        self._samples: deque[CpuSample] = deque(maxlen=64)
        self.busy_seen = False  # the app was found working at least once
        self._tried = 0.0  # when add() last ran

    def add(self, pid: int) -> None:
        """Read the tree of ``pid`` now (a different pid than before starts afresh)."""
        self.record(pid, sample(process_tree(pid)) if pid > 0 else None)

    def record(self, pid: int, reading: CpuSample | None) -> None:
        """Keep ``reading`` of the tree of ``pid`` (a different pid than before starts
        afresh; None: no app to read)."""
        self._tried = time.monotonic()
        if pid != self.pid:
            self.pid = pid
            self._samples.clear()
        if reading is not None:
            self._samples.append(reading)

    def next_sample_at(self) -> float:
        return self._tried + SAMPLE_S if self._tried else 0.0

    def idle_for(self, window_s: float) -> bool | None:
        """Has the tree stayed under :data:`BUSY_SHARE` over the last ``window_s``, with no
        thread runnable at the last reading? None while the samples do not span it yet; True
        when there is no app (no pid) to watch."""
        if self.pid <= 0:
            return True
        if not self._samples:
            return None
        last = self._samples[-1]
        base = next((s for s in reversed(self._samples) if s.at <= last.at - window_s), None)
        if base is None:
            return None
        idle = busy_fraction(base, last) <= self.share and not last.runnable
        self.busy_seen |= not idle
        return idle
