"""``DesktopActor``: the body of one Ray actor that runs one desktop on its node.

The actor builds the node's own provider (``local``: the sandboxed desktop, or ``docker``) and
opens a :class:`~.ray_door.NodeDoor` on the node's cluster address, so the worker that owns it
reaches the guest server (token as usual) and the DevTools/VLC ports from its own host. When the
worker is on another host, each host port the desktop may reach (asset server, proxy) is also
forwarded from the sandbox's side of the node (``guest_host``) to the worker's host.

An actor Ray kills (its owner died, ``ray.kill``) gets SIGKILL: the desktop's processes die with
it, but its network namespace and cgroup stay until the next desktop on that node sweeps them,
or the run's end does on every node (:func:`~.ray_cluster.sweep_nodes`). A watcher process of
the actor's own could not do it: the raylet, a subreaper, kills what a dead worker left.

Answers are plain dicts (what Ray pickles); failures come back as ``{"error": ...}`` naming a
:mod:`computer_env.errors` class, and the worker raises that class again
(:func:`computer_env.desktop.providers.ray.cluster.raise_answer`). Ray itself imports this module
only on the node (the worker names it by path); the class is made a Ray actor by
:mod:`.provider`.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
import socketserver
import threading
from typing import Any
from urllib.parse import urlsplit

from computer_env.desktop.gateway import tcp_targets_for
from computer_env.desktop.loopback import _Pipe
from computer_env.desktop.providers.base import DesktopHandle, DesktopProvider
from computer_env.desktop.providers.ray.door import DoorForward, NodeDoor, is_local_address
from computer_env.errors import ConfigurationError, InfraError

log = logging.getLogger(__name__)

Answer = dict[str, Any]


def _error(exc: BaseException) -> Answer:
    kind = "config" if isinstance(exc, ConfigurationError) else "infra"
    return {
        "error": {
            "kind": kind,
            "cls": type(exc).__name__,
            "message": str(exc),
            "detail": getattr(exc, "detail", None),
        }
    }


def _targets(handle: DesktopHandle) -> dict[str, tuple[str, int]]:
    """Where the guest's server, DevTools and VLC ports are reachable on this node."""
    url = urlsplit(handle.url)
    return {
        "server": (url.hostname or "127.0.0.1", int(url.port or 80)),
        **tcp_targets_for(handle.url, handle.ports),
    }


class DesktopActor:
    """One desktop on this node, for the worker at ``worker_ip`` (see module)."""

    def __init__(self, kind: str, options: Any, worker_ip: str, run: str | None = None) -> None:
        """``kind`` is ``local`` or ``docker``; ``options`` the run's ``ProviderOptions``. The
        controller pid a Docker container is labelled with becomes this actor's: the owner
        that lives on this node (a later sweep here keeps a live actor's container and removes
        a dead one's; the pytest controller's pid means nothing on this host). ``run`` is the
        run the desktop belongs to (encoded, see ``computer_env.desktop.providers.local
        .ownership``): what it leaves on this node carries that run's id."""
        from computer_env.desktop.providers.local.ownership import RUN_ENV
        from computer_env.desktop.providers.registry import make_provider

        if run:
            os.environ[RUN_ENV] = run

        self.kind = kind
        self.worker_ip = worker_ip
        options = dataclasses.replace(options, controller_pid=os.getpid())
        self.provider: DesktopProvider = make_provider(kind, options)
        self.node_ip = self._node_ip()
        self.node_id = self._node_id()
        self.same_host = worker_ip == self.node_ip or is_local_address(worker_ip)
        self.door: NodeDoor | None = None
        self.allowed: set[int] = set()
        self.reverse: dict[int, DoorForward] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _node_ip() -> str:
        import ray

        return str(ray.util.get_node_ip_address())

    @staticmethod
    def _node_id() -> str:
        import ray

        return str(ray.get_runtime_context().get_node_id())

    # -- what the worker calls --------------------------------------------------------------
    def start(self, ports: list[int]) -> Answer:
        """Start the desktop (the host ports it may reach first); its handle as seen from the
        worker."""
        try:
            for port in ports:
                self.allow_host_port(port)
            with self._lock:
                return self._answer(self.provider.start())
        except (InfraError, ConfigurationError) as exc:
            return _error(exc)

    def reset(self) -> Answer:
        try:
            with self._lock:
                return self._answer(self.provider.reset())
        except (InfraError, ConfigurationError) as exc:
            return _error(exc)

    def is_alive(self) -> bool:
        return self.provider.is_alive()

    def limit_breaches(self) -> list[str]:
        return self.provider.limit_breaches()

    def allow_host_port(self, port: int) -> None:
        """Let the desktop reach ``port`` of the worker's host (forwarded when that is not this
        host)."""
        self.allowed.add(int(port))
        self.provider.allow_host_port(int(port))
        handle = getattr(self.provider, "handle", None)
        if handle is not None:
            self._reverse(handle)

    def where(self) -> Answer:
        """The node: its Ray id, address and host name, and the actor's pid."""
        return {
            "node_id": self.node_id,
            "node_ip": self.node_ip,
            "host": socket.gethostname(),
            "pid": os.getpid(),
        }

    def close(self) -> None:
        """Stop the desktop and the forwards; leaves nothing on the node."""
        with self._lock:
            for fwd in self.reverse.values():
                fwd.shutdown()
                fwd.server_close()
            self.reverse = {}
            if self.door is not None:
                self.door.close()
                self.door = None
            self.provider.close()

    # -- internals --------------------------------------------------------------------------
    def _answer(self, handle: DesktopHandle) -> Answer:
        targets = _targets(handle)
        if self.door is None:
            self.door = NodeDoor(self.node_ip, self.worker_ip, targets)
        else:
            self.door.retarget(targets)
        self._reverse(handle)
        ports = self.door.ports
        return {
            "url": f"http://{_host_in_url(self.node_ip)}:{ports['server']}",
            "token": handle.token,
            "display": handle.display,
            "guest_host": handle.guest_host,
            "ports": ports,
            "image": handle.image,
            "node": f"{self.node_ip} ({self.node_id[:12]})",
            **self.where(),
        }

    def _reverse(self, handle: DesktopHandle) -> None:
        """Forward each allowed port from the guest's side of this node to the worker's host
        (nothing to forward when the worker runs on this host: its services listen here)."""
        if self.same_host:
            return
        for port, fwd in list(self.reverse.items()):
            if fwd.server_address[0] != handle.guest_host:
                # a Docker desktop's container has a network (a host address) of its own
                del self.reverse[port]
                fwd.shutdown()
                fwd.server_close()
        for port in sorted(self.allowed - set(self.reverse)):
            try:
                self.reverse[port] = _ReverseForward(
                    handle.guest_host, port, (self.worker_ip, port)
                )
            except OSError as exc:
                log.warning(
                    "cannot forward %s:%d to the worker at %s: %s",
                    handle.guest_host,
                    port,
                    self.worker_ip,
                    exc,
                )


class _ReverseForward(DoorForward):
    """``guest_host:port`` (the port the guest was told) -> the worker's service; any peer that
    reaches it is the desktop itself (the sandbox's firewall lets only its own guest through)."""

    def __init__(self, bind_ip: str, port: int, target: tuple[str, int]) -> None:
        self.target, self.peer_ip, self.peer_is_local = target, "", False
        socketserver.ThreadingTCPServer.__init__(self, (bind_ip, port), _Pipe)
        threading.Thread(target=self.serve_forever, daemon=True, name=f"reverse-{port}").start()

    def verify_request(self, request: Any, client_address: Any) -> bool:
        return True


def _host_in_url(ip: str) -> str:
    return f"[{ip}]" if ":" in ip else ip


__all__ = ["DesktopActor"]
