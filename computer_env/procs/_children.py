"""A registry of owned child processes that ends them all on close (the guest server's)."""

from __future__ import annotations

import logging
import os
import selectors
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psutil

from computer_env.procs._ops import descendants, kill_pids, signal_group
from computer_env.procs._spawn import become_subreaper, spawn

log = logging.getLogger(__name__)


OUTPUT_LINGER_S = 1.0
"""How long a command's output is still read after it exited (for what its background children
print last); a child that keeps the pipe open longer is not waited for."""
OUTPUT_LIMIT = 16 << 20
"""Bytes of each output stream kept; the rest is drained (the command never blocks on a full
pipe) and dropped."""


def _text(data: bytearray, dropped: int) -> str:
    text = data.decode("utf-8", "replace")
    return text + (f"\n[{dropped} more bytes of output dropped]" if dropped else "")


def collect_output(proc: subprocess.Popen[Any], timeout: float) -> tuple[str, str, bool]:
    """Read ``proc``'s stdout and stderr (binary pipes) until both close, or until
    :data:`OUTPUT_LINGER_S` after it exited, or ``timeout``: (stdout, stderr, timed out). Bytes
    that are not UTF-8 become U+FFFD."""
    kept: dict[int, bytearray] = {}
    dropped: dict[int, int] = {}
    sel = selectors.DefaultSelector()
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            sel.register(stream.fileno(), selectors.EVENT_READ)
            kept[stream.fileno()], dropped[stream.fileno()] = bytearray(), 0
    deadline = time.monotonic() + timeout
    exited_at: float | None = None
    timed_out = False
    try:
        while sel.get_map():
            now = time.monotonic()
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at >= OUTPUT_LINGER_S:
                break
            if exited_at is None and now >= deadline:
                timed_out = True
                break
            limit = deadline if exited_at is None else exited_at + OUTPUT_LINGER_S
            for key, _ in sel.select(timeout=max(0.0, min(limit - now, 0.1))):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fd)
                    continue
                room = OUTPUT_LIMIT - len(kept[key.fd])
                kept[key.fd] += chunk[: max(room, 0)]
                dropped[key.fd] += max(len(chunk) - max(room, 0), 0)
    finally:
        sel.close()
    if not timed_out:
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
    fds = [s.fileno() if s is not None else -1 for s in (proc.stdout, proc.stderr)]
    out, err = (_text(kept[fd], dropped[fd]) if fd in kept else "" for fd in fds)
    return out, err, timed_out


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
    ) -> subprocess.Popen[Any]:
        """Start ``command`` in its own session, owned by this registry."""
        with self._lock:  # the reaper must not reap it before it is registered
            if self._closed.is_set():
                raise RuntimeError("the child process registry is closed")
            proc = spawn(
                command,
                shell=shell,
                text=text,
                stdin=stdin,
                stdout=stdout,
                stderr=stderr,
                cwd=cwd or self._cwd,
                env=env,
            )
            self._owned[proc.pid] = proc
        return proc

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
        """Run to completion; on timeout kill its whole group and raise ``TimeoutExpired``
        (with what it printed so far). Its output is read until the command exits and its
        pipes close, or :data:`OUTPUT_LINGER_S` after it exited, whichever comes first: a
        daemon it left holding them (``server &`` without a redirect) never holds the answer;
        each stream keeps its first :data:`OUTPUT_LIMIT` bytes (the rest is read and dropped,
        noted at its end)."""
        proc = self.popen(
            command,
            shell=shell,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
            cwd=cwd,
            env=env,
            text=False,
        )
        try:
            out, err, timed_out = collect_output(proc, timeout)
            if timed_out:
                self.kill(proc)
                proc.wait()
                raise subprocess.TimeoutExpired(proc.args, timeout, output=out, stderr=err)
        finally:
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
            self.forget(proc)
        # The command is done, but what it started in its group in the background is not ours
        # to end here: a command may deliberately leave a daemon behind (like OSWorld's server).
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

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
