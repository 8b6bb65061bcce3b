"""Chrome/Chromium state through its DevTools HTTP endpoint, queried from INSIDE the desktop.

The remote-debugging port (9222) is not published to the host on the local desktop, so every
query runs ``curl`` in the guest through the desktop server's ``/execute``.
"""

from __future__ import annotations

import json
import logging
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

if TYPE_CHECKING:
    from computer_env.desktop.client import DesktopClient

logger = logging.getLogger(__name__)

CDP_PORT = 9222
_URL_SAFE = ":/?&=%#@+,;~!$'()*[]"


class CDPUnavailable(ConnectionError):
    """Chrome's DevTools endpoint did not answer inside the desktop (Chrome not running?)."""


def cdp_request(client: DesktopClient, path: str, *, method: str = "GET",
                port: int = CDP_PORT, timeout: float = 5.0) -> Any:
    """One DevTools HTTP request from inside the desktop; the decoded JSON (or text)."""
    url = f"http://127.0.0.1:{port}{path}"
    cmd = ["curl", "-s", "-f", "--noproxy", "*", "--max-time", f"{timeout:g}", "-X", method, url]
    res = client.execute(cmd, timeout=timeout + 10)
    if res.returncode != 0:
        raise CDPUnavailable(f"DevTools endpoint {url} did not answer inside the desktop "
                             f"(curl exit {res.returncode}: {(res.error or '').strip()[:200]})")
    text = res.output or ""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def wait_for_cdp(client: DesktopClient, *, timeout: float = 30.0, port: int = CDP_PORT) -> dict:
    """Wait until Chrome's DevTools endpoint answers inside the desktop; its /json/version."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            version = cdp_request(client, "/json/version", port=port, timeout=2.0)
            if isinstance(version, dict):
                return version
        except CDPUnavailable as exc:
            last = exc
        time.sleep(0.3)
    raise CDPUnavailable(f"gave up after {timeout:g} s waiting for Chrome's DevTools endpoint "
                         f"on port {port} inside the desktop ({last})")


def list_tabs(client: DesktopClient, *, port: int = CDP_PORT) -> list[dict[str, Any]]:
    """Open tabs (``type == "page"``), most recently active first (Chrome's own order)."""
    targets = cdp_request(client, "/json/list", port=port)
    if not isinstance(targets, list):
        raise CDPUnavailable(f"unexpected /json/list answer: {str(targets)[:200]}")
    return [t for t in targets if t.get("type") == "page"]


def open_tab(client: DesktopClient, url: str, *, port: int = CDP_PORT) -> dict[str, Any]:
    """Open ``url`` in a new tab; the new target."""
    target = cdp_request(client, f"/json/new?{quote(url, safe=_URL_SAFE)}", method="PUT",
                         port=port)
    if not isinstance(target, dict):
        raise CDPUnavailable(f"unexpected /json/new answer: {str(target)[:200]}")
    return target


def close_tab(client: DesktopClient, target_id: str, *, port: int = CDP_PORT) -> None:
    """Close one tab by target id."""
    cdp_request(client, f"/json/close/{target_id}", port=port)


def activate_tab(client: DesktopClient, target_id: str, *, port: int = CDP_PORT) -> None:
    """Bring one tab to the front."""
    cdp_request(client, f"/json/activate/{target_id}", port=port)


__all__ = [
    "CDPUnavailable", "CDP_PORT", "activate_tab", "cdp_request", "close_tab", "list_tabs",
    "open_tab", "wait_for_cdp",
]
