"""Is a TCP connection to a loopback server from a socket this host user owns?

A server on ``127.0.0.1`` is reachable by every user of the host. The kernel lists every TCP
socket with its owner's uid (``/proc/net/tcp``, ``/proc/net/tcp6``); the connecting socket is the
one whose local address is the connection's peer and whose remote address is the server's side.
Servers that hand out what only this run may see (the desktop gateway, the asset server's
host-side files, the reference endpoint, the ``--watch`` page) accept a connection only when
:func:`same_user` says so.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import socket
from typing import Any

log = logging.getLogger(__name__)

_TABLES = ("/proc/net/tcp", "/proc/net/tcp6")


def _words(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    """The address as ``/proc/net/tcp*`` prints it: 32-bit words in host (little-endian) order."""
    packed = ip.packed
    return "".join(
        f"{int.from_bytes(packed[i : i + 4], 'little'):08X}" for i in range(0, len(packed), 4)
    )


def _spellings(address: tuple[Any, ...]) -> set[str]:
    """``ADDR:PORT`` keys of an endpoint in both tables (IPv4 also as ``::ffff:a.b.c.d``)."""
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.ip_address(
        str(address[0]).split("%")[0]
    )
    port = int(address[1])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    forms: set[ipaddress.IPv4Address | ipaddress.IPv6Address] = (
        {ip}
        if isinstance(ip, ipaddress.IPv6Address)
        else {ip, ipaddress.IPv6Address(f"::ffff:{ip}")}
    )
    return {f"{_words(a)}:{port:04X}" for a in forms}


def peer_uid(peer: tuple[Any, ...], local: tuple[Any, ...]) -> int | None:
    """The uid owning the connecting socket of the connection ``peer`` -> ``local`` (None when
    the kernel lists no such socket, e.g. it is not on this host)."""
    try:
        want_local, want_remote = _spellings(peer), _spellings(local)
    except (ValueError, IndexError, TypeError):
        return None
    for table in _TABLES:
        try:
            with open(table, encoding="ascii") as fh:
                next(fh, None)
                for line in fh:
                    parts = line.split()
                    if len(parts) > 7 and parts[1] in want_local and parts[2] in want_remote:
                        return int(parts[7])
        except (OSError, ValueError):
            continue
    return None


def is_loopback(address: str) -> bool:
    """Is ``address`` (a peer's host, IPv6 zone or IPv4-mapped form allowed) on this host's
    loopback?"""
    try:
        ip = ipaddress.ip_address(str(address).split("%")[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def same_user(sock: socket.socket, peer: tuple[Any, ...], *, what: str = "server") -> bool:
    """True when the socket connecting from ``peer`` to ``sock`` belongs to this process's
    user; a refusal is logged, naming ``what`` refused it."""
    try:
        local = sock.getsockname()
    except OSError:
        return False
    uid = peer_uid(peer, local)
    if uid != os.geteuid():
        log.warning(
            "%s: refused a connection from %s:%s (socket owner uid %s)", what, peer[0], peer[1], uid
        )
        return False
    return True


__all__ = ["is_loopback", "peer_uid", "same_user"]
