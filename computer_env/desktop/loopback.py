"""Loopback-only servers of the OSWorld gateway: the check that a connection comes from a
socket this host user owns, and a raw TCP forwarder (Chrome DevTools, VLC)."""

from __future__ import annotations

import logging
import os
import socket
import socketserver
import threading
from typing import Any

log = logging.getLogger(__name__)


def _hex_addr(host: str, port: int) -> str:
    packed = socket.inet_aton(host)
    return f"{int.from_bytes(packed, 'little'):08X}:{port:04X}"


def peer_uid(peer: tuple[str, int], local: tuple[str, int]) -> int | None:
    """The uid owning the connecting socket of a loopback connection (``/proc/net/tcp``)."""
    want_local, want_remote = _hex_addr(*peer[:2]), _hex_addr(*local[:2])
    try:
        with open("/proc/net/tcp", encoding="ascii") as fh:
            next(fh)
            for line in fh:
                parts = line.split()
                if parts[1] == want_local and parts[2] == want_remote:
                    return int(parts[7])
    except (OSError, StopIteration, ValueError, IndexError):
        return None
    return None


def allowed(sock: socket.socket, peer: tuple[str, int]) -> bool:
    """True when the connecting socket belongs to this process's user (a refusal is logged)."""
    uid = peer_uid(peer, sock.getsockname())
    if uid != os.geteuid():
        log.warning("gateway: refused a connection from %s:%s (socket owner uid %s)",
                    peer[0], peer[1], uid)
        return False
    return True


class TCPForward(socketserver.ThreadingTCPServer):
    """127.0.0.1:<any> -> ``target`` (raw bytes both ways)."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        super().__init__(("127.0.0.1", 0), _Pipe)

    def verify_request(self, request: Any, client_address: Any) -> bool:
        return allowed(request, client_address)


class _Pipe(socketserver.BaseRequestHandler):
    server: TCPForward

    def handle(self) -> None:
        try:
            upstream = socket.create_connection(self.server.target, timeout=10)
        except OSError as exc:
            log.info("gateway: %s:%s does not answer: %s", *self.server.target, exc)
            return
        upstream.settimeout(None)
        self.request.settimeout(None)

        def pump(src: socket.socket, dst: socket.socket) -> None:
            try:
                while data := src.recv(65536):
                    dst.sendall(data)
            except OSError:
                pass
            finally:
                for s in (src, dst):
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass

        back = threading.Thread(target=pump, args=(upstream, self.request), daemon=True)
        back.start()
        pump(self.request, upstream)
        back.join(timeout=5)
        upstream.close()
