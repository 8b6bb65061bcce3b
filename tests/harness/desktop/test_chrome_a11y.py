"""OSWorld's own active-tab getters on a real local desktop: the ``google-chrome`` that tasks
launch (Chromium under Chrome's name) is the accessibility application "Google Chrome", as on
OSWorld's image, so ``get_active_url_from_accessTree`` and ``get_active_tab_info`` find its
address bar; a ``chromium`` started under its own name keeps the name "Chromium"."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.harness.helpers.localdesk import guest_sh, local_desktop
from tests.harness.helpers.polling import wait_for

needs_desktop = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("bwrap"),
    reason="the local sandbox needs root and bubblewrap",
)

PAGE = "/home/user/pages/hello.html"
PLAIN_PAGE = "/home/user/pages/plain.html"
_APP = re.compile(r'<application name="([^"]*)"')
_ADDRESS = re.compile(r'<entry name="Address and search bar"[^>]*>([^<]*)<')


@pytest.fixture(scope="module")
def env() -> Iterator[Any]:
    """A desktop with OSWorld's Chrome setup (google-chrome on 1337, socat 9222 -> 1337, run by
    OSWorld's SetupController) showing a file:// page, plus a plain ``chromium`` showing another;
    yields the ``env`` OSWorld's getters read (its PythonController and CDP address)."""
    from computer_env.osworld.upstream.loader import (
        upstream_python_controller,
        upstream_setup_module,
    )

    with local_desktop(width=1280, height=720) as provider:
        handle = provider.handle
        parts = urlsplit(handle.osworld_url)
        host, port = parts.hostname, parts.port
        guest_sh(
            handle,
            "mkdir -p ~/pages && "
            "echo '<html><head><title>Hello page</title></head><body>hi</body></html>' "
            f"> {PAGE} && echo '<title>Plain</title>' > {PLAIN_PAGE}",
        )
        setup = upstream_setup_module().SetupController(
            vm_ip=host,
            server_port=port,
            chromium_port=handle.osworld_ports["cdp"],
            vlc_port=handle.osworld_ports["vlc"],
            cache_dir="/nonexistent",
            client_password="password",
            screen_width=1280,
            screen_height=720,
        )
        assert (
            setup.setup(
                [
                    {
                        "type": "launch",
                        "parameters": {
                            "command": [
                                "google-chrome",
                                "--remote-debugging-port=1337",
                                f"file://{PAGE}",
                            ]
                        },
                    },
                    {
                        "type": "launch",
                        "parameters": {
                            "command": ["socat", "tcp-listen:9222,fork", "tcp:localhost:1337"]
                        },
                    },
                    {
                        "type": "launch",
                        "parameters": {
                            "command": [
                                "chromium",
                                "--user-data-dir=/tmp/plain-chromium",
                                f"file://{PLAIN_PAGE}",
                            ]
                        },
                    },
                ]
            )
            is True
        )
        controller = upstream_python_controller()(vm_ip=host, server_port=port)
        yield SimpleNamespace(
            controller=controller,
            vm_ip=host,
            handle=handle,
            chromium_port=handle.osworld_ports["cdp"],
        )


def _both_browsers_shown(env: Any) -> str | None:
    tree = env.controller.get_accessibility_tree() or ""
    shown = _ADDRESS.findall(tree)
    return tree if PAGE in shown and PLAIN_PAGE in shown else None


@pytest.mark.desktop
@needs_desktop
def test_google_chrome_is_named_google_chrome_and_chromium_keeps_its_name(env: Any) -> None:
    tree = wait_for(
        lambda: _both_browsers_shown(env),
        "both browsers' address bars in the accessibility tree",
        timeout=180,
        interval=2,
    )
    names = _APP.findall(tree)
    assert names.count("Google Chrome") == 1 and names.count("Chromium") == 1, names
    chrome_part = tree.split('<application name="Google Chrome"', 1)[1].split("<application ", 1)[0]
    assert PAGE in _ADDRESS.findall(chrome_part) and PLAIN_PAGE not in chrome_part


@pytest.mark.desktop
@needs_desktop
def test_osworld_getters_read_the_active_tab_of_google_chrome(env: Any) -> None:
    from computer_env.osworld.upstream.loader import upstream_getters

    wait_for(
        lambda: _both_browsers_shown(env),
        "both browsers' address bars in the accessibility tree",
        timeout=180,
        interval=2,
    )
    getters = upstream_getters()
    assert (
        getters.get_active_url_from_accessTree(env, {"goto_prefix": "file://"}) == f"file://{PAGE}"
    )
    wait_for(
        lambda: (
            '"Browser"'
            in guest_sh(env.handle, "curl -s -m 2 http://127.0.0.1:9222/json/version")["output"]
        ),
        "Chrome's debugging port through socat on 9222",
        timeout=60,
        interval=1,
    )
    info = getters.get_active_tab_info(env, {"goto_prefix": "file://"})
    assert info is not None, "get_active_tab_info found no page over Chrome's debugging port"
    assert info["url"] == f"file://{PAGE}" and info["title"] == "Hello page", info


def test_embedded_desktop_skips_these_getters_only_where_osworld_wants_chromium(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """OSWorld's getter looks for "Chromium" when the evaluating machine's ``platform.machine()``
    contains "arm"; the embedded desktop names its google-chrome "Google Chrome", so there the
    task is skipped (on this machine too, with ``platform.machine`` answering as on such a one)."""
    from computer_env.osworld.catalog.tasks import parse_task
    from computer_env.osworld.errors import EvaluatorUnsupported
    from computer_env.osworld.scoring.in_process import (
        ensure_supported_in_process as ensure_supported,
    )

    task = parse_task(
        {
            "id": "t1",
            "instruction": "test",
            "evaluator": {
                "func": "is_expected_active_tab",
                "result": {"type": "active_url_from_accessTree", "goto_prefix": "https://www."},
                "expected": {"type": "rule", "rules": {"type": "url", "url": "https://www.x.org/"}},
            },
        },
        domain="chrome",
    )
    embedded = SimpleNamespace(embedded=True)
    monkeypatch.setattr("platform.machine", lambda: "x86_64")
    ensure_supported(task, embedded)  # type: ignore[arg-type]
    monkeypatch.setattr("platform.machine", lambda: "arm64")
    ensure_supported(task, SimpleNamespace(embedded=False))  # type: ignore[arg-type]
    with pytest.raises(EvaluatorUnsupported, match="'Chromium'"):
        ensure_supported(task, embedded)  # type: ignore[arg-type]
