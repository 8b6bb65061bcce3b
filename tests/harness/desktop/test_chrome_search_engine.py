"""The embedded desktop's browser searches with Google, as OSWorld's Chrome does (Debian's
Chromium would use DuckDuckGo): a query typed into the omnibox of the real ``google-chrome``
(Chromium) in a real local desktop navigates to a google.com search. The desktop has no
internet, so the URL Chrome tried is read from its DevTools target list (through the
desktop's gateway)."""

from __future__ import annotations

import os
import shutil
from urllib.parse import urlsplit

import httpx
import pytest

from computer_env.desktop.client import DesktopClient
from tests.harness.helpers.localdesk import local_desktop
from tests.harness.helpers.polling import wait_for

QUERY = "holo bench query"


def _page_urls(cdp: str) -> list[str]:
    try:
        targets = httpx.get(f"{cdp}/json", timeout=5.0).json()
    except (httpx.HTTPError, ValueError):
        return []
    return [t.get("url", "") for t in targets if t.get("type") == "page"]


@pytest.mark.desktop
@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("bwrap"),
    reason="the local sandbox needs root and bubblewrap",
)
def test_omnibox_query_goes_to_google() -> None:
    with local_desktop(width=1024, height=768) as provider:
        handle = provider.handle
        client = DesktopClient.from_handle(handle)
        client.launch(["google-chrome", "--remote-debugging-port=1337", "about:blank"])
        client.launch(["socat", "tcp-listen:9222,fork", "tcp:localhost:1337"])
        cdp = f"http://{urlsplit(handle.osworld_url).hostname}:{handle.osworld_ports['cdp']}"
        wait_for(
            lambda: "about:blank" in _page_urls(cdp), "Chrome's DevTools", timeout=120, interval=0.5
        )
        wait_for(
            lambda: "Google Chrome" in (client.execute(["wmctrl", "-l"]).output or ""),
            "Chrome's window",
            timeout=60,
            interval=0.5,
        )
        typed = client.execute(
            [
                "sh",
                "-c",
                "wmctrl -a 'Google Chrome' && sleep 0.5 && "
                "xdotool key --clearmodifiers ctrl+l && sleep 0.3 && "
                f"xdotool type --delay 20 '{QUERY}' && xdotool key Return",
            ],
            timeout=60,
        )
        assert typed.returncode == 0, typed.error
        urls = wait_for(
            lambda: [u for u in _page_urls(cdp) if u and u != "about:blank"] or None,
            "the omnibox query to navigate",
            timeout=30,
            interval=0.5,
        )
        assert urls[0].startswith("https://www.google.com/search?q=holo+bench+query"), urls
