"""The harness tests' way to a real local sandbox desktop: start one, run a shell command in it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from computer_env.desktop.providers.base import DesktopHandle
from computer_env.desktop.providers.local import ownership
from computer_env.errors import ConfigurationError
from tests.harness.helpers.tiers import DESKTOP, needs

if TYPE_CHECKING:
    from computer_env.desktop.providers.local.provider import LocalSandboxProvider


@needs(DESKTOP)
@contextmanager
def local_desktop(
    *,
    width: int = 1920,
    height: int = 1080,
    allow_ports: Iterable[int] = (),
    skip_unavailable: bool = False,
) -> Iterator[LocalSandboxProvider]:
    """A started :class:`LocalSandboxProvider` that may reach ``allow_ports`` on the host, closed
    on exit. With ``skip_unavailable`` a machine that cannot start one skips the test (saying
    why) instead of failing it."""
    from computer_env.desktop.providers.local.provider import LocalSandboxProvider

    provider = LocalSandboxProvider(width=width, height=height)
    try:
        for port in allow_ports:
            provider.allow_host_port(port)
        try:
            provider.start()
        except ConfigurationError as exc:
            if not skip_unavailable:
                raise
            pytest.skip(f"no local desktop here: {exc}")
        yield provider
    finally:
        provider.close()


def own_run() -> tuple[ownership.Run, dict[str, str]]:
    """A run of the test's own (owned by this process, so alive while the test runs) and the
    environment that hands it to a child. What the child's desktops leave then carries this run
    only: no other test's desktop or run end removes it (another run lives), the test's own
    sweep (``ownership.Sweeper(run)``) does, so what that sweep finds is exactly its own."""
    run = ownership.new_run()
    ownership.record(run)
    return run, {ownership.RUN_ENV: run.encode()}


def guest_sh(handle: DesktopHandle, command: str, timeout: float = 120.0) -> dict[str, Any]:
    """Run a shell command inside the desktop through the OSWorld /execute endpoint."""
    with httpx.Client(
        base_url=handle.url, headers={"Authorization": f"Bearer {handle.token}"}, timeout=timeout
    ) as c:
        resp = c.post("/execute", json={"command": command, "shell": True})
    assert resp.status_code == 200, resp.text
    answer: dict[str, Any] = resp.json()
    return answer
