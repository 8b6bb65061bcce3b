"""The nest of a desktop whose agent has real root (the Docker desktop: OSWorld's ``user`` has
sudo there), made by the container's root for the desktop user.

:mod:`.nest` maps one uid, so nothing inside can become root. Here every uid is mapped as it is
(``sudo`` stays real: apt, useradd, root-owned files), and what keeps the server and Xvfb out of
reach is the same as there, plus what root inside could otherwise undo:

- **pids**: a pid namespace with its own ``/proc``; the server and Xvfb have no pid inside.
- **the nest's owner is the desktop user**, the uid the server runs as, so the server enters the
  nest (``nsenter``) by the owner's right; no process inside has a capability outside it.
- **no capability to undo the nest**: root inside holds only the container's bounding set (no
  ``CAP_SYS_ADMIN``: no mount, no unmount; no ``CAP_SYS_PTRACE``), no user namespace can be made
  inside (``max_user_namespaces`` 0), and the init that holds the nest's mount rights gives them
  up (it execs the reaper, which is not dumpable) before anything of the agent runs.
- **``/proc`` masked as Docker masks it**: root inside is uid 0, and the kernel lets uid 0 write
  sysctls and ``sysrq-trigger``: ``/proc/sys`` and its kin are read-only, the rest masked.
- **the system folders are the nest's own copy** (an overlay on a tmpfs): root inside may write
  ``/usr``, ``/opt`` and ``/var`` (the server's Python and libraries), and only the nest sees
  it; in ``/etc`` what decides the code other programs load is read-only (:data:`ETC_READ_ONLY`).
  ``/home``, ``/tmp``, ``/run`` and ``/dev`` stay shared: the server reads and writes the user's
  files there, the X socket and the session bus live there.

``python -m computer_env.desktop.server.commands.nest_root --as UID:GID PIDFILE CMD...`` (as
root): makes the nest, writes its init's pid to PIDFILE, returns; CMD runs inside as UID:GID. After
its mounts the init becomes the same reaper as the local nest's (:func:`.nest.exec_reaper`).
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Sequence

from computer_env.desktop.server.commands.nest import (
    CLONE_NEWNS,
    CLONE_NEWPID,
    CLONE_NEWUSER,
    bounding_set,
    check_rc,
    exec_reaper,
    fork_init,
    write_file,
)

_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 0x1, 0x2, 0x4, 0x8
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 0x20, 0x1000, 0x4000, 0x40000
_PR_CAPBSET_DROP, _PR_SET_SECUREBITS = 24, 28
_SECBIT_NO_SETUID_FIXUP = 1 << 2
#: uids and gids mapped into the nest, each as itself (Debian's system and user range)
ID_RANGE = 65536
#: Docker's masked paths: hidden behind /dev/null (files) or an empty read-only tmpfs (folders)
MASKED = (
    "/proc/asound",
    "/proc/acpi",
    "/proc/interrupts",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/proc/sysrq-trigger",
)
#: Docker's read-only paths
READ_ONLY = ("/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys")
#: the folders the nest gets its own writable copy of (:func:`_own_copy`)
OVERLAID = ("/opt", "/usr", "/var", "/root", "/srv")
#: what in ``/etc`` (which cannot be overlaid: Docker mounts files into it) decides the code that
#: programs outside the nest load (the dynamic loader's preload list, cache and search path,
#: NSS modules, Python's system-wide site customisation): read-only inside; the rest of
#: ``/etc`` (users, groups, sudoers, app settings) stays writable by root, as on OSWorld's VM
ETC_READ_ONLY = (
    "/etc/ld.so.preload",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/nsswitch.conf",
    "/etc/python3",
    "/etc/python3.11",
)
#: where the copy's writable layer lives (a tmpfs mounted in the nest's mount namespace only)
UPPER = "/run/holo-nest"
UPPER_SIZE = "1g"


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _mount(
    libc: ctypes.CDLL,
    source: str | None,
    target: str,
    fstype: str | None,
    flags: int,
    data: str | None = None,
) -> None:
    enc = lambda s: s.encode() if s is not None else None
    check_rc(libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)), f"mount {target}")


def _submounts(folder: str) -> list[str]:
    """Mount points strictly below ``folder``."""
    with open("/proc/self/mountinfo", encoding="utf-8") as f:
        points = [line.split()[4].replace("\\040", " ") for line in f]
    return [p for p in points if p.startswith(folder.rstrip("/") + "/")]


def _own_copy(libc: ctypes.CDLL, folder: str) -> None:
    """Give the nest its own writable copy of ``folder`` (an overlay whose upper layer is on
    :data:`UPPER`). The kernel will not copy a folder with a mount below it (Docker's
    ``/usr/sbin/docker-init``): its subfolders get copies, and what lies beside the mount is
    made read-only."""
    if not os.path.isdir(folder) or os.path.islink(folder):
        return
    if _submounts(folder):
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            if entry.is_dir(follow_symlinks=False):
                _own_copy(libc, entry.path)
        _read_only(libc, folder)
        return
    name = folder.strip("/").replace("/", "%")
    upper, work = os.path.join(UPPER, "u", name), os.path.join(UPPER, "w", name)
    os.makedirs(upper)
    os.makedirs(work)
    _mount(
        libc,
        "overlay",
        folder,
        "overlay",
        0,
        f"lowerdir={folder},upperdir={upper},workdir={work},userxattr",
    )


def _read_only(libc: ctypes.CDLL, path: str) -> None:
    _mount(libc, path, path, None, _MS_BIND | _MS_REC)
    _mount(libc, None, path, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY)


def _mask_proc(libc: ctypes.CDLL) -> None:
    """The fresh ``/proc`` masked and made read-only where Docker does it."""
    for path in MASKED:
        if os.path.isdir(path):
            _mount(libc, "tmpfs", path, "tmpfs", _MS_RDONLY, "size=0")
        elif os.path.exists(path):
            _mount(libc, "/dev/null", path, None, _MS_BIND)
    for path in READ_ONLY:
        if os.path.exists(path):
            _read_only(libc, path)


def _limit_capabilities(libc: ctypes.CDLL, allowed: int) -> None:
    """Drop from the bounding set every capability outside ``allowed``: a new user namespace
    starts with the full set, so without this root inside (sudo) would get ``CAP_SYS_ADMIN``
    there and could unmount the masks and read-only files."""
    with open("/proc/sys/kernel/cap_last_cap", encoding="ascii") as f:
        last = int(f.read())
    for cap in range(last + 1):
        if not allowed >> cap & 1:
            check_rc(libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0), f"drop capability {cap}")


def _init(command: Sequence[str], allowed: int) -> None:
    """Pid 1 of the nest: mounts, the container's capability bounding set, then exec the reaper
    (which starts ``command``)."""
    libc = _libc()
    _mount(libc, "none", "/", None, _MS_REC | _MS_PRIVATE)
    _mount(libc, "proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    write_file("/proc/sys/user/max_user_namespaces", "0")
    os.makedirs(UPPER, exist_ok=True)
    _mount(libc, "tmpfs", UPPER, "tmpfs", _MS_NOSUID | _MS_NODEV, f"size={UPPER_SIZE},mode=0755")
    for folder in OVERLAID:
        _own_copy(libc, folder)
    for path in ETC_READ_ONLY:
        if os.path.lexists(path):
            _read_only(libc, path)
    _mask_proc(libc)
    _limit_capabilities(libc, allowed)
    os.chdir("/")
    exec_reaper(command)


def _write_maps(child: int, owner: int) -> None:
    """Write the child's identity maps. The kernel wants the writer to hold ``CAP_SYS_ADMIN`` in
    the new namespace, which (without it in the container) only its owner has: so write them
    with the owner's euid while keeping root's capabilities (no set-uid fix-up)."""
    libc = _libc()
    check_rc(libc.prctl(_PR_SET_SECUREBITS, _SECBIT_NO_SETUID_FIXUP, 0, 0, 0), "securebits")
    os.seteuid(owner)
    try:
        write_file(f"/proc/{child}/uid_map", f"0 0 {ID_RANGE}\n")
        write_file(f"/proc/{child}/gid_map", f"0 0 {ID_RANGE}\n")
    finally:
        os.seteuid(0)


def make(uid: int, gid: int, pidfile: str, command: Sequence[str]) -> int:
    """Make the nest (run as root): a child becomes ``uid``/``gid`` and makes the namespaces,
    this side writes their identity maps, the child forks the init and writes its pid."""
    if os.geteuid() != 0:
        print("nest_root: must run as root (it writes the nest's uid map)", file=sys.stderr)
        return 2
    allowed = bounding_set()
    unshared_r, unshared_w = os.pipe()
    mapped_r, mapped_w = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(unshared_r)
        os.close(mapped_w)
        try:
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
            check_rc(_libc().unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID), "unshare")
            os.write(unshared_w, b"1")
            if os.read(mapped_r, 1) != b"1":
                os._exit(1)
            fork_init(lambda: _init(command, allowed), pidfile)
            os._exit(0)
        except BaseException as exc:  # noqa: BLE001
            print(f"nest: {exc}", file=sys.stderr)
            os._exit(1)
    os.close(unshared_w)
    os.close(mapped_r)
    ok = os.read(unshared_r, 1) == b"1"
    if ok:
        _write_maps(child, uid)
        os.write(mapped_w, b"1")
    os.close(mapped_w)
    _, status = os.waitpid(child, 0)
    return os.waitstatus_to_exitcode(status) if ok else 1


def main(argv: Sequence[str]) -> int:
    if len(argv) < 4 or argv[0] != "--as" or ":" not in argv[1]:
        print(
            "usage: python -m computer_env.desktop.server.commands.nest_root --as UID:GID "
            "PIDFILE CMD...",
            file=sys.stderr,
        )
        return 2
    uid, gid = (int(x) for x in argv[1].split(":", 1))
    return make(uid, gid, argv[2], argv[3:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
