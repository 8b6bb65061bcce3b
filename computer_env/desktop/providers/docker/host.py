"""The Docker host of the docker provider: the daemon connection, KVM, and the pre-flight check
that a run has what it needs (daemon, image, OSWorld's qcow2) before any task starts."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Literal

from computer_env.errors import ConfigurationError

log = logging.getLogger(__name__)

ImageKind = Literal["osworld", "guest-server"]

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
        client = (
            docker.DockerClient(base_url=docker_host, timeout=timeout)
            if docker_host
            else docker.from_env(timeout=timeout)
        )
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


def docker_errors() -> tuple[type[Exception], ...]:
    """What the docker SDK raises when the daemon fails a request (the environment's fault)."""
    import docker.errors
    import requests

    return docker.errors.DockerException, requests.RequestException


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
            warnings.append(
                "the Docker daemon is rootless: /dev/kvm cannot be passed; " + KVM_SLOWDOWN
            )
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
        warnings.append(
            f"KVM is not usable here (/dev/kvm missing, not accessible, or KVM=N): {KVM_SLOWDOWN}"
        )
    for warning in warnings:
        log.warning("docker pre-flight: %s", warning)
    return warnings
