"""Desktops in Docker containers: OSWorld's QEMU image or the project's guest-server image.

- ``kind="osworld"``: ``happysixd/osworld-docker`` booting the Ubuntu qcow2 (mounted read-only at
  ``/System.qcow2``) with QEMU; KVM when usable, software emulation (``KVM=N``, much slower)
  otherwise. The in-VM server has no auth (``token=None``).
- ``kind="guest-server"``: ``holo-bench/desktop:latest`` from ``docker/build-image.sh``: Xvfb +
  openbox + apps + ``computer_env.desktop.server`` with a per-container bearer token.

Ports are published on 127.0.0.1 with host ports chosen by Docker (no collisions between
xdist workers or concurrent runs). Reset replaces the container, as upstream; a pre-warmed spare
(already booting while the current task runs) makes that almost free. Every container carries
``holo-bench.*`` labels so that :func:`~.docker_sweep.sweep_dead_containers` can remove what a
killed run left. The daemon connection and pre-flight checks are in :mod:`.host`.
"""

from __future__ import annotations

import atexit
import logging
import os
import secrets
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from computer_env.desktop.gateway import OSWorldGateway, with_gateway
from computer_env.desktop.providers.base import DesktopHandle, DesktopProvider
from computer_env.desktop.providers.docker.containers import (
    exit_reason, gateway_address, guest_server_options, labels, osworld_options, remove_by_id,
    remove_quietly, sweep_dead_containers)
from computer_env.desktop.providers.docker.host import (KVM_SLOWDOWN, ImageKind, connect,
                                                       docker_errors, kvm_usable, preflight)
from computer_env.desktop.providers.docker.seccomp import run_container
from computer_env.desktop.providers.limits import (DesktopLimits, cgroup_breaches,
                                                   pid_cgroup_dirs, tmp_breach)
from computer_env.desktop.providers.ports import (named_ports, probe, published_ports,
                                                 wait_until_ready)
from computer_env.errors import VMStartError

if TYPE_CHECKING:
    from computer_env.desktop.providers.registry import ProviderOptions

log = logging.getLogger(__name__)

DEFAULT_OSWORLD_IMAGE = "happysixd/osworld-docker"
DEFAULT_GUEST_SERVER_IMAGE = "holo-bench/desktop:latest"


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
            kind = ("osworld" if qcow2_path or (image or "").startswith("happysixd/")
                    else "guest-server")
        self.kind: ImageKind = kind
        osworld = kind == "osworld"
        self.image = image or (DEFAULT_OSWORLD_IMAGE if osworld else DEFAULT_GUEST_SERVER_IMAGE)
        self.qcow2_path = Path(qcow2_path).expanduser().resolve() if qcow2_path else None
        self.limits = limits or DesktopLimits.from_values()
        self.ram_size = ram_size or os.environ.get("RAM_SIZE") or (
            "4G" if osworld else f"{self.limits.memory_bytes // (1024 * 1024)}M")
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
        self._spare: Future[tuple[Any, str | None]] | None = None
        self._bg: ThreadPoolExecutor | None = None
        self._bg_client: Any = None  # the docker SDK's session is not shared across threads
        self._closed = False
        self._osworld_gateway: OSWorldGateway | None = None

    @classmethod
    def from_options(cls, opts: ProviderOptions, variant: str = "") -> DockerProvider:
        return cls(opts.docker_image, vm_path=opts.vm_path, run_id=opts.run_id,
                   worker=opts.worker_id, screen=opts.screen,
                   controller_pid=opts.controller_pid, limits=opts.limits)

    @classmethod
    def preflight(cls, opts: ProviderOptions, variant: str = "") -> list[str]:
        """Daemon reachable, image (and OSWorld's qcow2) present, KVM usable; containers left by
        dead runs are removed (see :meth:`check_host`)."""
        warnings = cls.from_options(opts).check_host()
        removed = sweep_dead_containers()
        if removed:
            warnings.append(f"removed {len(removed)} container(s) of dead runs: "
                            f"{', '.join(removed)}")
        return warnings

    # ----------------------------------------------------------------- public API
    def check_host(self) -> list[str]:
        """Check daemon, image, qcow2 and KVM; raise ``ConfigurationError``; return warnings."""
        return preflight(
            image=self.image, kind=self.kind, qcow2_path=self.qcow2_path, kvm=self.kvm,
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
        container, token = self._create()
        self._handle = self._activate(container, token)
        self._launch_spare()
        return self._handle

    def reset(self) -> DesktopHandle:
        """Replace the container by a pristine one (the pre-warmed spare when there is one)."""
        if self._handle is None:
            return self.start()
        t0 = time.monotonic()
        old = self._container
        self._container, self._handle = None, None
        if old is not None:
            self._background().submit(remove_by_id, self._bg_docker(), old.id)
        if self._spare is not None:
            spare, self._spare = self._spare, None
            try:
                container, token = spare.result(timeout=self.ready_timeout)
            except Exception as exc:  # noqa: BLE001 - the spare failing is not fatal
                log.warning("pre-warmed spare failed (%s); starting a fresh container", exc)
                container, token = self._create()
        else:
            container, token = self._create()
        self._handle = self._activate(container, token)
        self._launch_spare()
        log.info("docker reset in %.2fs (%s)", time.monotonic() - t0,
                 "spare" if self.prewarm else "cold")
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
        if spare is not None and spare.done() and spare.exception() is None:
            remove_quietly(spare.result()[0])
        remove_quietly(self._container)
        self._container, self._handle = None, None
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

    def _activate(self, container: Any, token: str | None) -> DesktopHandle:
        """Wait for ``container``'s server and build its handle (removing it on failure)."""
        self._container, self._token = container, token
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
            wait_until_ready(url, token, timeout=self.ready_timeout,
                             what=f"container {container.name} ({self.image})",
                             still_starting=lambda: exit_reason(container))
        except Exception:
            remove_quietly(container)
            self._container = None
            raise
        handle = DesktopHandle(
            url=url, token=token, display=":0" if self.kind == "guest-server" else None,
            guest_host=gateway, ports=named_ports(ports), provider="docker", image=self.image,
        )
        handle, self._osworld_gateway = with_gateway(handle, self._osworld_gateway)
        return handle

    def container_options(self, token: str | None = None) -> dict[str, Any]:
        """This image's ``containers.run`` options (ports, environment, devices, limits)."""
        if self.kind == "osworld":
            return osworld_options(qcow2_path=self.qcow2_path, ram_size=self.ram_size,
                                   cpu_cores=self.cpu_cores, disk_size=self.disk_size,
                                   kvm=self.kvm, cpus=self.cpus)
        return guest_server_options(token=token, screen=self.screen, ram_size=self.ram_size,
                                    cpus=self.cpus, limits=self.limits)

    def _create(self, client: Any = None, role: str = "active") -> tuple[Any, str | None]:
        """Create and start a container (does not wait for readiness)."""
        client = client or self._docker()
        token = secrets.token_urlsafe(24) if self.kind == "guest-server" else None
        kwargs: dict[str, Any] = dict(
            image=self.image, detach=True, init=True,
            labels=labels(run_id=self.run_id, worker=self.worker,
                          controller_pid=self.controller_pid, role=role),
            name=f"holo-{self.worker}-{os.getpid()}-{secrets.token_hex(3)}",
        )
        kwargs.update(self.container_options(token))
        try:
            container = run_container(client, kwargs)
        except Exception as exc:  # docker.errors.* : image missing, daemon gone, bad device
            raise VMStartError(f"could not start a container from {self.image}: {exc}") from exc
        log.info("started container %s (%s, worker %s)", container.name, role, self.worker)
        return container, token
