"""OSWorld's own controllers drive a real local desktop through its ``osworld_url`` (no token,
unchanged OSWorld code from the installed package), and nothing inside the desktop can reach
that address: the token stays required on every address an agent could reach."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from computer_env.desktop.client import DesktopClient
from tests.harness.helpers.localdesk import local_desktop
from tests.harness.helpers.polling import wait_for

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(
        os.geteuid() != 0 or not shutil.which("bwrap"),
        reason="the local sandbox needs root and bubblewrap",
    ),
]


@pytest.fixture(scope="module")
def desktop() -> Iterator[Any]:
    with local_desktop(width=1280, height=720) as provider:
        yield provider


def _osworld_addr(handle: Any) -> tuple[str, int]:
    parts = urlsplit(handle.osworld_url)
    assert parts.hostname == "127.0.0.1" and parts.port == handle.osworld_ports["server"]
    return parts.hostname, parts.port


def test_python_and_setup_controllers_drive_the_desktop(desktop: Any, tmp_path: Any) -> None:
    from computer_env.osworld.upstream.loader import (
        upstream_python_controller,
        upstream_setup_module,
    )

    host, port = _osworld_addr(desktop.handle)
    controller = upstream_python_controller()(vm_ip=host, server_port=port)
    assert controller.get_vm_platform() == "Linux"
    assert controller.get_vm_screen_size() == {"width": 1280, "height": 720}
    shot = controller.get_screenshot()
    assert shot is not None and shot.startswith(b"\x89PNG")
    assert controller.execute_python_command("print(6 * 7)")["output"] == "42\n"
    assert controller.get_vm_wallpaper()  # a default wallpaper, as on OSWorld's VM
    assert controller.get_vm_desktop_path() == "/home/user/Desktop"

    setup = upstream_setup_module().SetupController(
        vm_ip=host,
        server_port=port,
        chromium_port=desktop.handle.osworld_ports["cdp"],
        vlc_port=desktop.handle.osworld_ports["vlc"],
        cache_dir=str(tmp_path),
        client_password="password",
        screen_width=1280,
        screen_height=720,
    )
    (tmp_path / "up.txt").write_text("uploaded by OSWorld's controller")
    assert (
        setup.setup(
            [
                {
                    "type": "upload_file",
                    "parameters": {
                        "files": [
                            {
                                "local_path": str(tmp_path / "up.txt"),
                                "path": "/home/user/Desktop/up.txt",
                            }
                        ]
                    },
                },
                {
                    "type": "execute",
                    "parameters": {
                        "command": "echo {SCREEN_WIDTH} > ~/w.txt",
                        "shell": True,
                        "stdout": "out.txt",
                    },
                },
                {"type": "launch", "parameters": {"command": ["xterm", "-T", "gateway-term"]}},
                {
                    "type": "execute",
                    "parameters": {
                        "command": ["wmctrl", "-l"],
                        "until": {"stdout": "gateway-term"},
                    },
                },
                {"type": "activate_window", "parameters": {"window_name": "gateway-term"}},
            ]
        )
        is True
    )
    assert controller.get_file("/home/user/Desktop/up.txt") == b"uploaded by OSWorld's controller"
    assert controller.get_file("/home/user/w.txt") == b"1280\n"
    size = controller.get_vm_window_size("xterm")
    assert size is not None and size["width"] > 0
    setup.setup([{"type": "close_window", "parameters": {"window_name": "gateway-term"}}])
    client = DesktopClient.from_handle(desktop.handle)
    wait_for(
        lambda: "gateway-term" not in client.execute(["wmctrl", "-l"]).output, "the xterm to close"
    )
    client.close()


def test_gateway_journal_shows_what_osworld_only_logs(desktop: Any) -> None:
    from computer_env.desktop.gateway import gateway_for

    gateway = gateway_for(desktop.handle)
    assert gateway.url == desktop.handle.osworld_url
    mark = gateway.journal.mark()
    httpx.post(
        gateway.url + "/setup/execute", json={"command": "exit 4", "shell": True}, timeout=30
    )
    entries = gateway.journal.since(mark)
    assert [(e.path, e.status) for e in entries] == [("/setup/execute", 200)]
    assert entries[0].response is not None and entries[0].response["returncode"] == 4


def test_nothing_inside_the_desktop_reaches_osworld_url(desktop: Any) -> None:
    """From inside the sandbox: the gateway's port is unreachable at the host's address and on
    the sandbox's own loopback, while the guest server still refuses requests without the
    token. On the host, a process of another user is refused by the gateway."""
    handle = desktop.handle
    client = DesktopClient.from_handle(handle)
    probe = (
        "import socket, sys, urllib.request, urllib.error\n"
        "out = []\n"
        f"for host in ({handle.guest_host!r}, '127.0.0.1'):\n"
        f"    for port in {sorted(handle.osworld_ports.values())!r}:\n"
        "        s = socket.socket(); s.settimeout(3)\n"
        "        try:\n"
        "            s.connect((host, port)); out.append(f'OPEN {host}:{port}')\n"
        "        except OSError:\n"
        "            out.append(f'closed {host}:{port}')\n"
        "        finally:\n"
        "            s.close()\n"
        "try:\n"
        "    urllib.request.urlopen('http://127.0.0.1:5000/platform', timeout=5)\n"
        "    out.append('server: OPEN without token')\n"
        "except urllib.error.HTTPError as e:\n"
        "    out.append(f'server: {e.code}')\n"
        "print(' '.join(out))\n"
    )
    res = client.execute(["python3", "-c", probe], timeout=60)
    client.close()
    assert res.returncode == 0, res.error
    assert "OPEN" not in res.output and res.output.count("closed") == 2 * len(
        handle.osworld_ports
    ), res.output
    assert "server: 403" in res.output

    # the host itself reaches it (that is what OSWorld's code uses)
    assert httpx.get(handle.osworld_url + "/platform", timeout=10).text == "Linux"
    # another host user does not (e.g. a proxy running as its own user relaying a request)
    if shutil.which("setpriv"):
        code = (
            "import urllib.request,sys\n"
            "try:\n"
            f"    urllib.request.urlopen({handle.osworld_url + '/platform'!r}, timeout=5)\n"
            "    print('OPEN')\n"
            "except Exception as e:\n"
            "    print('refused', type(e).__name__)\n"
        )
        other = subprocess.run(
            [
                "setpriv",
                "--reuid",
                "65534",
                "--regid",
                "65534",
                "--clear-groups",
                sys.executable,
                "-I",
                "-c",
                code,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert other.stdout.startswith("refused"), (other.stdout, other.stderr)
