"""The agent's side of a desktop: a nested user, pid and mount namespace ("the nest").

The desktop's own parts (Xvfb and this guest server) stay outside; everything the agent can
reach runs inside: the session bus and what it activates, the window manager, at-spi, the apps
and every command the server runs for set-up, evaluation or the agent's code. Inside, ``/proc``
shows only the nest, so no program there can see, signal or trace the server or Xvfb (a kill
typed into a terminal finds nothing to kill); user namespaces cannot be made there.

``python -m computer_env.desktop.server.commands.nest PIDFILE CMD...`` (run by the init script, as the
sandbox's unprivileged user): makes the namespaces, writes the nest init's pid (as this side
sees it) to PIDFILE and returns; the init (pid 1 inside: only signals it handles can reach it
from inside, and it handles none) re-executes itself to give up the capabilities it held in the
nest for its mounts and to be non-dumpable (no process inside can trace it), starts CMD and then
reaps orphans for ever.
:func:`enter_argv` is how the server starts a command inside (``nsenter``; see
:class:`~computer_env.desktop.server.commands.nested.NestedProcesses`).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID = 0x00020000, 0x10000000, 0x20000000
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REC, _MS_PRIVATE = 0x2, 0x4, 0x8, 0x4000, 0x40000
_PR_SET_DUMPABLE = 4
PID_ENV = "DESKTOP_NEST_PID"


def check_rc(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def write_file(path: str, text: str) -> None:
    with open(path, "w", encoding="ascii") as f:
        f.write(text)


def _init(argv: Sequence[str]) -> None:
    """Pid 1 of the nest: its own ``/proc``, no user namespaces below, start ``argv``, reap."""
    libc = ctypes.CDLL(None, use_errno=True)
    check_rc(libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None), "private /")
    check_rc(
        libc.mount(b"proc", b"/proc", b"proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, None),
        "mount /proc",
    )
    write_file("/proc/sys/user/max_user_namespaces", "0")
    exec_reaper(argv)


def exec_reaper(argv: Sequence[str]) -> None:
    """Become the nest's reaper (:func:`reap`) by exec: the init gives up the capabilities it
    held in the nest for its set-up (an exec as a user other than root drops them)."""
    os.execv(
        sys.executable, [sys.executable, "-I", "-S", os.path.abspath(__file__), "--reap", *argv]
    )


def reap(argv: Sequence[str]) -> None:
    """The nest's init after its set-up: not dumpable, so nothing inside can trace it (it is
    the agent's uid), then :func:`start_and_reap`."""
    check_rc(ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0), "prctl")
    start_and_reap(argv)


def start_and_reap(argv: Sequence[str]) -> None:
    """The nest's init from its set-up on: default signal dispositions, start ``argv``, reap
    orphans for ever."""
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
    """Make the nest, write its init's pid to ``argv[0]``, start ``argv[1:]`` inside it
    (``--reap CMD...``: the init's own re-exec, :func:`reap`)."""
    if argv[:1] == ["--reap"] and len(argv) > 1:
        reap(argv[1:])
        return 1
    if len(argv) < 2:
        print(
            "usage: python -m computer_env.desktop.server.commands.nest PIDFILE CMD...",
            file=sys.stderr,
        )
        return 2
    pidfile, command = argv[0], argv[1:]
    uid, gid = os.getuid(), os.getgid()
    libc = ctypes.CDLL(None, use_errno=True)
    check_rc(libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID), "unshare")
    write_file("/proc/self/setgroups", "deny")
    write_file("/proc/self/uid_map", f"{uid} {uid} 1\n")
    write_file("/proc/self/gid_map", f"{gid} {gid} 1\n")
    fork_init(lambda: _init(command), pidfile)
    return 0


def fork_init(init: Callable[[], None], pidfile: str) -> None:
    """Fork the nest's init (pid 1 of the new pid namespace), which runs ``init`` (it does not
    return unless it fails: reported, then the nest is gone); write its pid, as this side sees
    it, to ``pidfile``."""
    pid = os.fork()
    if pid == 0:
        try:
            init()
        except BaseException as exc:  # noqa: BLE001 - reported, then the nest is gone
            print(f"nest init failed: {exc}", file=sys.stderr)
        os._exit(1)
    tmp = f"{pidfile}.tmp"
    write_file(tmp, f"{pid}\n")
    os.replace(tmp, pidfile)


#: capability names as setpriv spells them, by number
CAP_NAMES = (
    "chown",
    "dac_override",
    "dac_read_search",
    "fowner",
    "fsetid",
    "kill",
    "setgid",
    "setuid",
    "setpcap",
    "linux_immutable",
    "net_bind_service",
    "net_broadcast",
    "net_admin",
    "net_raw",
    "ipc_lock",
    "ipc_owner",
    "sys_module",
    "sys_rawio",
    "sys_chroot",
    "sys_ptrace",
    "sys_pacct",
    "sys_admin",
    "sys_boot",
    "sys_nice",
    "sys_resource",
    "sys_time",
    "sys_tty_config",
    "mknod",
    "lease",
    "audit_write",
    "audit_control",
    "setfcap",
    "mac_override",
    "mac_admin",
    "syslog",
    "wake_alarm",
    "block_suspend",
    "audit_read",
    "perfmon",
    "bpf",
    "checkpoint_restore",
)


def maps_root(nest_pid: int) -> bool:
    """Whether the nest maps uid 0 (the Docker desktop's, :mod:`.nest_root`: sudo is real)."""
    with open(f"/proc/{nest_pid}/uid_map", encoding="ascii") as f:
        return any(line.split()[0] == "0" for line in f if line.strip())


def bounding_set() -> int:
    """This process's capability bounding set, as a mask."""
    with open("/proc/self/status", encoding="ascii") as f:
        return int(next(x for x in f if x.startswith("CapBnd:")).split()[1], 16)


def bounding_spec() -> str:
    """This process's capability bounding set as setpriv's ``--bounding-set`` argument."""
    mask = bounding_set()
    return ",".join(["-all"] + [f"+{name}" for n, name in enumerate(CAP_NAMES) if mask >> n & 1])


def enter_argv(
    nest_pid: int, command: Sequence[str], cwd: str | None = None, *, bounding: str | None = None
) -> list[str]:
    """``command`` run inside the nest of init ``nest_pid`` (uid and gid kept; ``cwd``, or
    this process's working directory, as its working directory).

    ``bounding`` (a nest that maps root, :func:`maps_root`): entering a user namespace gives a
    process the full capability bounding set, so a ``sudo`` below the command would get every
    capability inside; the command is entered as the nest's root instead, which narrows the
    bounding set to ``bounding`` (:func:`bounding_spec`) and becomes this uid and gid again
    before it runs ``command``."""
    wd = f"--wd={cwd or os.getcwd()}"
    if bounding is None:
        return [
            "nsenter",
            "-t",
            str(nest_pid),
            "-U",
            "-p",
            "-m",
            "--preserve-credentials",
            wd,
            "--",
            *command,
        ]
    return [
        "nsenter",
        "-t",
        str(nest_pid),
        "-U",
        "-p",
        "-m",
        "-S",
        "0",
        "-G",
        "0",
        wd,
        "--",
        "setpriv",
        f"--bounding-set={bounding}",
        f"--reuid={os.getuid()}",
        f"--regid={os.getgid()}",
        "--init-groups",
        "--",
        *command,
    ]


def proc_root(nest_pid: int) -> str:
    """The nest's ``/proc`` as this side reaches it (pids there are the nest's own)."""
    return f"/proc/{nest_pid}/root/proc"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
