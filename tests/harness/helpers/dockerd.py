"""A reachable Docker daemon with the project's guest-server image, for the tests that need
one (``docker_client``: started by scripts/start-dockerd.sh when run as root, else a skip that
says what is missing; the image is never built here: docker/build-image.sh)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from computer_env.desktop.providers.docker.provider import DEFAULT_GUEST_SERVER_IMAGE
from tests.harness.helpers.tiers import E2E, needs

ROOT = Path(__file__).resolve().parents[3]
IMAGE = os.environ.get("HOLO_DESKTOP_IMAGE", DEFAULT_GUEST_SERVER_IMAGE)


def _client() -> Any:
    import docker

    client = docker.from_env(timeout=30)
    client.ping()
    return client


@pytest.fixture(scope="module")
@needs(E2E, "docker")
def docker_client() -> Iterator[Any]:
    """A reachable daemon with the guest-server image, or a skip that says what is missing."""
    try:
        client = _client()
    except Exception:
        if os.geteuid() != 0:
            pytest.skip("no Docker daemon answers and starting one needs root")
        run = subprocess.run(
            ["bash", str(ROOT / "scripts" / "start-dockerd.sh")],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if run.returncode != 0:
            pytest.skip(f"could not start dockerd: {run.stderr.strip()[-300:]}")
        client = _client()
    try:
        client.images.get(IMAGE)
    except Exception:
        client.close()
        pytest.skip(f"image {IMAGE} absent: build it once with docker/build-image.sh")
    yield client
    client.close()
