"""Desktops in Docker containers: OSWorld's QEMU image or the project's guest-server image.

- ``kind="osworld"``: ``happysixd/osworld-docker`` booting the Ubuntu qcow2 (mounted read-only at
  ``/System.qcow2``) with QEMU; KVM when usable, software emulation (``KVM=N``, much slower)
  otherwise. The in-VM server has no auth (``token=None``).
- ``kind="guest-server"``: ``holo-bench/desktop:latest`` from ``docker/build-image.sh``: Xvfb +
  openbox + apps + ``computer_env.desktop.server`` with a per-container bearer token.

Ports are published on 127.0.0.1 with host ports chosen by Docker (no collisions between
xdist workers or concurrent runs). Reset replaces the container, as upstream; a pre-warmed spare
(already booting while the current task runs) makes that almost free. Each container has a
network of its own, firewalled on the host side to the ports :meth:`DockerProvider.
allow_host_port` opened (:mod:`.network`): no desktop reaches another, nor a host port it was
not given. Every container and network carries ``holo-bench.*`` labels (run id, controller and
owner pid), every firewall chain its owner's pid, so that :func:`sweep_dead_leftovers` removes
what a killed run left and :func:`sweep_run_leftovers` what a run's dead workers left, never a
live owner's. The daemon connection and pre-flight checks are in :mod:`.host`.
"""

from __future__ import annotations

import atexit
import logging
import os
import secrets
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from computer_env.desktop.gateway import OSWorldGateway, with_gateway
from computer_env.desktop.providers.base import DesktopHandle, DesktopProvider
from computer_env.desktop.providers.docker.containers import (
    LABEL_OWNER,
    LABEL_PID,
    LABEL_RUN,
    exit_reason,
    gateway_address,
    guest_server_options,
    labels,
    osworld_options,
    remove_by_id,
    remove_quietly,
    sweep_dead_containers,
    sweep_run_containers,
)
from computer_env.desktop.providers.docker.host import (
    KVM_SLOWDOWN,
    ImageKind,
    connect,
    docker_errors,
    kvm_usable,
    preflight,
)
from computer_env.desktop.providers.docker.network import (
    DesktopNet,
    firewall_missing,
    new_tag,
    sweep_dead_networks,
    sweep_run_networks,
)
from computer_env.desktop.providers.docker.seccomp import run_container
from computer_env.desktop.providers.limits import (
    DesktopLimits,
    cgroup_breaches,
    pid_cgroup_dirs,
    tmp_breach,
)
from computer_env.desktop.providers.ports import (
    named_ports,
    probe,
    published_ports,
    wait_until_ready,
)
from computer_env.errors import VMStartError
from computer_env.procs import running_since
from computer_env.readiness import NotReady, NotYet, wait_until

if TYPE_CHECKING:
    from computer_env.desktop.providers.registry import ProviderOptions

log = logging.getLogger(__name__)

DEFAULT_OSWORLD_IMAGE = "happysixd/osworld-docker"
DEFAULT_GUEST_SERVER_IMAGE = "holo-bench/desktop:latest"
NO_FIREWALL = (
    "desktops get a network each (no desktop reaches another), but their host side "
    "is not firewalled: every host port listening on all addresses is open to them"
)

#: a container, its token, its network
Desktop = tuple[Any, str | None, DesktopNet]


class DockerProvider(DesktopProvider):
    """One container-backed desktop per instance (one per xdist worker)."""

    name = "docker"

    def __init__(
        self,
        image: str | None = None,
        *,
        kind: ImageKind | None = None,
        qcow2_path: str | Path | None = None,
        vm_path: str | Path | None = None,
        ram_size: str | None = None,
        cpu_cores: int | None = None,
        disk_size: str | None = None,
        kvm: bool | None = None,
        screen: tuple[int, int] = (1920, 1080),
        run_id: str | None = None,
        worker: str | None = None,
        controller_pid: int | None = None,
        ready_timeout: float | None = None,
        prewarm: bool | None = None,
        docker_host: str | None = None,
        limits: DesktopLimits | None = None,
    ) -> None:
        """``kind=None`` infers ``"osworld"`` from a qcow2 path (``vm_path`` is an alias of
        ``qcow2_path``) or a ``happysixd/`` image, else ``"guest-server"``.
        ``ram_size``/``cpu_cores``/``disk_size`` default to env RAM_SIZE/CPU_CORES/DISK_SIZE
        (OSWorld: 4G/4/32G; guest-server: memory from ``limits``, no disk). Every container's
        CPU time is capped at ``limits.cpus`` (Docker's ``--cpus``; for the guest-server image
        an explicit ``cpu_cores`` wins). The guest-server container also gets ``limits``'
        process cap and /tmp size (default :meth:`DesktopLimits.from_values`: env
        ``HOLO_DESKTOP_*``). ``kvm=None`` detects
        /dev/kvm (env KVM=N forces it off). ``prewarm=None`` means on for the guest-server image
        and off for OSWorld's VM (a spare VM holds another RAM_SIZE and burns CPU while booting).
        """
        qcow2_path = qcow2_path or vm_path
        if kind is None:
            kind = (
                "osworld"
                if qcow2_path or (image or "").startswith("happysixd/")
                else "guest-server"
            )
        self.kind: ImageKind = kind
        osworld = kind == "osworld"
        self.image = image or (DEFAULT_OSWORLD_IMAGE if osworld else DEFAULT_GUEST_SERVER_IMAGE)
        self.qcow2_path = Path(qcow2_path).expanduser().resolve() if qcow2_path else None
        self.limits = limits or DesktopLimits.from_values()
        self.ram_size = (
            ram_size
            or os.environ.get("RAM_SIZE")
            or ("4G" if osworld else f"{self.limits.memory_bytes // (1024 * 1024)}M")
        )
        self.cpu_cores = int(cpu_cores or os.environ.get("CPU_CORES") or 4)  # OSWorld VM's vCPUs
        self.cpus = float(cpu_cores) if cpu_cores and not osworld else self.limits.cpus
        self.disk_size = disk_size or os.environ.get("DISK_SIZE") or "32G"
        env_kvm_off = os.environ.get("KVM", "").upper() in ("N", "NO", "0", "FALSE")
        self.kvm = (False if env_kvm_off else kvm_usable()) if kvm is None else kvm
        self.screen = screen
        self.run_id = run_id or os.environ.get("HOLO_RUN_ID") or f"run-{os.getpid()}"
        self.worker = worker or os.environ.get("PYTEST_XDIST_WORKER", "main")
        self.controller_pid = controller_pid or os.getpid()
        self.ready_timeout = ready_timeout or (300.0 if osworld else 90.0)
        self.prewarm = (not osworld) if prewarm is None else prewarm
        self.docker_host = docker_host
        self._client: Any = None
        self._container: Any = None
        self._token: str | None = None
        self._handle: DesktopHandle | None = None
        self._spare: Future[Desktop] | None = None
        self._bg: ThreadPoolExecutor | None = None
        self._bg_client: Any = None  # the docker SDK's session is not shared across threads
        self._closed = False
        self._osworld_gateway: OSWorldGateway | None = None
        self._net: DesktopNet | None = None
        self._live_nets: dict[str, DesktopNet] = {}  # this provider's networks, by name
        self._allowed: set[int] = set()
        self._net_lock = threading.Lock()
        self._firewall: bool | None = None  # decided at the first network

    @classmethod
    def from_options(cls, opts: ProviderOptions, variant: str = "") -> DockerProvider:
        return cls(
            opts.docker_image,
            vm_path=opts.vm_path,
            run_id=opts.run_id,
            worker=opts.worker_id,
            screen=opts.screen,
            controller_pid=opts.controller_pid,
            limits=opts.limits,
        )

    @classmethod
    def preflight(cls, opts: ProviderOptions, variant: str = "") -> list[str]:
        """Daemon reachable, image (and OSWorld's qcow2) present, KVM usable; containers left by
        dead runs are removed (see :meth:`check_host`)."""
        warnings = cls.from_options(opts).check_host()
        if why := firewall_missing():
            warnings.append(f"{why}: {NO_FIREWALL}")
        removed = sweep_dead_leftovers()
        if removed:
            warnings.append(
                f"removed {len(removed)} container(s), network(s) and firewall "
                f"chain(s) of dead runs: {', '.join(removed)}"
            )
        return warnings

    # ----------------------------------------------------------------- public API
    def check_host(self) -> list[str]:
        """Check daemon, image, qcow2 and KVM; raise ``ConfigurationError``; return warnings."""
        return preflight(
            image=self.image,
            kind=self.kind,
            qcow2_path=self.qcow2_path,
            kvm=self.kvm,
            docker_host=self.docker_host,
        )

    @property
    def handle(self) -> DesktopHandle | None:
        """The current desktop, if started."""
        return self._handle

    def start(self) -> DesktopHandle:
        if self._handle is not None:
            return self._handle
        self._closed = False
        atexit.register(self.close)
        if self.kind == "osworld" and not self.kvm:
            log.warning("docker: %s", KVM_SLOWDOWN)
        self._handle = self._activate(*self._create())
        self._launch_spare()
        return self._handle

    def reset(self) -> DesktopHandle:
        """Replace the container by a pristine one (the pre-warmed spare when there is one)."""
        if self._handle is None:
            return self.start()
        t0 = time.monotonic()
        old, old_net = self._container, self._net
        self._container, self._handle, self._net = None, None, None
        if old is not None or old_net is not None:
            self._background().submit(
                self._remove, self._bg_docker(), old.id if old is not None else None, old_net
            )
        desktop: Desktop | None = None
        if self._spare is not None:
            spare, self._spare = self._spare, None
            try:
                desktop = spare.result(timeout=self.ready_timeout)
            except Exception as exc:  # noqa: BLE001 - the spare failing is not fatal
                log.warning("pre-warmed spare failed (%s); starting a fresh container", exc)
        self._handle = self._activate(*(desktop or self._create()))
        self._launch_spare()
        log.info(
            "docker reset in %.2fs (%s)", time.monotonic() - t0, "spare" if self.prewarm else "cold"
        )
        return self._handle

    def is_alive(self) -> bool:
        if self._handle is None:
            return False
        return probe(self._handle.url, self._token)

    def limit_breaches(self) -> list[str]:
        """Limits the current container hit (its cgroup's OOM kills and refused forks, a full
        /tmp), read on this host; empty for OSWorld's VM image (QEMU's own limits apply)."""
        if self._container is None or self.kind != "guest-server":
            return []
        try:
            self._container.reload()
            pid = int(self._container.attrs["State"]["Pid"])
        except Exception:  # noqa: BLE001 - gone: is_alive() handles that
            return []
        if pid <= 0:
            return []
        found = cgroup_breaches(pid_cgroup_dirs(pid), self.limits)
        full = tmp_breach(Path(f"/proc/{pid}/root"), self.limits)
        return found + ([full] if full else [])

    def close(self) -> None:
        """Remove the active and the spare container; idempotent."""
        if self._closed:
            return
        self._closed = True
        atexit.unregister(self.close)
        spare, self._spare = self._spare, None
        if self._bg is not None:
            self._bg.shutdown(wait=True)
            self._bg = None
        client = self._client or self._bg_client
        if spare is not None and spare.done() and spare.exception() is None:
            container, _token, net = spare.result()
            remove_quietly(container)
            self._remove_net(client, net)
        remove_quietly(self._container)
        if self._net is not None:
            self._remove_net(client, self._net)
        self._container, self._handle, self._net = None, None, None
        with self._net_lock:
            left = list(self._live_nets.values())
        for net in left:  # made by a start that failed half-way
            self._remove_net(client, net)
        if self._osworld_gateway is not None:
            self._osworld_gateway.close()
            self._osworld_gateway = None
        for client in (self._client, self._bg_client):
            if client is not None:
                client.close()
        self._client = self._bg_client = None

    # ----------------------------------------------------------------- internals
    def _docker(self) -> Any:
        if self._client is None:
            self._client = connect(self.docker_host)
        return self._client

    def _background(self) -> ThreadPoolExecutor:
        if self._bg is None:
            self._bg = ThreadPoolExecutor(max_workers=1, thread_name_prefix="docker-spare")
        return self._bg

    def _bg_docker(self) -> Any:
        if self._bg_client is None:
            self._bg_client = connect(self.docker_host)
        return self._bg_client

    def _launch_spare(self) -> None:
        if self.prewarm and self._spare is None and not self._closed:
            self._spare = self._background().submit(self._create, self._bg_docker(), "spare")

    def allow_host_port(self, port: int) -> None:
        """Let the desktops reach TCP ``port`` on this host at ``handle.guest_host`` (this
        desktop and every later one: the active, the spare and those after a reset)."""
        with self._net_lock:
            self._allowed.add(int(port))
            for net in self._live_nets.values():
                net.allow_port(int(port))

    @property
    def firewalled(self) -> bool:
        """Is the current desktop's host side firewalled (see :mod:`.network`)?"""
        return self._net is not None and self._net.firewalled

    def _activate(self, container: Any, token: str | None, net: DesktopNet) -> DesktopHandle:
        """Wait for ``container``'s server and build its handle (removing it on failure)."""
        self._container, self._token, self._net = container, token, net
        try:
            try:
                container.reload()
            except docker_errors() as exc:  # the daemon lost it, or failed to answer
                raise VMStartError(f"container {container.name}: {exc}") from exc
            attrs = container.attrs
            ports = published_ports(attrs["NetworkSettings"]["Ports"])
            if 5000 not in ports:
                raise VMStartError(f"container {container.short_id} has no published port 5000")
            url = f"http://127.0.0.1:{ports[5000]}"
            gateway = gateway_address(attrs)
            wait_until_ready(
                url,
                token,
                timeout=self.ready_timeout,
                what=f"container {container.name} ({self.image})",
                still_starting=lambda: exit_reason(container),
            )
        except Exception:
            remove_quietly(container)
            self._remove_net(self._docker(), net)
            self._container, self._net = None, None
            raise
        handle = DesktopHandle(
            url=url,
            token=token,
            display=":0" if self.kind == "guest-server" else None,
            guest_host=gateway,
            ports=named_ports(ports),
            provider="docker",
            image=self.image,
        )
        handle, self._osworld_gateway = with_gateway(handle, self._osworld_gateway)
        return handle

    def container_options(self, token: str | None = None) -> dict[str, Any]:
        """This image's ``containers.run`` options (ports, environment, devices, limits)."""
        if self.kind == "osworld":
            return osworld_options(
                qcow2_path=self.qcow2_path,
                ram_size=self.ram_size,
                cpu_cores=self.cpu_cores,
                disk_size=self.disk_size,
                kvm=self.kvm,
                cpus=self.cpus,
            )
        return guest_server_options(
            token=token,
            screen=self.screen,
            ram_size=self.ram_size,
            cpus=self.cpus,
            limits=self.limits,
        )

    def _create(self, client: Any = None, role: str = "active") -> Desktop:
        """Create a network and start a container on it (does not wait for readiness)."""
        client = client or self._docker()
        token = secrets.token_urlsafe(24) if self.kind == "guest-server" else None
        tag = new_tag()
        name = f"holo-{self.worker}-{os.getpid()}-{tag}"
        owned = labels(
            run_id=self.run_id, worker=self.worker, controller_pid=self.controller_pid, role=role
        )
        net = self._new_net(client, name, tag, owned)
        kwargs: dict[str, Any] = dict(
            image=self.image, detach=True, init=True, labels=owned, name=name, network=net.name
        )
        kwargs.update(self.container_options(token))
        try:
            container = run_container(client, kwargs)
        except Exception as exc:  # docker.errors.* : image missing, daemon gone, bad device
            self._remove_net(client, net)
            raise VMStartError(f"could not start a container from {self.image}: {exc}") from exc
        log.info("started container %s (%s, worker %s)", container.name, role, self.worker)
        return container, token, net

    def _new_net(self, client: Any, name: str, tag: str, owned: dict[str, str]) -> DesktopNet:
        """The network of a new desktop, firewalled with the ports allowed so far (a port
        allowed meanwhile is added to it as to the others)."""
        with self._net_lock:
            if self._firewall is None:
                why = firewall_missing()
                if why:
                    log.warning("docker: %s: %s", why, NO_FIREWALL)
                self._firewall = why is None
            net = DesktopNet.create(
                client,
                name=name,
                tag=tag,
                labels=owned,
                allowed=self._allowed,
                firewall=self._firewall,
            )
            self._live_nets[net.name] = net
        return net

    def _remove_net(self, client: Any, net: DesktopNet) -> None:
        """Remove ``net`` (its container gone first) and forget it."""
        with self._net_lock:
            self._live_nets.pop(net.name, None)
        try:
            net.remove(client or self._docker())
        except Exception as exc:  # noqa: BLE001 - cleanup: logged, the sweep has it later
            log.warning("could not remove network %s: %s", net.name, exc)

    def _remove(self, client: Any, container_id: str | None, net: DesktopNet | None) -> None:
        """Remove a replaced desktop: its container, then its network (in the background)."""
        if container_id is not None:
            remove_by_id(client, container_id)
        if net is not None:
            self._remove_net(client, net)


def sweep_dead_leftovers(docker_host: str | None = None) -> list[str]:
    """Remove what desktops of gone owners left on this host, whatever their run: containers,
    then networks and firewall chains (a live owner's are never touched). Returns the names."""
    client = connect(docker_host, timeout=30.0)
    try:
        return sweep_dead_containers(client=client) + sweep_dead_networks(client)
    finally:
        client.close()


def sweep_run_leftovers(
    run_id: str, controller_pid: int, *, timeout: float = 20.0, docker_host: str | None = None
) -> list[str]:
    """The run's end, on its controller: wait (at most ``timeout`` s) until the processes that
    made this run's containers have exited, then remove what those of run ``run_id`` (under
    ``controller_pid``) left, and what gone owners left on this host. Returns the names."""
    client = connect(docker_host, timeout=30.0)
    try:
        wanted = [f"{LABEL_RUN}={run_id}", f"{LABEL_PID}={controller_pid}"]

        def owners_gone() -> bool:
            listed = client.containers.list(
                all=True, filters={"label": wanted}, ignore_removed=True
            )
            live = sorted(
                {
                    pid
                    for c in listed
                    if (pid := c.labels.get(LABEL_OWNER, "")).isdigit()
                    and int(pid) != os.getpid()
                    and running_since(int(pid))
                }
            )
            if live:
                raise NotYet(f"owner pid(s) {', '.join(live)} still running")
            return True

        try:
            wait_until(owners_gone, timeout_s=timeout, what="this run's desktop owners to exit")
        except NotReady as exc:
            log.warning("%s; their desktops are left to their own cleanup", exc)
        removed = sweep_run_containers(client, run_id, controller_pid)
        removed += sweep_run_networks(client, run_id, controller_pid)
        return removed + sweep_dead_containers(client=client) + sweep_dead_networks(client)
    finally:
        client.close()
