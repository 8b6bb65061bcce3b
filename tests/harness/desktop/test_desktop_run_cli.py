"""``python -m computer_env.desktop run``: a real desktop in the foreground, stopped by SIGTERM."""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.harness.helpers.suite import as_foreground

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(
        os.geteuid() != 0 or not shutil.which("bwrap"),
        reason="the local sandbox needs root and bubblewrap",
    ),
]

ANSWER_S = 60.0
"""How long the running desktop may take to answer (a full test run loads the host: once, the
first /screen_size took over 10 s there)."""


def _read_line(proc: subprocess.Popen[str], timeout: float) -> str:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, f"no JSON line within {timeout} s"
    return proc.stdout.readline()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_run_prints_one_json_line_and_stops_cleanly(sig: signal.Signals) -> None:
    proc = subprocess.Popen(
        as_foreground(
            [
                sys.executable,
                "-m",
                "computer_env.desktop",
                "run",
                "--width",
                "1024",
                "--height",
                "768",
                "--allow-port",
                "8765",
            ]
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        info = json.loads(_read_line(proc, 60))
        assert set(info) >= {"url", "token", "display"}
        headers = {"Authorization": f"Bearer {info['token']}"}
        # generous: the first screen answer opens the grabber, slow on a loaded host (not timed)
        resp = httpx.get(f"{info['url']}/platform", headers=headers, timeout=ANSWER_S)
        assert resp.status_code == 200
        size = httpx.post(f"{info['url']}/screen_size", headers=headers, timeout=ANSWER_S).json()
        assert (size["width"], size["height"]) == (1024, 768)
        # OSWorld's code is given osworld_url: no token there (host loopback only)
        assert info["osworld_url"].startswith("http://127.0.0.1:")
        assert set(info["osworld_ports"]) == {"server", "cdp", "vlc"}
        assert httpx.get(f"{info['osworld_url']}/platform", timeout=ANSWER_S).text == "Linux"
        assert httpx.get(f"{info['url']}/platform", timeout=ANSWER_S).status_code == 403
        netns_before = set(os.listdir("/run/netns"))
        proc.send_signal(sig)
        rc = proc.wait(timeout=20)
        out, err = proc.communicate()
        assert rc == 0, err
        assert out.strip() == ""  # nothing but the one line
        assert info["token"] not in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    ours = {n for n in netns_before if n.endswith(f"-{proc.pid}")}
    assert ours, netns_before
    assert not ours & set(os.listdir("/run/netns"))
    try:  # gone (or the address now belongs to another desktop, or routes elsewhere)
        status = httpx.get(f"{info['url']}/platform", headers=headers, timeout=2).status_code
    except httpx.TransportError:
        status = None
    assert status != 200
    assert not [p for p in Path("/proc").iterdir() if p.name.isdigit() and _ppid(p) == proc.pid]


def _ppid(p: Path) -> int:
    try:
        return int(p.joinpath("stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1
