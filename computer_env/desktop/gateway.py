"""``OSWorldGateway``: the host-side entrance OSWorld's own code uses to reach one desktop.

OSWorld's ``PythonController``, ``SetupController`` and getters send no token and build their
URLs from ``vm_ip`` plus ports (``server_port``, ``chromium_port``, ``vlc_port``). The guest
server wants a bearer token on every address an agent could reach, so the gateway listens on the
host's loopback only (no sandbox, container or VM reaches the host's 127.0.0.1) and:

- forwards HTTP to the guest server, adding the token (``osworld_url``);
- forwards raw TCP to the guest's Chrome DevTools (``cdp``) and VLC (``vlc``) ports;
- accepts a connection only from a socket owned by this host user (a proxy or service running as
  another user cannot relay a desktop's request to it; see :mod:`.loopback`);
- keeps a short journal of the HTTP exchanges, so that callers can check what OSWorld's
  ``SetupController`` only logs (a command's exit status, a window that was not found).

An unsandboxed local desktop (only when asked for explicitly) runs as this host user on this
host's loopback, so its processes can reach the gateway, as they can reach everything else here.
"""

from __future__ import annotations

import collections
import dataclasses
import http.client
import json
import logging
import threading
import weakref
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from computer_env.desktop.loopback import TCPForward, allowed, peer_uid

log = logging.getLogger(__name__)

GUEST_TCP_PORTS: dict[str, int] = {"cdp": 9222, "vlc": 8080}
"""Guest ports OSWorld's getters reach directly, by name, with OSWorld's defaults."""
JOURNAL_SIZE = 500
UPSTREAM_TIMEOUT = 3700.0  # OSWorld's /setup/open_file may wait 1800 s (+ its client's margin)
_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailers",
    "transfer-encoding",
    "upgrade",
    "host",
    "authorization",
    "content-length",
}


@dataclass
class Exchange:
    """One HTTP request through the gateway and its answer."""

    seq: int
    method: str
    path: str
    status: int
    request: dict[str, Any] | None = None
    response: dict[str, Any] | None = None


@dataclass
class Journal:
    """The last :data:`JOURNAL_SIZE` exchanges, numbered."""

    entries: collections.deque = field(
        default_factory=lambda: collections.deque(maxlen=JOURNAL_SIZE)
    )
    seq: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, **kw: Any) -> None:
        with self.lock:
            self.seq += 1
            self.entries.append(Exchange(seq=self.seq, **kw))

    def mark(self) -> int:
        """The number of the last exchange so far (pass it to :meth:`since`)."""
        with self.lock:
            return self.seq

    def since(self, mark: int) -> list[Exchange]:
        with self.lock:
            return [e for e in self.entries if e.seq > mark]


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    gateway: OSWorldGateway

    def verify_request(self, request: Any, client_address: Any) -> bool:
        return allowed(request, client_address)


def _json_or_none(data: bytes, content_type: str) -> dict[str, Any] | None:
    if "json" not in content_type or len(data) > 1 << 20:
        return None
    try:
        value = json.loads(data)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    """the head and the body are two writes: with Nagle, the body waits for the client's
    delayed ACK (40 ms per request)"""
    server: _HTTPServer

    def log_message(self, fmt: str, *args: Any) -> None:
        log.debug("gateway: " + fmt, *args)

    def _body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _forward(self) -> None:
        gw = self.server.gateway
        body = self._body()
        if gw.refusing:
            self.send_error(503, "the harness stopped this request (a setup step timed out)")
            return
        target = urlsplit(gw.target_url)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
        if gw.token:
            headers["Authorization"] = f"Bearer {gw.token}"
        headers["Content-Length"] = str(len(body))
        conn = http.client.HTTPConnection(
            target.hostname or "127.0.0.1", target.port or 80, timeout=UPSTREAM_TIMEOUT
        )
        try:
            conn.request(self.command, self.path, body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            status, reason, resp_headers = resp.status, resp.reason, resp.getheaders()
        except OSError as exc:
            gw.journal.add(
                method=self.command,
                path=self.path,
                status=502,
                request=_json_or_none(body, self.headers.get("Content-Type", "")),
                response={"error": str(exc)},
            )
            self.send_error(502, f"the desktop server did not answer: {exc}")
            return
        finally:
            conn.close()
        content_type = dict((k.lower(), v) for k, v in resp_headers).get("content-type", "")
        gw.journal.add(
            method=self.command,
            path=self.path.split("?")[0],
            status=status,
            request=_json_or_none(body, self.headers.get("Content-Type", "")),
            response=_json_or_none(data, content_type),
        )
        self.send_response(status, reason)
        for key, value in resp_headers:
            if key.lower() not in _HOP:
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = _forward


class OSWorldGateway:
    """Loopback-only, token-adding entrance for OSWorld's code to one desktop (see module)."""

    def __init__(
        self,
        target_url: str,
        token: str | None,
        tcp_targets: dict[str, tuple[str, int]] | None = None,
    ) -> None:
        self.target_url = target_url.rstrip("/")
        self.token = token
        self.journal = Journal()
        self.refusing = False  # set while a timed-out setup step is being stopped
        self._http = _HTTPServer(("127.0.0.1", 0), _Handler)
        self._http.gateway = self
        self._tcp: dict[str, TCPForward] = {
            name: TCPForward(target) for name, target in (tcp_targets or {}).items()
        }
        self._threads = [
            threading.Thread(target=srv.serve_forever, name=f"gateway-{name}", daemon=True)
            for name, srv in [("http", self._http), *self._tcp.items()]
        ]
        for t in self._threads:
            t.start()
        _GATEWAYS[self.url] = self
        log.info("OSWorld gateway %s -> %s", self.url, self.target_url)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``: what OSWorld's code is given (no token needed)."""
        return f"http://127.0.0.1:{self._http.server_address[1]}"

    @property
    def ports(self) -> dict[str, int]:
        """``{"server": p, "cdp": p, "vlc": p}`` on 127.0.0.1."""
        ports = {"server": int(self._http.server_address[1])}
        ports.update({name: int(srv.server_address[1]) for name, srv in self._tcp.items()})
        return ports

    def retarget(
        self,
        target_url: str,
        token: str | None,
        tcp_targets: dict[str, tuple[str, int]] | None = None,
    ) -> None:
        """Point at a replaced guest (same gateway ports)."""
        self.target_url, self.token = target_url.rstrip("/"), token
        for name, target in (tcp_targets or {}).items():
            if name in self._tcp:
                self._tcp[name].target = target

    def close(self) -> None:
        for srv in (self._http, *self._tcp.values()):
            srv.shutdown()
            srv.server_close()


def tcp_targets_for(url: str, ports: dict[str, int]) -> dict[str, tuple[str, int]]:
    """Where the guest's CDP/VLC ports are reachable from the host: the published port when the
    provider names one, else OSWorld's default port at the server's address."""
    host = urlsplit(url).hostname or "127.0.0.1"
    return {
        name: (host, int(ports.get(name, default))) for name, default in GUEST_TCP_PORTS.items()
    }


def with_gateway(handle: Any, gateway: OSWorldGateway | None) -> tuple[Any, OSWorldGateway]:
    """``handle`` with ``osworld_url``/``osworld_ports`` of ``gateway`` (created, or pointed at
    this handle's guest when given); the provider keeps the gateway and closes it with itself."""
    targets = tcp_targets_for(handle.url, handle.ports)
    if gateway is None:
        gateway = OSWorldGateway(handle.url, handle.token, targets)
    else:
        gateway.retarget(handle.url, handle.token, targets)
    return dataclasses.replace(
        handle, osworld_url=gateway.url, osworld_ports=gateway.ports
    ), gateway


_GATEWAYS: weakref.WeakValueDictionary[str, OSWorldGateway] = weakref.WeakValueDictionary()
_OWNED: dict[tuple[str, str | None], OSWorldGateway] = {}
_registry_lock = threading.Lock()


def gateway_for(handle: Any) -> OSWorldGateway:
    """The gateway behind ``handle.osworld_url`` (made by its provider); for a handle without one
    (a provider that makes none), a gateway made here once per server and token."""
    with _registry_lock:
        if handle.osworld_url and (gw := _GATEWAYS.get(handle.osworld_url)) is not None:
            return gw
        key = (handle.url, handle.token)
        if key not in _OWNED:
            _OWNED[key] = OSWorldGateway(
                handle.url, handle.token, tcp_targets_for(handle.url, handle.ports)
            )
        return _OWNED[key]


__all__ = [
    "Exchange",
    "gateway_for",
    "GUEST_TCP_PORTS",
    "Journal",
    "OSWorldGateway",
    "peer_uid",
    "tcp_targets_for",
    "with_gateway",
]
