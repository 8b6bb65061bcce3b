"""Starting a child process that is owned: own session, dies with this process, optionally
confined (network namespace, private mounts, cgroups, an unprivileged uid)."""

from __future__ import annotations

import ctypes
import functools
import os
import queue
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

_PR_SET_PDEATHSIG, _PR_SET_CHILD_SUBREAPER = 1, 36
_CLONE_NEWNET, _CLONE_NEWNS = 0x40000000, 0x00020000
_MS_REC, _MS_PRIVATE, _MS_BIND = 0x4000, 0x40000, 0x1000


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)  # this process's libc (prctl, setns, mount)


def _prctl(option: int, arg: int) -> None:
    if _libc().prctl(option, arg, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option}) failed")


def set_pdeathsig(sig: int = signal.SIGKILL) -> None:
    """Ask the kernel to send ``sig`` to the calling process when its parent thread dies."""
    _prctl(_PR_SET_PDEATHSIG, sig)


def become_subreaper() -> None:
    """Orphaned descendants are re-parented to this process (so it can end and reap them)."""
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)


def _make_preexec(
    netns: str | None,
    uid: int | None,
    gid: int | None,
    binds: Sequence[tuple[str, str]] = (),
    cgroup_procs: Sequence[str] = (),
) -> Callable[[], None]:
    """Child-side setup, run between fork and exec (only simple syscalls here).

    ``binds`` (source, target) are bind-mounted in a private mount namespace of the child, while
    still root: that is how an unprivileged sandbox uid gets to see e.g. a directory under
    ``/root`` (bwrap, once unprivileged, could not traverse ``/root`` itself). The child joins
    the cgroups whose ``cgroup.procs`` files are in ``cgroup_procs`` before it execs, so that
    everything it starts is inside them."""
    encoded = [(src.encode(), dst.encode()) for src, dst in binds]
    libc = _libc()
    parent = os.getppid  # bound before fork, cheap to call in the child
    parent_pid = os.getpid()

    def preexec() -> None:
        for procs in cgroup_procs:
            fd = os.open(procs, os.O_WRONLY)
            try:
                os.write(fd, b"0")
            except OSError:
                os._exit(122)
            finally:
                os.close(fd)
        if netns is not None:
            fd = os.open(f"/run/netns/{netns}", os.O_RDONLY)
            if libc.setns(fd, _CLONE_NEWNET) != 0:
                os._exit(126)
            os.close(fd)
        if encoded:
            if libc.unshare(_CLONE_NEWNS) != 0:
                os._exit(124)
            if libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
                os._exit(124)
            for src, dst in encoded:
                if libc.mount(src, dst, None, _MS_BIND | _MS_REC, None) != 0:
                    os._exit(123)
        if gid is not None:
            os.setgroups([])
            os.setresgid(gid, gid, gid)
        if uid is not None:
            os.setresuid(uid, uid, uid)
        # After the credential change: commit_creds() clears a pdeathsig set earlier.
        set_pdeathsig(signal.SIGKILL)
        if parent() != parent_pid:  # the parent died before prctl took effect
            os._exit(125)

    return preexec


class _Spawner:
    """One long-lived daemon thread that performs every fork (see module docstring)."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _run(self) -> None:
        while True:
            fn, fut = self._jobs.get()
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(fn())
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                fut.set_exception(exc)

    def submit(self, fn: Callable[[], Any]) -> Any:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="spawner", daemon=True)
                self._thread.start()
        if threading.current_thread() is self._thread:
            return fn()
        fut: Future[Any] = Future()
        self._jobs.put((fn, fut))
        return fut.result()


_spawner = _Spawner()


def spawn(
    command: str | Sequence[str],
    *,
    shell: bool = False,
    text: bool = False,
    env: Mapping[str, str] | None = None,
    netns: str | None = None,
    uid: int | None = None,
    gid: int | None = None,
    binds: Sequence[tuple[str, str]] = (),
    cgroup_procs: Sequence[str] = (),
    pass_fds: Sequence[int] = (),
    stdin: Any = subprocess.DEVNULL,
    stdout: Any = subprocess.DEVNULL,
    stderr: Any = subprocess.DEVNULL,
    cwd: str | Path | None = None,
) -> subprocess.Popen[Any]:
    """Start ``command`` in a new session that dies with this process (see module docstring)."""
    preexec = _make_preexec(netns, uid, gid, binds, cgroup_procs)
    args = command if isinstance(command, str) else list(command)

    def _start() -> subprocess.Popen[Any]:
        return subprocess.Popen(  # noqa: S603 - running commands is what callers ask for
            # what a command prints is any bytes (an agent's code prints what it likes): text
            # is decoded with U+FFFD for what is not UTF-8, never an error
            args,
            shell=shell,
            text=text,
            errors="replace" if text else None,
            env=dict(env) if env is not None else None,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
            preexec_fn=preexec,
            pass_fds=tuple(pass_fds),
            close_fds=True,
            cwd=cwd,
        )

    return _spawner.submit(_start)
