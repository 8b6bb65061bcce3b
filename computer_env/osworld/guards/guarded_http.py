"""The HTTP client for what a task file makes the host download: it never connects to this host
or its private networks, whatever the URL's spelling, the hosts file, DNS or a redirect say.

- Every request, each redirect hop included, is checked before it is sent: its host is read as
  the C resolver reads it (``127.1``, ``2130706433``, ``0x7f.1`` are ``127.0.0.1``), resolved
  (the hosts file, then DNS), and refused when any answer is not public
  (:mod:`.addresses`).
- A direct connection is made to the very address that was checked (resolved again inside the
  connection and checked there; the socket's peer address is checked once more after connect),
  so a name that answers differently between the check and the connect (DNS rebinding) cannot
  lead to this host either.
- Through a proxy from the environment (``HTTPS_PROXY``...; ``NO_PROXY`` honoured) the proxy
  connects, so only the check before the request applies there (and a name this host cannot
  resolve is left to the proxy).

A refusal raises :class:`RefusedAddress` (a :class:`~.confine.ConfinementError`, as for a URL
refused when the task is read) before any byte is sent to that address. ``allow_hosts``
(``host`` or ``host:port``, as :func:`.confine.asset_hosts` gives) are let through unchecked:
the built-in tasks' asset server on this host.
"""

from __future__ import annotations

import socket
import urllib.request
from collections.abc import Collection, Iterable
from typing import Any
from urllib.parse import urlsplit

import httpcore
import httpx

from computer_env.osworld.guards.addresses import IPAddress, ip_literal, refusal
from computer_env.osworld.guards.confine import ConfinementError


class RefusedAddress(ConfinementError):
    """A task download would connect to this host or a private network."""


def _norm(host: str) -> str:
    return host.strip("[]").lower().rstrip(".")


def _allowed(host: str, port: int, allow: Collection[str]) -> bool:
    name = _norm(host)
    shown = f"[{name}]" if ":" in name else name
    return any(entry in allow for entry in (name, shown, f"{name}:{port}", f"{shown}:{port}"))


def check_literal(url: str, allow: Collection[str] = ()) -> None:
    """Refuse ``url`` when its host is an address literal (in any spelling) that is not public
    and not in ``allow``; names are left to :func:`checked_addresses`."""
    parts = urlsplit(url)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return  # a bad port: the request itself fails
    host = parts.hostname or ""
    literal = ip_literal(host)
    if literal is None or _allowed(host, port, allow) or (why := refusal(literal)) is None:
        return
    spelled = "" if str(literal) == _norm(host) else f" ({literal})"
    raise RefusedAddress(f"{host}{spelled} is {why}")


def checked_addresses(host: str, port: int) -> list[IPAddress]:
    """Every address ``host`` resolves to, all public; raises :class:`RefusedAddress` naming
    the first that is not (and ``OSError`` when the name does not resolve)."""
    literal = ip_literal(host)
    if literal is not None and (why := refusal(literal)) is not None:
        spelled = "" if str(literal) == _norm(host) else f" ({literal})"
        raise RefusedAddress(f"{host}{spelled} is {why}")
    infos = socket.getaddrinfo(_norm(host), port, type=socket.SOCK_STREAM)
    found: list[IPAddress] = []
    for info in infos:
        ip = ip_literal(str(info[4][0]))
        if ip is None:
            continue
        if (why := refusal(ip)) is not None:
            raise RefusedAddress(f"{host} resolves to {ip}, {why}")
        if ip not in found:
            found.append(ip)
    if not found:
        raise OSError(f"{host}: no address")
    return found


class GuardedBackend(httpcore.NetworkBackend):
    """httpcore's sync backend, connecting only to checked public addresses."""

    def __init__(self, allow: Collection[str] = ()) -> None:
        self._inner = httpcore.SyncBackend()
        self.allow = frozenset(allow)

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        if _allowed(host, port, self.allow):
            return self._inner.connect_tcp(host, port, timeout, local_address, socket_options)
        try:
            addresses = checked_addresses(host, port)
        except OSError as exc:
            raise httpcore.ConnectError(str(exc)) from exc
        error: Exception = httpcore.ConnectError(f"{host}: no address")
        for ip in addresses:
            try:
                stream = self._inner.connect_tcp(
                    str(ip), port, timeout, local_address, socket_options
                )
            except httpcore.ConnectError as exc:
                error = exc
                continue
            peer = ip_literal(str(stream.get_extra_info("socket").getpeername()[0]))
            if peer is None or (why := refusal(peer)) is not None:
                stream.close()
                raise RefusedAddress(f"{host} connected to {peer}, {why or 'unknown'}")
            return stream
        raise error

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        raise RefusedAddress(f"unix socket {path}: not a task download")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def _env_proxy(url: httpx.URL) -> str | None:
    proxies = urllib.request.getproxies()
    proxy = proxies.get(url.scheme) or proxies.get("all")
    if not proxy or urllib.request.proxy_bypass(url.host):
        return None
    return proxy if "://" in proxy else f"http://{proxy}"


class GuardedTransport(httpx.BaseTransport):
    """Checks each request (:func:`checked_addresses`), then sends it directly through
    :class:`GuardedBackend` or through the environment's proxy."""

    def __init__(self, allow: Collection[str] = ()) -> None:
        self.allow = frozenset(allow)
        self._direct = httpx.HTTPTransport()
        # httpx has no public hook for the connection backend: give its pool ours.
        self._direct._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(), network_backend=GuardedBackend(self.allow)
        )
        self._proxied: dict[str, httpx.HTTPTransport] = {}

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        port = url.port or (443 if url.scheme == "https" else 80)
        proxy = _env_proxy(url)
        if not _allowed(url.host, port, self.allow):
            try:
                checked_addresses(url.host, port)
            except OSError as exc:  # through a proxy, the proxy resolves the name
                if proxy is None:
                    raise httpx.ConnectError(f"{url.host}: {exc}", request=request) from exc
        if proxy is None:
            return self._direct.handle_request(request)
        if proxy not in self._proxied:
            self._proxied[proxy] = httpx.HTTPTransport(proxy=proxy)
        return self._proxied[proxy].handle_request(request)

    def close(self) -> None:
        self._direct.close()
        for transport in self._proxied.values():
            transport.close()


def guarded_client(*, allow_hosts: Collection[str] = (), timeout: float = 300.0) -> httpx.Client:
    """An ``httpx.Client`` (redirects followed, each hop checked) for task downloads."""
    return httpx.Client(
        transport=GuardedTransport(allow_hosts), timeout=timeout, follow_redirects=True
    )


__all__ = [
    "GuardedBackend",
    "GuardedTransport",
    "RefusedAddress",
    "check_literal",
    "checked_addresses",
    "guarded_client",
]
