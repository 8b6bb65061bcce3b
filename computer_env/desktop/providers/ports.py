"""Reaching a guest server from the host: published ports and readiness probes.

Shared by the docker and remote providers. Readiness is polling the server itself (``GET
/screenshot`` as upstream does, or the cheaper ``GET /platform`` for liveness), never a fixed sleep.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx

from computer_env.errors import VMStartError
from computer_env.readiness import NotReady, NotYet, wait_until

#: Names of the guest ports a handle exposes, by container port (OSWorld's docker layout).
GUEST_PORT_NAMES: dict[int, str] = {5000: "server", 9222: "cdp", 8080: "vlc", 8006: "vnc"}


def auth_headers(token: str | None) -> dict[str, str]:
    """The bearer header of the project's guest server (nothing for an upstream OSWorld VM)."""
    return {"Authorization": f"Bearer {token}"} if token else {}


def published_ports(port_map: Mapping[str, Any] | None) -> dict[int, int]:
    """Host port per container port from Docker's ``NetworkSettings.Ports``.

    ``{"5000/tcp": [{"HostIp": "127.0.0.1", "HostPort": "49153"}], "8006/tcp": None}`` gives
    ``{5000: 49153}``; unpublished ports are left out.
    """
    result: dict[int, int] = {}
    for key, bindings in (port_map or {}).items():
        if not bindings:
            continue
        container_port = int(str(key).split("/", 1)[0])
        result[container_port] = int(bindings[0]["HostPort"])
    return result


def named_ports(by_container_port: Mapping[int, int]) -> dict[str, int]:
    """``{5000: 49153, 9222: 49154}`` -> ``{"server": 49153, "cdp": 49154}``."""
    return {GUEST_PORT_NAMES.get(port, str(port)): host for port, host in by_container_port.items()}


def probe(url: str, token: str | None, path: str = "/platform", timeout: float = 5.0) -> bool:
    """One request to the guest server: True when it answers 200 (with a body)."""
    try:
        response = httpx.get(url.rstrip("/") + path, headers=auth_headers(token), timeout=timeout)
    except httpx.HTTPError:
        return False
    return response.status_code == 200 and bool(response.content)


def wait_until_ready(
    url: str,
    token: str | None,
    *,
    timeout: float,
    what: str,
    interval: float = 0.25,
    max_interval: float = 2.0,
    still_starting: Callable[[], str | None] | None = None,
) -> float:
    """Poll ``GET /screenshot`` until it returns an image; return the seconds waited.

    ``still_starting`` is asked between polls: a string return means the guest is gone (e.g. the
    container exited) and is raised at once instead of waiting out the timeout.
    Raises :class:`VMStartError` naming ``what`` and the last problem seen.
    """
    start = time.monotonic()
    deadline = start + timeout

    def screenshot() -> bool:
        response = httpx.get(
            url.rstrip("/") + "/screenshot",
            headers=auth_headers(token),
            timeout=min(10.0, max(1.0, deadline - time.monotonic())),
        )
        if response.status_code == 200 and response.content:
            return True
        if response.status_code in (401, 403):
            raise VMStartError(
                f"{what}: the server at {url} refused the token (HTTP "
                f"{response.status_code}); is another server on that port?"
            )
        raise NotYet(f"GET /screenshot answered {response.status_code}")

    try:
        wait_until(
            screenshot,
            timeout_s=timeout,
            what=what,
            interval_s=interval,
            max_interval_s=max_interval,
            gone=still_starting,
            retry_on=(httpx.HTTPError,),
        )
    except NotReady as exc:
        if exc.gone is not None:
            raise VMStartError(f"{what} stopped before its server answered: {exc.gone}") from None
        raise VMStartError(
            f"{what}: the server at {url} did not return a screenshot within "
            f"{timeout:.0f}s (last: {exc.last})"
        ) from None
    return time.monotonic() - start
