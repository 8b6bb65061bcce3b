"""``NodeDoor``: how a worker on another host reaches a desktop a Ray actor runs on its node.

A local desktop's server, Chrome DevTools and VLC ports listen on the sandbox's veth address
(``10.77.N.2``), which only its own host can route to. The actor opens one TCP forward per port
on the node's cluster address (the one Ray knows the node by) to that guest address, and accepts
a connection only from the worker that owns the desktop: from its host's address. The guest
server wants its bearer token on every request (as on the sandbox's own address, which every user
of the node's host can reach); the DevTools and VLC ports have no token of their own, as on
OSWorld's VM, so when the worker is on this host their forwards also want a socket of this host
user (:mod:`computer_env.peers`; it reads the kernel's TCP table, ~0.5-3 ms a connection, which
the server's forward, crossed by every request of the agent's turn, does not pay). Ray's own
ports are open to every host of the cluster: a Ray cluster's network must be trusted anyway.
"""

from __future__ import annotations

import functools
import ipaddress
import logging
import socket
import socketserver
import threading
from typing import Any

from computer_env.desktop.loopback import _Pipe
from computer_env.peers import same_user

log = logging.getLogger(__name__)


@functools.lru_cache(maxsize=256)
def is_local_address(ip: str) -> bool:
    """Is ``ip`` one of this host's addresses (loopback, or bound here)? (Cached: a door sees
    the same few addresses.)"""
    addr = ipaddress.ip_address(ip.split("%")[0])
    if addr.is_loopback:
        return True
    try:
        with socket.socket(socket.AF_INET6 if addr.version == 6 else socket.AF_INET) as s:
            s.bind((str(addr), 0))
        return True
    except OSError:
        return False


class DoorForward(socketserver.ThreadingTCPServer):
    """``bind_ip:<any>`` -> ``target``, for connections from ``peer_ip`` only (and, with
    ``check_user``, from a socket of this host user when that address is this host's)."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self, bind_ip: str, target: tuple[str, int], peer_ip: str, *, check_user: bool = True
    ) -> None:
        self.target = target
        self.peer_ip = peer_ip
        self.peer_is_local = is_local_address(peer_ip)
        self.check_user = check_user
        super().__init__((bind_ip, 0), _Pipe)

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def verify_request(self, request: Any, client_address: Any) -> bool:
        ip = str(client_address[0])
        if ip.startswith("::ffff:"):
            ip = ip[7:]
        if ip != self.peer_ip and not (self.peer_is_local and is_local_address(ip)):
            log.warning(
                "node door %s: refused a connection from %s (only %s may connect)",
                self.server_address,
                ip,
                self.peer_ip,
            )
            return False
        if not self.check_user or not self.peer_is_local:
            return True
        return same_user(request, client_address, what="node door")


class NodeDoor:
    """The forwards of one desktop (``server``, ``cdp``, ``vlc``) on ``bind_ip``; the token-less
    ones check the connecting user too (see module)."""

    def __init__(self, bind_ip: str, peer_ip: str, targets: dict[str, tuple[str, int]]) -> None:
        self.bind_ip = bind_ip
        self.forwards = {
            name: DoorForward(bind_ip, target, peer_ip, check_user=name != "server")
            for name, target in targets.items()
        }
        self._threads = [
            threading.Thread(target=fwd.serve_forever, daemon=True, name=f"node-door-{name}")
            for name, fwd in self.forwards.items()
        ]
        for t in self._threads:
            t.start()

    @property
    def ports(self) -> dict[str, int]:
        """The forwards' ports on :attr:`bind_ip`, by name."""
        return {name: fwd.port for name, fwd in self.forwards.items()}

    def retarget(self, targets: dict[str, tuple[str, int]]) -> None:
        """Point the forwards at a replaced guest (same ports)."""
        for name, target in targets.items():
            if name in self.forwards:
                self.forwards[name].target = target

    def close(self) -> None:
        for fwd in self.forwards.values():
            fwd.shutdown()
            fwd.server_close()
        self.forwards = {}


__all__ = ["DoorForward", "NodeDoor", "is_local_address"]
