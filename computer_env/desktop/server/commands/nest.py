"""The agent's side of a desktop: a nested user, pid and mount namespace ("the nest").

The desktop's own parts (Xvfb and this guest server) stay outside; everything the agent can
reach runs inside: the session bus and what it activates, the window manager, at-spi, the apps
and every command the server runs for set-up, evaluation or the agent's code. Inside, ``/proc``
shows only the nest, so no program there can see, signal or trace the server or Xvfb (a kill
typed into a terminal finds nothing to kill); user namespaces cannot be made there.

``python -m computer_env.desktop.server.commands.nest PIDFILE CMD...`` (run by the init script, as the
sandbox's unprivileged user): makes the namespaces, writes the nest init's pid (as this side
sees it) to PIDFILE and returns; the init (pid 1 inside: only signals it handles can reach it
from inside, and it handles none) starts CMD and then reaps orphans for ever.
:func:`enter_argv` is how the server starts a command inside (``nsenter``; see
:class:`~computer_env.desktop.server.commands.nested.NestedProcesses`).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time
from collections.abc import Sequence

_CLONE_NEWNS, _CLONE_NEWUSER, _CLONE_NEWPID = 0x00020000, 0x10000000, 0x20000000
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REC, _MS_PRIVATE = 0x2, 0x4, 0x8, 0x4000, 0x40000
PID_ENV = "DESKTOP_NEST_PID"


def _check(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="ascii") as f:
        f.write(text)


def _init(argv: Sequence[str]) -> None:
    """Pid 1 of the nest: its own ``/proc``, no user namespaces below, start ``argv``, reap."""
    libc = ctypes.CDLL(None, use_errno=True)
    _check(libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None), "private /")
    _check(libc.mount(b"proc", b"/proc", b"proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, None),
           "mount /proc")
    _write("/proc/sys/user/max_user_namespaces", "0")
    for sig in signal.valid_signals():  # default dispositions: no signal from inside lands
        if sig not in (signal.SIGKILL, signal.SIGSTOP, signal.SIGCHLD):
            try:
                signal.signal(sig, signal.SIG_DFL)
            except (OSError, ValueError):
                pass
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(argv[0], list(argv))
        finally:
            os._exit(127)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # the start script's log stays with it, not with the reaper
        os.dup2(devnull, fd)
    while True:
        try:
            os.wait()
        except ChildProcessError:
            time.sleep(0.5)
        except InterruptedError:
            pass


def main(argv: Sequence[str]) -> int:
    """Make the nest, write its init's pid to ``argv[0]``, start ``argv[1:]`` inside it."""
    if len(argv) < 2:
        print("usage: python -m computer_env.desktop.server.commands.nest PIDFILE CMD...",
              file=sys.stderr)
        return 2
    pidfile, command = argv[0], argv[1:]
    uid, gid = os.getuid(), os.getgid()
    libc = ctypes.CDLL(None, use_errno=True)
    _check(libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNS | _CLONE_NEWPID), "unshare")
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1\n")
    _write("/proc/self/gid_map", f"{gid} {gid} 1\n")
    pid = os.fork()
    if pid == 0:
        try:
            _init(command)
        except BaseException as exc:  # noqa: BLE001 - reported, then the nest is gone
            print(f"nest init failed: {exc}", file=sys.stderr)
        os._exit(1)
    tmp = f"{pidfile}.tmp"
    _write(tmp, f"{pid}\n")
    os.replace(tmp, pidfile)
    return 0


def enter_argv(nest_pid: int, command: Sequence[str], cwd: str | None = None) -> list[str]:
    """``command`` run inside the nest of init ``nest_pid`` (uid and gid kept; ``cwd``, or
    this process's working directory, as its working directory)."""
    return ["nsenter", "-t", str(nest_pid), "-U", "-p", "-m", "--preserve-credentials",
            f"--wd={cwd or os.getcwd()}", "--", *command]


def proc_root(nest_pid: int) -> str:
    """The nest's ``/proc`` as this side reaches it (pids there are the nest's own)."""
    return f"/proc/{nest_pid}/root/proc"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
