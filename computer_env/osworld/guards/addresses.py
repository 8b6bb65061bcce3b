"""Which addresses the host may connect to for a task's download, whatever their spelling.

A task file names hosts; the host fetches them (prefetch, setup downloads, evaluator
``cloud_file``s). The policy: only **globally routable** addresses. Refused (with the reason):
loopback (``127.0.0.0/8``, ``::1``), unspecified (``0.0.0.0``, ``::``, which Linux connects to
this host), link-local (``169.254.0.0/16`` with cloud metadata, ``fe80::/10``), private
(RFC 1918, ``fc00::/7``), shared (``100.64.0.0/10``), multicast, reserved and every other
non-global range. An IPv6 address that embeds an IPv4 one (mapped ``::ffff:a.b.c.d``,
compatible ``::a.b.c.d``, 6to4 ``2002::/16``, Teredo, NAT64 ``64:ff9b::/96``) is judged by
that IPv4 address too.

:func:`ip_literal` reads a host the way the C resolver does, so ``127.1``, ``2130706433``,
``0x7f.1`` and ``0177.0.0.1`` are all ``127.0.0.1``.
"""

from __future__ import annotations

import ipaddress
import re
import socket

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_NUMERIC = re.compile(r"[0-9a-fA-FxX.]+")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_COMPAT = ipaddress.ip_network("::/96")


def ip_literal(host: str) -> IPAddress | None:
    """The address ``host`` spells (bracketed or zoned IPv6, dotted, shorthand, decimal, hex or
    octal IPv4, as ``inet_aton`` reads it); None for a name."""
    text = host.strip().strip("[]").split("%")[0].rstrip(".")
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        pass
    if not _NUMERIC.fullmatch(text) or not any(c.isdigit() for c in text):
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(text))
    except OSError:
        return None


def _embedded_v4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    found = [a for a in (ip.ipv4_mapped, ip.sixtofour) if a is not None]
    if ip.teredo is not None:
        found.extend(ip.teredo)
    if ip in _NAT64 or (ip in _COMPAT and int(ip) > 1):
        found.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return found


def _kind(ip: IPAddress) -> str | None:
    if ip.is_unspecified:
        return "an unspecified address (this host)"
    if ip.is_loopback:
        return "a loopback address"
    if ip.is_link_local:
        return "a link-local address"
    if ip.is_multicast:
        return "a multicast address"
    if ip.is_private:
        return "a private address"
    if ip.is_reserved or not ip.is_global:
        return "a non-public address"
    return None


def refusal(ip: IPAddress) -> str | None:
    """Why the host must not connect to ``ip`` for a task (e.g. ``"a loopback address"``);
    None for a public address."""
    if isinstance(ip, ipaddress.IPv6Address):
        for inner in _embedded_v4(ip):
            if (inner_reason := _kind(inner)) is not None:
                return f"{inner_reason} ({inner} inside {ip})"
    return _kind(ip)


__all__ = ["IPAddress", "ip_literal", "refusal"]
