"""Process ownership for desktop providers.

Every process a provider starts goes through :func:`spawn`: it gets its own session (process
group), ``PR_SET_PDEATHSIG(SIGKILL)`` so it dies with this Python process, and optionally enters
a network namespace and drops to an unprivileged uid first.

``PR_SET_PDEATHSIG`` fires when the *thread* that forked the child exits, not the process. A
desktop started from a short-lived worker thread (``ThreadPoolExecutor``) would then die with
that thread, so all forks happen on one long-lived daemon thread owned by this module.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1
_CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def set_pdeathsig(sig: int = signal.SIGKILL) -> None:
    """Ask the kernel to send ``sig`` to the calling process when its parent thread dies."""
    if _libc.prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")


_CLONE_NEWNS = 0x00020000
_MS_REC, _MS_PRIVATE, _MS_BIND = 0x4000, 0x40000, 0x1000


def _make_preexec(netns: str | None, uid: int | None, gid: int | None,
                  binds: Sequence[tuple[str, str]] = (),
                  cgroup_procs: Sequence[str] = ()) -> Callable[[], None]:
    """Child-side setup, run between fork and exec (only simple syscalls here).

    ``binds`` (source, target) are bind-mounted in a private mount namespace of the child, while
    still root: that is how an unprivileged sandbox uid gets to see e.g. a directory under
    ``/root`` (bwrap, once unprivileged, could not traverse ``/root`` itself). The child joins
    the cgroups whose ``cgroup.procs`` files are in ``cgroup_procs`` before it execs, so that
    everything it starts is inside them."""
    encoded = [(src.encode(), dst.encode()) for src, dst in binds]
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
            if _libc.setns(fd, _CLONE_NEWNET) != 0:
                os._exit(126)
            os.close(fd)
        if encoded:
            if _libc.unshare(_CLONE_NEWNS) != 0:
                os._exit(124)
            if _libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
                os._exit(124)
            for src, dst in encoded:
                if _libc.mount(src, dst, None, _MS_BIND | _MS_REC, None) != 0:
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
                self._thread = threading.Thread(target=self._run, name="desktop-spawner",
                                                daemon=True)
                self._thread.start()
        if threading.current_thread() is self._thread:
            return fn()
        fut: Future[Any] = Future()
        self._jobs.put((fn, fut))
        return fut.result()


_spawner = _Spawner()


def spawn(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    netns: str | None = None,
    uid: int | None = None,
    gid: int | None = None,
    binds: Sequence[tuple[str, str]] = (),
    cgroup_procs: Sequence[str] = (),
    pass_fds: Sequence[int] = (),
    stdout: Any = subprocess.DEVNULL,
    stderr: Any = subprocess.DEVNULL,
    cwd: str | Path | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` in a new session that dies with this process (see module docstring)."""
    preexec = _make_preexec(netns, uid, gid, binds, cgroup_procs)

    def _start() -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            list(argv), env=dict(env) if env is not None else None, stdin=subprocess.DEVNULL,
            stdout=stdout, stderr=stderr, start_new_session=True, preexec_fn=preexec,
            pass_fds=tuple(pass_fds), close_fds=True, cwd=cwd,
        )

    return _spawner.submit(_start)


def kill_group(proc: subprocess.Popen[bytes], *, timeout: float = 5.0) -> None:
    """SIGKILL ``proc``'s whole process group and reap it (idempotent)."""
    if proc.poll() is None:
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


def pids_of_uid(uid: int) -> list[int]:
    """Live (non-zombie) processes whose real uid is ``uid``."""
    found: list[int] = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            status = Path(entry.path, "status").read_text()
        except OSError:
            continue
        state = uid_line = ""
        for line in status.splitlines():
            if line.startswith("State:"):
                state = line.split()[1]
            elif line.startswith("Uid:"):
                uid_line = line
                break
        if uid_line and int(uid_line.split()[1]) == uid and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def kill_uid(uid: int, *, timeout: float = 5.0) -> bool:
    """SIGKILL every process running as ``uid`` and wait until none is left. True if none left.

    The kill is done by a helper running as ``uid`` itself (``kill(-1)``), which reaches every
    process of that uid atomically, including ones that forked meanwhile.
    """
    deadline = time.monotonic() + timeout
    while True:
        if not pids_of_uid(uid):
            return True
        subprocess.run(["/bin/sh", "-c", "kill -9 -1"], user=uid, group=uid, extra_groups=[],
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=False)
        if time.monotonic() > deadline:
            log.warning("processes of uid %d still alive after %.1f s: %s", uid, timeout,
                        pids_of_uid(uid))
            return False
        time.sleep(0.005)


def pss_kib(pids: Sequence[int]) -> int:
    """Sum of proportional set size (PSS, KiB) over ``pids`` (RSS where PSS is unavailable)."""
    total = 0
    for pid in pids:
        try:
            text = Path(f"/proc/{pid}/smaps_rollup").read_text()
            key = "Pss:"
        except OSError:
            try:
                text = Path(f"/proc/{pid}/status").read_text()
                key = "VmRSS:"
            except OSError:
                continue
        for line in text.splitlines():
            if line.startswith(key):
                total += int(line.split()[1])
                break
    return total
