"""Ownership of every process the guest server starts.

Children run in their own session (so a whole group can be killed) and get ``SIGKILL`` when the
server dies (``PR_SET_PDEATHSIG``). That signal fires when the *thread* that forked the child
ends, and the HTTP server runs each request in a short-lived thread, so every child is forked
from one long-lived spawner thread. The server also makes itself a *child subreaper*, so that
grandchildren which double-fork (``xdg-open``, LibreOffice) are re-parented to it and can be
ended by :meth:`ChildProcesses.close` and reaped instead of lingering as zombies.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import subprocess
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

logger = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_libc: ctypes.CDLL | None = None


def _prctl(option: int, arg: int) -> None:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    _libc.prctl(option, arg, 0, 0, 0)


def die_with_parent() -> None:
    """``preexec_fn``: the child gets SIGKILL when the process that started it dies."""
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _proc_table() -> dict[int, tuple[int, str]]:
    """pid -> (ppid, state) for every process visible in /proc."""
    table: dict[int, tuple[int, str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        rest = stat[stat.rfind(")") + 2 :].split()
        table[int(entry.name)] = (int(rest[1]), rest[0])
    return table


def descendants(root: int) -> list[int]:
    """All live descendants of ``root`` (children first, then theirs)."""
    table = _proc_table()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _state) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: list[int] = []
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


class ChildProcesses:
    """Starts, tracks and finally kills the server's child processes."""

    def __init__(self, *, cwd: Path | None = None, reap_interval: float = 2.0) -> None:
        self._cwd = cwd
        self._lock = threading.Lock()
        self._owned: dict[int, subprocess.Popen[bytes] | subprocess.Popen[str]] = {}
        self._closed = threading.Event()
        self._reap_interval = reap_interval
        self._reaper: threading.Thread | None = None
        self._spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="spawner")

    def become_subreaper(self) -> None:
        """Adopt orphaned grandchildren and reap the ones nobody waits for."""
        try:
            _prctl(_PR_SET_CHILD_SUBREAPER, 1)
        except OSError:  # pragma: no cover - non-Linux
            logger.warning("could not become a child subreaper")
            return
        self._reaper = threading.Thread(target=self._reap_loop, name="reaper", daemon=True)
        self._reaper.start()

    def popen(
        self,
        command: str | Sequence[str],
        *,
        shell: bool = False,
        text: bool = True,
        stdin: int | None = subprocess.DEVNULL,
        stdout: int | None = subprocess.DEVNULL,
        stderr: int | None = subprocess.DEVNULL,
        cwd: Path | str | None = None,
        env: dict[str, str] | None = None,
    ) -> subprocess.Popen[str]:
        """Start ``command`` in its own session, owned by this registry."""

        def spawn() -> subprocess.Popen[str]:
            with self._lock:
                proc = subprocess.Popen(  # noqa: S603 - running commands is this server's job
                    command,
                    shell=shell,
                    text=text,
                    stdin=stdin,
                    stdout=stdout,
                    stderr=stderr,
                    cwd=cwd or self._cwd,
                    env=env,
                    start_new_session=True,
                    preexec_fn=die_with_parent,
                )
                self._owned[proc.pid] = proc
            return proc

        return self._spawner.submit(spawn).result()

    def run(
        self,
        command: str | Sequence[str],
        *,
        shell: bool = False,
        timeout: float = 120.0,
        cwd: Path | str | None = None,
        merge_stderr: bool = False,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run to completion; on timeout kill its whole group and raise ``TimeoutExpired``."""
        proc = self.popen(
            command,
            shell=shell,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
            cwd=cwd,
            env=env,
        )
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill(proc)
            proc.communicate()
            raise
        finally:
            self.forget(proc)
        # The command is done, but what it started in its group in the background is not ours
        # to end here: a command may deliberately leave a daemon behind (like OSWorld's server).
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err or "")

    def forget(self, proc: subprocess.Popen[str]) -> None:
        """Stop tracking a process that has been waited for."""
        with self._lock:
            self._owned.pop(proc.pid, None)

    @staticmethod
    def kill(proc: subprocess.Popen[str]) -> None:
        """SIGKILL the process group of ``proc``."""
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def _reap_loop(self) -> None:
        me = os.getpid()
        while not self._closed.wait(self._reap_interval):
            try:
                self.reap_orphans(me)
            except Exception:  # noqa: BLE001 - the reaper must never die
                logger.exception("reaper failed")

    def reap_orphans(self, me: int | None = None) -> None:
        """waitpid() zombies that are our children but not owned by a Popen object."""
        me = me or os.getpid()
        with self._lock:
            owned = set(self._owned)
            for pid, (ppid, state) in _proc_table().items():
                if ppid == me and state == "Z" and pid not in owned:
                    try:
                        os.waitpid(pid, os.WNOHANG)
                    except ChildProcessError:
                        pass
            for pid, proc in list(self._owned.items()):
                if proc.poll() is not None:
                    del self._owned[pid]

    def close(self) -> None:
        """Kill every process group we started and every remaining descendant."""
        self._closed.set()
        self._spawner.shutdown(wait=True)
        with self._lock:
            owned = list(self._owned.values())
            self._owned.clear()
        for proc in owned:
            self.kill(proc)
        for pid in descendants(os.getpid()):
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        for proc in owned:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                logger.warning("process %s did not die after SIGKILL", proc.pid)
        self.reap_orphans()
