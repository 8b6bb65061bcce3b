"""``RayProvider`` (``--provider ray``): each desktop is a Ray actor on some node of a cluster.

The actor (:class:`~.ray_actor.DesktopActor`) runs the node's own local sandboxed desktop (or
Docker's, ``--ray-desktop docker``) and hands back its guest server's URL and token through a
:class:`~.ray_door.NodeDoor` on the node's address; from there on the worker talks HTTP to it as
to any desktop, so set-up, readiness, scoring and the audits are unchanged. OSWorld's own code
reaches it through the usual :class:`~computer_env.desktop.gateway.OSWorldGateway`, which runs
HERE, on the worker's loopback (where OSWorld's code runs, in the worker's scoring process), and
adds the token on the way to the node's door.

Placement: the actor needs ``--ray-resource`` (``desktop``, ``--ray-resource-amount`` 1 per
desktop) and no CPU; ``--ray-placement spread`` (the default) spreads a run's desktops over the
nodes. Lifetime: each actor is named per run
(``holo-desktop-<run>-<controller pid>-<worker>-<pid>-<n>``, namespace ``holo-bench``) and owned
by the worker's driver, so Ray kills it when the worker dies; :meth:`close` (the pool's
teardown: run end, SIGINT/SIGTERM/SIGHUP; also at exit) stops the desktop on its node, then
kills the actor; the controller kills any left at run end and sweeps every node
(:func:`~.ray_cluster.kill_run_actors`, :func:`~.ray_cluster.sweep_nodes`). A dead actor or
node is :class:`DesktopNodeLost` (rerun on a fresh actor, then unscored); a reset is a reset
on the node.
"""

from __future__ import annotations

import itertools
import logging
import os
from typing import TYPE_CHECKING, Any

from computer_env.desktop.gateway import OSWorldGateway, with_gateway
from computer_env.desktop.providers.base import DesktopHandle, DesktopProvider
from computer_env.desktop.providers.ray.cluster import (
    actor_prefix,
    check_resources,
    connect,
    on_exit,
    raise_answer,
    ray_faults,
)
from computer_env.errors import DesktopNodeLost

if TYPE_CHECKING:
    from computer_env.desktop.providers.registry import ProviderOptions

log = logging.getLogger(__name__)

START_TIMEOUT = 180.0
"""placement (a free resource) plus the desktop's own start on its node (at most 60 s)"""
CALL_TIMEOUT = 90.0
"""a reset on the node (a new session: seconds) or a limit read"""
ALIVE_TIMEOUT = 15.0
CLOSE_TIMEOUT = 30.0
_seq = itertools.count()


_REMOTE: dict[type, Any] = {}


def _remote_class(ray: Any, cls: type) -> Any:
    """``ray.remote(cls)``, made once per process (each call would export the class again)."""
    if cls not in _REMOTE:
        _REMOTE[cls] = ray.remote(cls)
    return _REMOTE[cls]


def _worker_ip() -> str:
    """This worker's address as the cluster sees it (what the node's door lets in)."""
    import ray

    return str(ray.util.get_node_ip_address())


class RayProvider(DesktopProvider):
    """One desktop in a Ray actor (see module)."""

    name = "ray"

    def __init__(self, opts: ProviderOptions) -> None:
        self.opts = opts
        self.address = opts.ray_address
        self.kind = opts.ray_desktop
        self.resource, self.amount = opts.ray_resource, opts.ray_resource_amount
        self._actor: Any = None
        self._handle: DesktopHandle | None = None
        self._gateway: OSWorldGateway | None = None
        self._allowed: set[int] = set()
        self.where: dict[str, Any] = {}
        """the node of the current actor (``node_id``, ``node_ip``, ``host``, ``pid``)"""
        self._exit_hooked = False

    @classmethod
    def from_options(cls, opts: ProviderOptions, variant: str = "") -> RayProvider:
        return cls(opts)

    @classmethod
    def preflight(cls, opts: ProviderOptions, variant: str = "") -> list[str]:
        """Before any worker starts: the cluster answers and holds enough of the resource for
        every worker's desktops (a spare is a second one)."""
        per_worker = 2 if opts.spare else 1
        why = f"{opts.workers} worker{'s' * (opts.workers != 1)} x {per_worker} desktop" + (
            " (with a spare)" if opts.spare else ""
        )
        check_resources(
            opts.ray_address,
            opts.ray_resource,
            opts.ray_resource_amount,
            opts.workers * per_worker,
            why,
        )
        return []

    # -- lifecycle ----------------------------------------------------------------------------
    def start(self) -> DesktopHandle:
        if self._handle is not None:
            return self._handle
        ray = connect(self.address, during_run=True)
        if not self._exit_hooked:
            on_exit(self.close)
            self._exit_hooked = True
        from computer_env.desktop.providers.local.ownership import current_run
        from computer_env.desktop.providers.ray.actor import DesktopActor

        worker = self.opts.worker_id or os.environ.get("PYTEST_XDIST_WORKER", "main")
        name = (
            f"{actor_prefix(self.opts.run_id, self.opts.controller_pid)}{worker}-"
            f"{os.getpid()}-{next(_seq)}"
        )
        actor_cls = _remote_class(ray, DesktopActor)
        strategy = "SPREAD" if self.opts.ray_placement == "spread" else "DEFAULT"
        what = f"starting desktop actor {name}"
        try:
            with ray_faults(what, self.resource, self.address):
                self._actor = actor_cls.options(
                    name=name,
                    num_cpus=0,
                    resources={self.resource: self.amount},
                    scheduling_strategy=strategy,
                    max_restarts=0,
                    max_concurrency=4,
                ).remote(self.kind, self.opts, _worker_ip(), current_run().encode())
                answer = raise_answer(
                    ray.get(self._actor.start.remote(sorted(self._allowed)), timeout=START_TIMEOUT)
                )
            handle = self._from_answer(answer)
        except BaseException:
            self.close()
            raise
        log.info("desktop actor %s on node %s: %s", name, answer.get("node"), handle.url)
        self._handle, self._gateway = with_gateway(handle, self._gateway)
        return self._handle

    def reset(self) -> DesktopHandle:
        if self._actor is None or self._handle is None:
            return self.start()
        ray = connect(self.address, during_run=True)
        with ray_faults("resetting the Ray desktop", self.resource, self.address):
            answer = raise_answer(ray.get(self._actor.reset.remote(), timeout=CALL_TIMEOUT))
        handle = self._from_answer(answer)
        self._handle, self._gateway = with_gateway(handle, self._gateway)
        return self._handle

    def is_alive(self) -> bool:
        """The actor answers and its desktop's server does (a dead node or actor: False)."""
        if self._actor is None:
            return False
        ray = connect(self.address, during_run=True)
        try:
            with ray_faults("checking the Ray desktop", self.resource, self.address):
                return bool(ray.get(self._actor.is_alive.remote(), timeout=ALIVE_TIMEOUT))
        except Exception as exc:  # noqa: BLE001 - any failure to answer is "not alive"
            log.warning("the desktop actor does not answer: %s", exc)
            return False

    def host_lost(self) -> bool:
        """The actor (or its node) is gone, or does not answer a trivial call in time: nothing
        inside the sandbox can reach the actor's process, so this is never the agent's doing."""
        if self._actor is None:
            return False
        import ray

        try:
            ray.get(self._actor.where.remote(), timeout=ALIVE_TIMEOUT)
            return False
        except Exception as exc:  # noqa: BLE001 - dead, lost or unreachable: all the same here
            log.warning("the desktop's actor is lost: %s", type(exc).__name__)
            return True

    def limit_breaches(self) -> list[str]:
        if self._actor is None:
            return []
        ray = connect(self.address, during_run=True)
        with ray_faults("reading the Ray desktop's limits", self.resource, self.address):
            return list(ray.get(self._actor.limit_breaches.remote(), timeout=CALL_TIMEOUT))

    def allow_host_port(self, port: int) -> None:
        self._allowed.add(int(port))
        if self._actor is not None:
            ray = connect(self.address, during_run=True)
            with ray_faults("opening a port for the Ray desktop", self.resource, self.address):
                ray.get(self._actor.allow_host_port.remote(int(port)), timeout=CALL_TIMEOUT)

    def close(self) -> None:
        """Stop the desktop on its node (bounded), then kill the actor; idempotent."""
        actor, self._actor, self._handle = self._actor, None, None
        if self._gateway is not None:
            self._gateway.close()
            self._gateway = None
        if actor is None:
            return
        import ray

        if not ray.is_initialized():
            return  # the driver is gone: Ray killed its actors with it
        try:
            ray.get(actor.close.remote(), timeout=CLOSE_TIMEOUT)
        except Exception as exc:  # noqa: BLE001 - a dead actor has nothing left to close
            log.info("closing the desktop actor: %s", type(exc).__name__)
        try:
            ray.kill(actor, no_restart=True)
        except Exception as exc:  # noqa: BLE001 - already gone
            log.info("killing the desktop actor: %s", type(exc).__name__)

    # -- internals ----------------------------------------------------------------------------
    def _from_answer(self, answer: dict[str, Any]) -> DesktopHandle:
        if "url" not in answer:
            raise DesktopNodeLost(f"the desktop actor answered without a URL: {answer!r}")
        self.where = {k: answer.get(k) for k in ("node_id", "node_ip", "host", "pid")}
        ports = {str(k): int(v) for k, v in answer["ports"].items()}
        return DesktopHandle(
            url=answer["url"],
            token=answer["token"],
            display=answer["display"],
            guest_host=answer["guest_host"],
            ports=ports,
            provider=f"ray:{self.kind}",
            image=answer.get("image"),
            node=answer.get("node"),
        )


__all__ = ["RayProvider"]
