"""Desktops in Docker containers: OSWorld's QEMU image or the project's guest-server image.

- ``kind="osworld"``: ``happysixd/osworld-docker`` booting the Ubuntu qcow2 (mounted read-only at
  ``/System.qcow2``) with QEMU; KVM when usable, software emulation (``KVM=N``, much slower)
  otherwise. The in-VM server has no auth (``token=None``).
- ``kind="guest-server"``: ``holo-bench/desktop:latest`` from ``docker/build-image.sh``: Xvfb +
  openbox + apps + ``computer_env.desktop.server`` with a per-container bearer token.

Ports are published on 127.0.0.1 with host ports chosen by Docker (no collisions between
xdist workers or concurrent runs). Reset replaces the container, as upstream; a pre-warmed spare
(already booting while the current task runs) makes that almost free. Every container carries
``holo-bench.*`` labels so that :func:`sweep_dead_containers` can remove what a killed run left.
"""

from __future__ import annotations

import atexit
import logging
import os
import secrets
import socket
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

from computer_env.desktop.gateway import OSWorldGateway, with_gateway
from computer_env.desktop.providers.base import DesktopHandle, DesktopProvider
from computer_env.desktop.providers.limits import (
    DesktopLimits,
    cgroup_breaches,
    parse_size,
    pid_cgroup_dirs,
    tmp_breach,
)
from computer_env.desktop.providers.ports import (
    named_ports,
    probe,
    published_ports,
    wait_until_ready,
)
from computer_env.errors import ConfigurationError, VMStartError

log = logging.getLogger(__name__)

ImageKind = Literal["osworld", "guest-server"]
LABEL_PREFIX = "holo-bench."
LABEL_RUN = "holo-bench.run"
LABEL_WORKER = "holo-bench.worker"
LABEL_PID = "holo-bench.controller-pid"
LABEL_CREATED = "holo-bench.created"
LABEL_HOST = "holo-bench.host"
LABEL_ROLE = "holo-bench.role"

DEFAULT_OSWORLD_IMAGE = "happysixd/osworld-docker"
DEFAULT_GUEST_SERVER_IMAGE = "holo-bench/desktop:latest"
_OSWORLD_PORTS = (5000, 9222, 8080, 8006)
_GUEST_SERVER_PORTS = (5000, 9222, 8080)  # server, Chrome DevTools, VLC (host loopback only)


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
        (OSWorld: 4G/4/32G; guest-server: 2 CPUs, memory from ``limits``, no disk). The
        guest-server container also gets ``limits``' process cap and /tmp size (default
        :meth:`DesktopLimits.from_values`: env ``HOLO_DESKTOP_*``). ``kvm=None`` detects
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
        self.cpu_cores = int(cpu_cores or os.environ.get("CPU_CORES") or (4 if osworld else 2))
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

    # ----------------------------------------------------------------- public API
    def preflight(self) -> list[str]:
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
            self._background().submit(_remove_by_id, self._bg_docker(), old.id)
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
            _remove_quietly(spare.result()[0])
        _remove_quietly(self._container)
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
            container.reload()
            attrs = container.attrs
            ports = published_ports(attrs["NetworkSettings"]["Ports"])
            if 5000 not in ports:
                raise VMStartError(f"container {container.short_id} has no published port 5000")
            url = f"http://127.0.0.1:{ports[5000]}"
            gateway = _gateway(attrs)
            wait_until_ready(url, token, timeout=self.ready_timeout,
                             what=f"container {container.name} ({self.image})",
                             still_starting=lambda: _exited(container))
        except Exception:
            _remove_quietly(container)
            self._container = None
            raise
        handle = DesktopHandle(
            url=url, token=token, display=":0" if self.kind == "guest-server" else None,
            guest_host=gateway, ports=named_ports(ports), provider="docker", image=self.image,
        )
        handle, self._osworld_gateway = with_gateway(handle, self._osworld_gateway)
        return handle

    def _create(self, client: Any = None, role: str = "active") -> tuple[Any, str | None]:
        """Create and start a container (does not wait for readiness)."""
        client = client or self._docker()
        token = secrets.token_urlsafe(24) if self.kind == "guest-server" else None
        labels = {
            LABEL_RUN: self.run_id, LABEL_WORKER: self.worker,
            LABEL_PID: str(self.controller_pid), LABEL_CREATED: f"{time.time():.3f}",
            LABEL_HOST: socket.gethostname(), LABEL_ROLE: role,
        }
        kwargs: dict[str, Any] = dict(
            image=self.image, detach=True, labels=labels, init=True,
            name=f"holo-{self.worker}-{os.getpid()}-{secrets.token_hex(3)}",
        )
        if self.kind == "osworld":
            kwargs.update(self._osworld_options())
        else:
            kwargs.update(
                ports={f"{p}/tcp": ("127.0.0.1", None) for p in _GUEST_SERVER_PORTS},
                environment={"DESKTOP_SERVER_TOKEN": token, "SCREEN_WIDTH": str(self.screen[0]),
                             "SCREEN_HEIGHT": str(self.screen[1])},
                mem_limit=(mem := parse_size(self.ram_size, "RAM_SIZE")),
                memswap_limit=mem,  # no swap beyond the memory limit
                pids_limit=self.limits.pids,
                tmpfs={"/tmp": f"size={self.limits.tmp_bytes},mode=1777"},
                nano_cpus=int(self.cpu_cores * 1e9), shm_size=self.limits.tmp_bytes,
            )
        try:
            container = client.containers.run(**kwargs)
        except Exception as exc:  # docker.errors.* : image missing, daemon gone, bad device
            raise VMStartError(f"could not start a container from {self.image}: {exc}") from exc
        log.info("started container %s (%s, worker %s)", container.name, role, self.worker)
        return container, token

    def _osworld_options(self) -> dict[str, Any]:
        if self.qcow2_path is None:
            raise VMStartError("kind='osworld' needs qcow2_path (the Ubuntu.qcow2 file)")
        env = {"DISK_SIZE": self.disk_size, "RAM_SIZE": self.ram_size,
               "CPU_CORES": str(self.cpu_cores)}
        devices = ["/dev/net/tun"]
        if self.kvm:
            devices.append("/dev/kvm")
        else:
            env["KVM"] = "N"
        return dict(
            environment=env, cap_add=["NET_ADMIN"], devices=devices,
            volumes={str(self.qcow2_path): {"bind": "/System.qcow2", "mode": "ro"}},
            ports={f"{p}/tcp": ("127.0.0.1", None) for p in _OSWORLD_PORTS},
        )


# --------------------------------------------------------------------- helpers
def _gateway(attrs: dict[str, Any]) -> str:
    """The address under which the guest reaches the host: the container network's gateway."""
    settings = attrs.get("NetworkSettings", {})
    for net in (settings.get("Networks") or {}).values():
        if net.get("Gateway"):
            return str(net["Gateway"])
    return str(settings.get("Gateway") or "172.17.0.1")


def _exited(container: Any) -> str | None:
    """None while ``container`` runs; else its status and last log lines."""
    try:
        container.reload()
    except Exception as exc:  # noqa: BLE001 - removed under us
        return f"container vanished ({exc})"
    if container.status in ("created", "running", "restarting"):
        return None
    try:
        tail = container.logs(tail=15).decode("utf-8", "replace").strip()
    except Exception:  # noqa: BLE001
        tail = ""
    return f"status {container.status}; last log lines:\n{tail}"


def _remove_by_id(client: Any, container_id: str) -> None:
    try:
        container = client.containers.get(container_id)
    except Exception:  # noqa: BLE001 - already gone
        return
    _remove_quietly(container)


def _remove_quietly(container: Any) -> None:
    if container is None:
        return
    try:
        container.remove(force=True, v=True)
        log.info("removed container %s", container.name)
    except Exception as exc:  # noqa: BLE001 - already gone is fine
        if "404" not in str(exc) and "No such container" not in str(exc):
            log.warning("could not remove container %s: %s", container.name, exc)



# --------------------------------------------------------------------- daemon, pre-flight, sweep
QCOW2_HELP = (
    "OSWorld's Ubuntu image comes from the Hugging Face dataset xlangai/ubuntu_osworld, file "
    "Ubuntu.qcow2.zip (12.3 GB zipped, 24.5 GB unzipped). Resumable download:\n"
    "  huggingface-cli download xlangai/ubuntu_osworld Ubuntu.qcow2.zip --repo-type dataset "
    "--local-dir ~/osworld-vm --resume-download\n"
    "  (or: wget -c https://huggingface.co/datasets/xlangai/ubuntu_osworld/resolve/main/"
    "Ubuntu.qcow2.zip)\n"
    "then: unzip Ubuntu.qcow2.zip and pass the path of Ubuntu.qcow2."
)
KVM_SLOWDOWN = (
    "without KVM, QEMU runs the Ubuntu VM under software emulation (KVM=N): boot takes 80 s or "
    "more instead of ~25 s and every step is several times slower"
)


def connect(docker_host: str | None = None, timeout: float = 30.0) -> Any:
    """A docker SDK client (``DOCKER_HOST`` honoured) that answered a ping, or ConfigurationError."""
    import docker  # lazy: only the docker provider needs the SDK

    where = docker_host or os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    try:
        client = (docker.DockerClient(base_url=docker_host, timeout=timeout) if docker_host
                  else docker.from_env(timeout=timeout))
        client.ping()
    except Exception as exc:  # DockerException, ConnectionError, FileNotFoundError...
        raise ConfigurationError(
            f"the Docker daemon at {where} is unreachable ({type(exc).__name__}).\n"
            "Start one (scripts/start-dockerd.sh, or `sudo systemctl start docker`), or point "
            "DOCKER_HOST at a running daemon (e.g. DOCKER_HOST=unix:///run/user/1000/docker.sock "
            "for rootless Docker; rootless Docker cannot pass /dev/kvm, so OSWorld's VM would run "
            "without KVM)."
        ) from exc
    return client


def kvm_usable() -> bool:
    """/dev/kvm exists and this process may open it read-write."""
    return Path("/dev/kvm").exists() and os.access("/dev/kvm", os.R_OK | os.W_OK)


def preflight(
    *,
    image: str,
    kind: ImageKind,
    qcow2_path: Path | None,
    kvm: bool,
    docker_host: str | None = None,
) -> list[str]:
    """Check what a run needs before any task starts.

    Raises ``ConfigurationError`` (missing qcow2, unreachable daemon, missing image); returns
    warnings (KVM unusable, rootless daemon) that are also logged.
    """
    warnings: list[str] = []
    if kind == "osworld":
        if qcow2_path is None or not qcow2_path.is_file():
            shown = qcow2_path if qcow2_path is not None else "(no path given)"
            raise ConfigurationError(f"the OSWorld VM image {shown} does not exist.\n{QCOW2_HELP}")
    client = connect(docker_host, timeout=10.0)
    try:
        info = client.info()
        rootless = any("rootless" in str(opt) for opt in info.get("SecurityOptions", []))
        if rootless and kind == "osworld":
            warnings.append("the Docker daemon is rootless: /dev/kvm cannot be passed; "
                            + KVM_SLOWDOWN)
        try:
            client.images.get(image)
        except Exception as exc:  # docker.errors.ImageNotFound
            if kind == "osworld":
                how = f"docker pull {image}"
            else:
                how = "docker/build-image.sh (builds it locally from Debian packages, ~minutes)"
            raise ConfigurationError(
                f"the Docker image {image} is not present on the daemon ({type(exc).__name__}).\n"
                f"Get it with: {how}"
            ) from exc
    finally:
        client.close()
    if kind == "osworld" and not kvm:
        warnings.append(f"KVM is not usable here (/dev/kvm missing, not accessible, or KVM=N): "
                        f"{KVM_SLOWDOWN}")
    for warning in warnings:
        log.warning("docker pre-flight: %s", warning)
    return warnings


def _pid_alive(pid: int, created: float | None) -> bool:
    """Is ``pid`` a live process that is at least as old as the container (no pid reuse)?"""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if created is None:
        return True
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        start_ticks = int(fields[19])
        btime = next(int(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                     if line.startswith("btime "))
        started = btime + start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return True
    return started <= created + 1.0  # a process started after the container reused the pid


def sweep_dead_containers(docker_host: str | None = None) -> list[str]:
    """Remove this host's holo-bench containers whose controller process is gone.

    Call at session start (on the xdist controller). Returns and logs the removed names.
    """
    client = connect(docker_host, timeout=30.0)
    removed: list[str] = []
    try:
        host = socket.gethostname()
        for container in client.containers.list(all=True, filters={"label": LABEL_PID}):
            labels = container.labels
            if labels.get(LABEL_HOST, host) != host:
                continue  # another machine's container on a shared daemon
            try:
                pid = int(labels[LABEL_PID])
                created = float(labels[LABEL_CREATED]) if LABEL_CREATED in labels else None
            except (KeyError, ValueError):
                continue
            if _pid_alive(pid, created):
                continue
            _remove_quietly(container)
            removed.append(container.name)
            log.warning("swept container %s (run %s, worker %s): controller pid %d is dead",
                        container.name, labels.get(LABEL_RUN), labels.get(LABEL_WORKER), pid)
    finally:
        client.close()
    return removed
