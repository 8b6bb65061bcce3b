"""Loopback-only servers of the OSWorld gateway: the check that a connection comes from a
socket this host user owns (:func:`allowed`, from :mod:`computer_env.peers`), and a raw TCP
forwarder (Chrome DevTools, VLC)."""

from __future__ import annotations

import logging
import socket
import socketserver
import threading
from typing import Any

from computer_env.peers import peer_uid, same_user

log = logging.getLogger(__name__)


def allowed(sock: socket.socket, peer: tuple[str, int]) -> bool:
    """True when the connecting socket belongs to this process's user (a refusal is logged);
    the rule lives in :mod:`computer_env.peers`."""
    return same_user(sock, peer, what="gateway")


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
        for sock in (upstream, self.request):  # each piece goes on as it came: a piece held
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # for an ACK waits 40 ms

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


__all__ = ["TCPForward", "allowed", "peer_uid"]
