"""The X server's clients as processes: which process holds which connection, and what waits.

The kernel's socket diagnostics (``NETLINK_SOCK_DIAG``, what ``ss -x`` reads) list every Unix
socket of this network namespace with its peer and its receive queue. The X server's own ends
of its connections are the sockets among its open files; each one's peer is a client's end, and
the processes holding that end (``/proc/*/fd``) are the client. Bytes waiting in the X server's
end are requests it has not read: under a server grab (``XGrabServer``) it reads only from the
grabbing client, so every other client that asked something has bytes waiting there.
"""

from __future__ import annotations

import os
import socket
import struct
from dataclasses import dataclass, field
from pathlib import Path

_SOCK_DIAG_BY_FAMILY, _NLMSG_ERROR, _NLMSG_DONE = 20, 2, 3
_NLM_F_REQUEST, _NLM_F_DUMP = 0x1, 0x300
_UDIAG_SHOW_PEER, _UDIAG_SHOW_RQLEN = 0x4, 0x10
_UNIX_DIAG_PEER, _UNIX_DIAG_RQLEN = 2, 4


@dataclass(frozen=True)
class UnixSocket:
    """One Unix socket: its inode, its peer's (0 when none) and the bytes queued to it."""

    inode: int
    peer: int
    queued: int


def unix_sockets() -> dict[int, UnixSocket]:
    """Every Unix socket of this network namespace, by inode."""
    request = struct.pack(
        "=BBHIII8x", socket.AF_UNIX, 0, 0, 0xFFFFFFFF, 0, _UDIAG_SHOW_PEER | _UDIAG_SHOW_RQLEN
    )
    header = struct.pack(
        "=IHHII", 16 + len(request), _SOCK_DIAG_BY_FAMILY, _NLM_F_REQUEST | _NLM_F_DUMP, 1, 0
    )
    found: dict[int, UnixSocket] = {}
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, 4) as nl:  # NETLINK_SOCK_DIAG
        nl.settimeout(5.0)
        nl.sendto(header + request, (0, 0))
        while True:
            data = nl.recv(1 << 16)
            offset = 0
            while offset + 16 <= len(data):
                length, kind = struct.unpack_from("=IH", data, offset)
                if kind == _NLMSG_DONE:
                    return found
                if kind == _NLMSG_ERROR:
                    (errno,) = struct.unpack_from("=i", data, offset + 16)
                    raise OSError(-errno, f"socket diagnostics: {os.strerror(-errno)}")
                if kind == _SOCK_DIAG_BY_FAMILY:
                    sock = _parse(data[offset + 16 : offset + length])
                    found[sock.inode] = sock
                if length < 16:
                    return found
                offset += (length + 3) & ~3


def _parse(msg: bytes) -> UnixSocket:
    """One ``unix_diag_msg`` and its attributes."""
    inode = struct.unpack_from("=I", msg, 4)[0]
    peer = queued = 0
    offset = 16
    while offset + 4 <= len(msg):
        length, kind = struct.unpack_from("=HH", msg, offset)
        if length < 4:
            break
        if kind == _UNIX_DIAG_PEER:
            (peer,) = struct.unpack_from("=I", msg, offset + 4)
        elif kind == _UNIX_DIAG_RQLEN:
            (queued,) = struct.unpack_from("=I", msg, offset + 4)
        offset += (length + 3) & ~3
    return UnixSocket(inode, peer, queued)


def socket_inodes(pid: int, proc: str = "/proc") -> set[int]:
    """The inodes of the sockets process ``pid`` has open (empty when it cannot be read)."""
    found: set[int] = set()
    try:
        names = os.listdir(f"{proc}/{pid}/fd")
    except OSError:
        return found
    for name in names:
        try:
            target = os.readlink(f"{proc}/{pid}/fd/{name}")
        except OSError:
            continue
        if target.startswith("socket:["):
            found.add(int(target[8:-1]))
    return found


@dataclass
class XClient:
    """One connection to the X server: the processes holding the client's end, and whether
    the X server has unread requests from it."""

    server_end: int
    client_end: int
    waiting: bool
    pids: list[int] = field(default_factory=list)

    def describe(self, proc: str = "/proc") -> str:
        """The client's processes as ``pid: command line`` (the first few)."""
        return "; ".join(f"{pid}: {command_line(pid, proc)}" for pid in self.pids[:3])


def command_line(pid: int, proc: str = "/proc") -> str:
    """``pid``'s command line (at most 300 characters), or ``?`` when it is gone."""
    try:
        raw = Path(f"{proc}/{pid}/cmdline").read_bytes()
    except OSError:
        return "?"
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()[:300] or "?"


def start_time(pid: int, proc: str = "/proc") -> int:
    """``pid``'s start time (clock ticks since boot), 0 when it is gone."""
    try:
        stat = Path(f"{proc}/{pid}/stat").read_text(errors="replace")
    except OSError:
        return 0
    return int(stat.rsplit(")", 1)[1].split()[19])


def process_state(pid: int, proc: str = "/proc") -> str:
    """``pid``'s state letter (``R``, ``S``, ``T`` stopped...), ``X`` when it is gone."""
    try:
        return Path(f"{proc}/{pid}/stat").read_text(errors="replace").rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "X"


def x_clients(x_pid: int, proc: str = "/proc") -> list[XClient]:
    """The connections of the X server ``x_pid``, each with the processes on its other end."""
    sockets = unix_sockets()
    clients: dict[int, XClient] = {}
    for inode in socket_inodes(x_pid, proc):
        mine = sockets.get(inode)
        if mine is None or not mine.peer or mine.peer in clients:
            continue
        clients[mine.peer] = XClient(inode, mine.peer, mine.queued > 0)
    if not clients:
        return []
    for entry in os.listdir(proc):
        if not entry.isdigit() or int(entry) == x_pid:
            continue
        for inode in socket_inodes(int(entry), proc) & clients.keys():
            clients[inode].pids.append(int(entry))
    return list(clients.values())


__all__ = [
    "UnixSocket",
    "XClient",
    "command_line",
    "process_state",
    "socket_inodes",
    "start_time",
    "unix_sockets",
    "x_clients",
]
