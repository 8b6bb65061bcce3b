"""The docker provider's containers: what they run with (ports, limits, devices, the
``holo-bench.*`` labels), what an exited one says, how they are removed, and the sweep of
containers whose owner died (the run's controller, or the process that made the container)."""

from __future__ import annotations

import logging
import os
import socket
import time
from pathlib import Path
from typing import Any

from computer_env.desktop.providers.docker.host import connect
from computer_env.desktop.providers.docker.seccomp import UNMASKED_PROC, security_options
from computer_env.desktop.providers.limits import DesktopLimits, parse_size
from computer_env.errors import VMStartError
from computer_env.procs import running_since

log = logging.getLogger(__name__)

LABEL_PREFIX = "holo-bench."
LABEL_RUN = "holo-bench.run"
LABEL_WORKER = "holo-bench.worker"
LABEL_PID = "holo-bench.controller-pid"
LABEL_CREATED = "holo-bench.created"
LABEL_HOST = "holo-bench.host"
LABEL_ROLE = "holo-bench.role"
LABEL_OWNER = "holo-bench.owner-pid"
LABEL_NET = "holo-bench.desktop-net"
LABEL_CHAINS = "holo-bench.chains"

OSWORLD_PORTS = (5000, 9222, 8080, 8006)
GUEST_SERVER_PORTS = (5000, 9222, 8080)  # server, Chrome DevTools, VLC (host loopback only)


def labels(*, run_id: str, worker: str, controller_pid: int, role: str) -> dict[str, str]:
    """The labels that let :func:`sweep_dead_containers` tell whose container (or desktop
    network) it is: the run, its controller and the process making it (the owner)."""
    return {
        LABEL_RUN: run_id,
        LABEL_WORKER: worker,
        LABEL_PID: str(controller_pid),
        LABEL_OWNER: str(os.getpid()),
        LABEL_CREATED: f"{time.time():.3f}",
        LABEL_HOST: socket.gethostname(),
        LABEL_ROLE: role,
    }


def alive(labels: dict[str, str], key: str) -> bool:
    """Is the process that label ``key`` names alive (and no younger than the resource, by
    ``holo-bench.created``)? A missing or unreadable pid counts as alive: nothing is removed
    on a guess."""
    try:
        pid = int(labels[key])
    except (KeyError, ValueError):
        return True
    try:
        created: float | None = float(labels[LABEL_CREATED])
    except (KeyError, ValueError):
        created = None
    return running_since(pid, created)


def owner_gone(labels: dict[str, str]) -> bool:
    """A resource whose run's controller or whose owner (the process that made it) is gone:
    nobody will use it again."""
    return LABEL_PID in labels and not (alive(labels, LABEL_PID) and alive(labels, LABEL_OWNER))


def here(labels: dict[str, str]) -> bool:
    """Made on this host (a daemon may be shared by several machines)."""
    return labels.get(LABEL_HOST, socket.gethostname()) == socket.gethostname()


def _loopback(ports: tuple[int, ...]) -> dict[str, tuple[str, None]]:
    return {f"{p}/tcp": ("127.0.0.1", None) for p in ports}  # host ports chosen by Docker


def guest_server_options(
    *, token: str | None, screen: tuple[int, int], ram_size: str, cpus: float, limits: DesktopLimits
) -> dict[str, Any]:
    """``containers.run`` options of the project's guest-server image: token, screen, caps
    (``cpus``: CPU time, Docker's ``--cpus``)."""
    mem = parse_size(ram_size, "RAM_SIZE")
    return dict(
        ports=_loopback(GUEST_SERVER_PORTS),
        environment={
            "DESKTOP_SERVER_TOKEN": token,
            "SCREEN_WIDTH": str(screen[0]),
            "SCREEN_HEIGHT": str(screen[1]),
        },
        mem_limit=mem,
        memswap_limit=mem,  # no swap beyond the memory limit
        pids_limit=limits.pids,
        tmpfs={"/tmp": f"size={limits.tmp_bytes},mode=1777"},
        nano_cpus=round(cpus * 1e9),
        shm_size=limits.tmp_bytes,
        # the entrypoint starts as root to make the nest, then runs Xvfb, the session and the
        # server as `user` (docker/seccomp.py: why the profile and the unmasked /proc)
        user="root",
        security_opt=security_options(),
        **{UNMASKED_PROC: True},
    )


def osworld_options(
    *,
    qcow2_path: Path | None,
    ram_size: str,
    cpu_cores: int,
    disk_size: str,
    kvm: bool,
    cpus: float | None = None,
) -> dict[str, Any]:
    """``containers.run`` options of OSWorld's QEMU image booting ``qcow2_path`` (``cpu_cores``
    vCPUs; the container's CPU time capped at ``cpus``, Docker's ``--cpus``, when given)."""
    if qcow2_path is None:
        raise VMStartError("kind='osworld' needs qcow2_path (the Ubuntu.qcow2 file)")
    env = {"DISK_SIZE": disk_size, "RAM_SIZE": ram_size, "CPU_CORES": str(cpu_cores)}
    devices = ["/dev/net/tun"]
    if kvm:
        devices.append("/dev/kvm")
    else:
        env["KVM"] = "N"
    return dict(
        environment=env,
        cap_add=["NET_ADMIN"],
        devices=devices,
        volumes={str(qcow2_path): {"bind": "/System.qcow2", "mode": "ro"}},
        ports=_loopback(OSWORLD_PORTS),
        **({"nano_cpus": round(cpus * 1e9)} if cpus else {}),
    )


def gateway_address(attrs: dict[str, Any]) -> str:
    """The address under which the guest reaches the host: the container network's gateway."""
    settings = attrs.get("NetworkSettings", {})
    for net in (settings.get("Networks") or {}).values():
        if net.get("Gateway"):
            return str(net["Gateway"])
    return str(settings.get("Gateway") or "172.17.0.1")


def exit_reason(container: Any) -> str | None:
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


def remove_by_id(client: Any, container_id: str) -> None:
    """Remove a container by id (nothing when it is already gone)."""
    try:
        container = client.containers.get(container_id)
    except Exception:  # noqa: BLE001 - already gone
        return
    remove_quietly(container)


def remove_quietly(container: Any) -> None:
    """Force-remove ``container`` with its volumes; a failure is logged, never raised."""
    if container is None:
        return
    try:
        container.remove(force=True, v=True)
        log.info("removed container %s", container.name)
    except Exception as exc:  # noqa: BLE001 - already gone is fine
        if "404" not in str(exc) and "No such container" not in str(exc):
            log.warning("could not remove container %s: %s", container.name, exc)


def sweep_dead_containers(docker_host: str | None = None, client: Any = None) -> list[str]:
    """Remove this host's holo-bench containers whose run's controller or whose owner process
    is gone (a pid reused after the container was made is not the one that made it).

    Called before a run (on the xdist controller); a live run's containers are never touched.
    Returns and logs the removed names.
    """
    own = client is None
    client = client or connect(docker_host, timeout=30.0)
    removed: list[str] = []
    try:
        for container in client.containers.list(
            all=True, filters={"label": LABEL_PID}, ignore_removed=True
        ):
            labels = container.labels
            if not here(labels) or not owner_gone(labels):
                continue  # another machine's container on a shared daemon, or a live one
            remove_quietly(container)
            removed.append(container.name)
            log.warning(
                "swept container %s (run %s, worker %s): controller pid %s or owner pid %s is gone",
                container.name,
                labels.get(LABEL_RUN),
                labels.get(LABEL_WORKER),
                labels.get(LABEL_PID),
                labels.get(LABEL_OWNER),
            )
    finally:
        if own:
            client.close()
    return removed


def sweep_run_containers(client: Any, run_id: str, controller_pid: int) -> list[str]:
    """Remove the containers of run ``run_id`` under controller ``controller_pid`` whose owner
    is gone (at the run's end: every worker has closed its own)."""
    removed: list[str] = []
    wanted = [f"{LABEL_RUN}={run_id}", f"{LABEL_PID}={controller_pid}"]
    for container in client.containers.list(
        all=True, filters={"label": wanted}, ignore_removed=True
    ):
        if here(container.labels) and not alive(container.labels, LABEL_OWNER):
            remove_quietly(container)
            removed.append(container.name)
            log.warning(
                "swept container %s of this run: its owner pid %s is gone",
                container.name,
                container.labels.get(LABEL_OWNER),
            )
    return removed
