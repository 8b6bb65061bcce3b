"""Ending owned processes and walking the process table (psutil)."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from typing import Any

import psutil

log = logging.getLogger(__name__)


def signal_group(pid: int, sig: int = signal.SIGKILL) -> None:
    """Send ``sig`` to the process group led by ``pid``; nothing when it is gone."""
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def kill_group(proc: subprocess.Popen[Any], *, grace: float = 0.0, timeout: float = 5.0) -> None:
    """End ``proc``'s whole process group and reap ``proc`` (idempotent).

    ``grace > 0``: SIGTERM the group first and give the leader that long to exit. The group is
    then sent SIGKILL even when its leader has exited: what it started may still run."""
    if grace > 0 and proc.poll() is None:
        signal_group(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            log.warning("process %s did not exit %.1f s after SIGTERM", proc.pid, grace)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    except PermissionError:
        proc.kill()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        log.warning("process %s did not exit %.1f s after SIGKILL", proc.pid, timeout)


def descendants(pid: int) -> list[int]:
    """Every live descendant of ``pid`` (empty when it is gone)."""
    try:
        return [child.pid for child in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return []


def kill_pids(pids: Sequence[int]) -> None:
    """SIGKILL each of ``pids`` that still exists."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def parent_pid(pid: int) -> int | None:
    """The parent of ``pid``, None when it is gone."""
    try:
        return psutil.Process(pid).ppid()
    except psutil.Error:
        return None


def running_since(pid: int, when: float | None = None) -> bool:
    """Is ``pid`` a process that exists and, given ``when`` (epoch seconds), started no later
    (1 s of slack)? A pid that was reused by a younger process is not the one that was meant."""
    try:
        started = psutil.Process(pid).create_time()
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:
        return True  # it exists, its age cannot be read: assume it is the one
    return when is None or started <= when + 1.0


def pids_of_uid(uid: int) -> list[int]:
    """Live (non-zombie) processes whose real uid is ``uid``."""
    gone = (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
    return [
        p.pid
        for p in psutil.process_iter(["uids", "status"])
        if p.info["uids"] is not None
        and p.info["uids"].real == uid
        and p.info["status"] not in gone
    ]


def kill_uid(uid: int, *, timeout: float = 5.0) -> bool:
    """SIGKILL every process running as ``uid`` and wait until none is left. True if none left.

    The kill is done by a helper running as ``uid`` itself (``kill(-1)``), which reaches every
    process of that uid atomically, including ones that forked meanwhile.
    """
    deadline = time.monotonic() + timeout
    while True:
        if not pids_of_uid(uid):
            return True
        subprocess.run(
            ["/bin/sh", "-c", "kill -9 -1"],
            user=uid,
            group=uid,
            extra_groups=[],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
        if time.monotonic() > deadline:
            log.warning(
                "processes of uid %d still alive after %.1f s: %s", uid, timeout, pids_of_uid(uid)
            )
            return False
        time.sleep(0.005)  # polling interval of the check above


def pss_kib(pids: Sequence[int]) -> int:
    """Sum of proportional set size (PSS, KiB) over ``pids`` (RSS where PSS is unreadable)."""
    total = 0
    for pid in pids:
        try:
            process = psutil.Process(pid)
            try:
                total += process.memory_full_info().pss // 1024
            except psutil.AccessDenied:
                total += process.memory_info().rss // 1024
        except psutil.Error:
            continue
    return total
