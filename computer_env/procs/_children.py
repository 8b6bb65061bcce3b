"""A registry of owned child processes that ends them all on close (the guest server's)."""

from __future__ import annotations

import logging
import os
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psutil

from computer_env.procs._ops import descendants, kill_pids, signal_group
from computer_env.procs._spawn import become_subreaper, spawn

log = logging.getLogger(__name__)


class ChildProcesses:
    """Starts (with :func:`spawn`), tracks and finally kills a set of child processes.

    With :meth:`become_subreaper`, grandchildren that double-fork (``xdg-open``, LibreOffice) are
    re-parented here, ended by :meth:`close` and reaped meanwhile instead of lingering as zombies.
    """

    def __init__(self, *, cwd: Path | None = None, reap_interval: float = 2.0) -> None:
        self._cwd = cwd
        self._lock = threading.Lock()
        self._owned: dict[int, subprocess.Popen[Any]] = {}
        self._closed = threading.Event()
        self._reap_interval = reap_interval

    def become_subreaper(self) -> None:
        """Adopt orphaned grandchildren and reap the ones nobody waits for."""
        try:
            become_subreaper()
        except OSError:  # pragma: no cover - non-Linux
            log.warning("could not become a child subreaper")
            return
        threading.Thread(target=self._reap_loop, name="reaper", daemon=True).start()

    def popen(self, command: str | Sequence[str], *, shell: bool = False, text: bool = True,
              stdin: int | None = subprocess.DEVNULL, stdout: int | None = subprocess.DEVNULL,
              stderr: int | None = subprocess.DEVNULL, cwd: Path | str | None = None,
              env: dict[str, str] | None = None) -> subprocess.Popen[Any]:
        """Start ``command`` in its own session, owned by this registry."""
        with self._lock:  # the reaper must not reap it before it is registered
            if self._closed.is_set():
                raise RuntimeError("the child process registry is closed")
            proc = spawn(command, shell=shell, text=text, stdin=stdin, stdout=stdout,
                         stderr=stderr, cwd=cwd or self._cwd, env=env)
            self._owned[proc.pid] = proc
        return proc

    def run(self, command: str | Sequence[str], *, shell: bool = False, timeout: float = 120.0,
            cwd: Path | str | None = None, merge_stderr: bool = False,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """Run to completion; on timeout kill its whole group and raise ``TimeoutExpired``."""
        proc = self.popen(command, shell=shell, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
                          cwd=cwd, env=env)
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

    def forget(self, proc: subprocess.Popen[Any]) -> None:
        """Stop tracking a process that has been waited for."""
        with self._lock:
            self._owned.pop(proc.pid, None)

    @staticmethod
    def kill(proc: subprocess.Popen[Any]) -> None:
        """SIGKILL the process group of ``proc`` (the caller waits for it)."""
        signal_group(proc.pid)

    def _reap_loop(self) -> None:
        while not self._closed.wait(self._reap_interval):
            try:
                self.reap_orphans()
            except Exception:  # noqa: BLE001 - the reaper must never die
                log.exception("reaper failed")

    def reap_orphans(self) -> None:
        """waitpid() zombies that are our children but not owned by a Popen object."""
        with self._lock:
            try:
                children = psutil.Process().children()
            except psutil.Error:
                children = []
            for child in children:
                try:
                    zombie = child.status() == psutil.STATUS_ZOMBIE
                except psutil.Error:
                    continue
                if zombie and child.pid not in self._owned:
                    try:
                        os.waitpid(child.pid, os.WNOHANG)
                    except ChildProcessError:
                        pass
            for pid, proc in list(self._owned.items()):
                if proc.poll() is not None:
                    del self._owned[pid]

    def close(self) -> None:
        """Kill every process group we started and every remaining descendant."""
        self._closed.set()
        with self._lock:
            owned = list(self._owned.values())
            self._owned.clear()
        for proc in owned:
            self.kill(proc)
        kill_pids(descendants(os.getpid()))
        for proc in owned:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                log.warning("process %s did not die after SIGKILL", proc.pid)
        self.reap_orphans()
