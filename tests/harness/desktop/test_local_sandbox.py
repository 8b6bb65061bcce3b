"""The local sandbox provider with real bubblewrap desktops (Xvfb, openbox, the guest server).

Everything here is real: sandboxes, network namespaces, iptables rules, HTTP servers on the host.
"""

from __future__ import annotations

import http.server
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from computer_env.desktop.providers.base import DesktopHandle
from computer_env.desktop.providers.local import netns
from computer_env.desktop.providers.local.provider import LocalSandboxProvider
from computer_env.errors import ConfigurationError
from tests.harness.helpers.localdesk import local_desktop
from tests.harness.helpers.polling import wait_for

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(
        os.geteuid() != 0 or not shutil.which("bwrap"),
        reason="the local sandbox needs root and bubblewrap",
    ),
]


def _client(handle: DesktopHandle, token: str | None = "") -> httpx.Client:
    token = handle.token if token == "" else token
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=handle.url, headers=headers, timeout=60.0)


def sh(handle: DesktopHandle, command: str) -> dict:
    """Run a shell command inside the desktop through the OSWorld /execute endpoint."""
    with _client(handle) as c:
        resp = c.post("/execute", json={"command": command, "shell": True})
    assert resp.status_code == 200, resp.text
    return resp.json()


def _sandbox_uid(provider: LocalSandboxProvider) -> int:
    slot = provider._res.slot
    assert slot is not None
    return slot.sandbox_uid


@pytest.fixture(scope="module")
def desktop() -> Iterator[LocalSandboxProvider]:
    with local_desktop(width=1280, height=800) as provider:
        yield provider


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        body = b"hello from the host"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def host_servers() -> Iterator[tuple[int, int]]:
    """Two real HTTP servers on the host, on 0.0.0.0 (all addresses, the veth one included)."""
    servers = [http.server.ThreadingHTTPServer(("0.0.0.0", 0), _Hello) for _ in range(2)]
    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in servers]
    for t in threads:
        t.start()
    try:
        yield servers[0].server_address[1], servers[1].server_address[1]
    finally:
        for s in servers:
            s.shutdown()
            s.server_close()


def test_start_answers_with_token_only(desktop: LocalSandboxProvider) -> None:
    handle = desktop.handle
    assert handle is not None and handle.provider == "local" and handle.display == ":0"
    assert handle.guest_host != "127.0.0.1" and handle.token
    with _client(handle) as c:
        assert c.get("/platform").status_code == 200
    with _client(handle, token=None) as c:
        assert c.get("/platform").status_code == 403
    with _client(handle, token="wrong") as c:
        assert c.get("/platform").status_code == 403
    assert desktop.is_alive()
    size = sh(handle, "xdpyinfo | grep dimensions")["output"]
    assert "1280x800 pixels" in size


def test_isolation_from_inside(
    desktop: LocalSandboxProvider, host_servers: tuple[int, int]
) -> None:
    handle = desktop.handle
    assert handle is not None
    secret = Path("/root") / f".sandbox-probe-{secrets.token_hex(4)}"
    secret.write_text("host secret")
    try:
        out = sh(handle, f"cat {secret}; echo rc=$?; ls -A /root")
        assert "host secret" not in out["output"] and "rc=1" in out["output"]
        assert out["output"].split("rc=1", 1)[1].split() == [".pyenv"]
        assert sh(handle, "cat /etc/shadow")["returncode"] != 0
    finally:
        secret.unlink()
    # processes: only the sandbox's own (its pid namespace), the host test process invisible
    ps = sh(handle, "ps -e -o pid=,user=,args=")["output"]
    pids = [int(line.split()[0]) for line in ps.splitlines() if line.strip()]
    assert 1 in pids and len(pids) < 40, ps
    assert "pytest" not in ps and {line.split()[1] for line in ps.splitlines()} == {"user"}
    # identity and capabilities
    status = sh(handle, "id -u; id -g; grep -E '^Cap(Eff|Prm|Bnd)' /proc/self/status")["output"]
    lines = status.split()
    assert lines[:2] == ["1000", "1000"]
    assert lines[3] == lines[5] == "0000000000000000", status  # permitted, effective
    # the bounding set is the nest's user namespace's (full, see nest.py): no exec can use it,
    # every mount is nosuid (no setuid, no file capabilities)
    mounts = sh(handle, "awk '{print $6}' /proc/self/mountinfo")["output"].split()
    assert mounts and all("nosuid" in m for m in mounts), mounts
    # network: allowed host port reachable, another host port not
    allowed, blocked = host_servers
    desktop.allow_host_port(allowed)
    url = f"http://{handle.guest_host}"
    ok = sh(handle, f"curl -s -m 3 {url}:{allowed}/")
    assert ok["output"] == "hello from the host", ok
    denied = sh(handle, f"curl -s -m 2 {url}:{blocked}/; echo rc=$?")
    assert "hello" not in denied["output"] and "rc=0" not in denied["output"], denied
    # the same blocked server answers the host itself (it is the firewall that stops the sandbox)
    assert httpx.get(f"http://127.0.0.1:{blocked}/").text == "hello from the host"


def test_reset_discards_changes(desktop: LocalSandboxProvider) -> None:
    handle = desktop.handle
    assert handle is not None
    sh(handle, "echo changed > ~/Desktop/marker.txt && echo x > ~/.marker")
    with _client(handle) as c:
        c.post("/setup/launch", json={"command": ["xterm", "-title", "probe-window"]})
    wait_for(lambda: "probe-window" in sh(handle, "wmctrl -l")["output"], "the xterm window")
    before = desktop.handle
    t0 = time.monotonic()
    after = desktop.reset()
    print(f"reset took {time.monotonic() - t0:.2f} s")
    # the same address after a reset, and a new token: the last session's opens nothing now
    assert after is not None and before is not None
    assert after.url == before.url and after.token != before.token
    assert (
        httpx.get(
            f"{after.url}/platform", timeout=10, headers={"Authorization": f"Bearer {before.token}"}
        ).status_code
        == 403
    )
    out = sh(after, "ls -A ~/Desktop; ls ~/.marker 2>&1; wmctrl -l; pgrep -c xterm")["output"]
    assert "marker.txt" not in out and "No such file" in out and "probe-window" not in out
    assert out.strip().endswith("0")
    assert (
        sh(after, "test -s ~/.config/libreoffice/4/user/registrymodifications.xcu")["returncode"]
        == 0
    )


def test_two_desktops_do_not_collide(desktop: LocalSandboxProvider) -> None:
    first = desktop.handle
    assert first is not None
    with LocalSandboxProvider(width=800, height=600) as other:
        second = other.handle
        assert second is not None
        assert second.url != first.url and second.guest_host != first.guest_host
        assert second.token != first.token
        sh(second, "echo only-here > ~/Desktop/second.txt")
        assert sh(first, "ls ~/Desktop/second.txt")["returncode"] != 0
        assert "800x600" in sh(second, "xdpyinfo | grep dimensions")["output"]
        assert "1280x800" in sh(first, "xdpyinfo | grep dimensions")["output"]
        slot = other._res.slot
        assert slot is not None
        name, uid = slot.netns, slot.sandbox_uid
    assert not (Path("/run/netns") / name).exists()
    assert not [p for p in _uid_pids(uid)]
    assert desktop.is_alive()


def _uid_pids(uid: int) -> list[int]:
    from computer_env.procs import pids_of_uid

    return pids_of_uid(uid)


def _iptables() -> str:
    return subprocess.run(["iptables", "-w", "-S"], capture_output=True, text=True).stdout


_CHILD = """
import json, sys, time
from computer_env.desktop.providers.local.provider import LocalSandboxProvider
p = LocalSandboxProvider(width=640, height=480)
p.allow_host_port(9)
h = p.start()
s = p._res.slot
print(json.dumps({"url": h.url, "netns": s.netns, "uid": s.sandbox_uid, "chain": s.chain,
                  "host_if": s.host_if, "pids": p.pids()}), flush=True)
time.sleep(600)
"""


def test_sigkill_of_parent_leaves_nothing_behind() -> None:
    child = subprocess.Popen([sys.executable, "-c", _CHILD], stdout=subprocess.PIPE, text=True)
    try:
        line = child.stdout.readline() if child.stdout else ""
        info = json.loads(line)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
    assert len(info["pids"]) >= 5  # bwrap, dbus, Xvfb, openbox, server...
    wait_for(lambda: not _uid_pids(info["uid"]), "the dead run's sandbox processes to exit", 10)
    for pid in info["pids"]:
        assert not Path(f"/proc/{pid}").exists() or Path(f"/proc/{pid}/stat").read_text().split(
            ") "
        )[1].startswith("Z")
    # the network leftovers are still there until the next start sweeps them
    assert (Path("/run/netns") / info["netns"]).exists()
    with LocalSandboxProvider(width=640, height=480) as fresh:
        assert fresh.is_alive()
        assert not (Path("/run/netns") / info["netns"]).exists()
        assert info["netns"] not in _iptables()  # the INPUT jump is labelled with it


def test_missing_bwrap_is_a_configuration_error(tmp_path: Path) -> None:
    provider = LocalSandboxProvider(search_path=str(tmp_path))
    with pytest.raises(ConfigurationError, match=r"bubblewrap.*unsandboxed=True"):
        provider.start()
    provider.close()
    assert provider.handle is None


def _start_time(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()[19]
    except OSError:
        return None


def test_unsandboxed_desktop_runs_on_the_host() -> None:
    with LocalSandboxProvider(width=800, height=600, unsandboxed=True) as provider:
        handle = provider.handle
        assert handle is not None and handle.url.startswith("http://127.0.0.1:")
        assert handle.display and handle.display.startswith(":")
        out = sh(handle, "echo $HOME; xdpyinfo | grep dimensions")["output"]
        assert "800x600" in out
        procs = {pid: _start_time(pid) for pid in provider.pids()}
        assert procs

    def survivors() -> list[int]:  # same pid AND start time (a pid may be reused), not a zombie
        left = []
        for pid, start in procs.items():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()
            except OSError:
                continue
            if fields[0] not in ("Z", "X") and fields[19] == start:
                left.append(pid)
        return left

    wait_for(lambda: not survivors(), "the unsandboxed desktop's processes to end", 10)


def test_close_removes_the_network() -> None:
    """Each sandbox serves on its own veth address; close() removes netns, veth and rules."""
    with LocalSandboxProvider(width=640, height=480) as p:
        slot = p._res.slot
        assert slot is not None
        with socket.create_connection((slot.guest_addr, 5000), timeout=5):
            pass
        host_if, label = slot.host_if, slot.netns
        p.close()
        p.close()  # idempotent
    # this sandbox's namespace only: other workers create and remove their own meanwhile
    assert label not in set(netns._list_netns()) and label not in _iptables()
    assert not Path(f"/sys/class/net/{host_if}").exists()


CHROMIUM = (
    "chromium --remote-debugging-port=9222 --no-first-run --no-default-browser-check "
    "--disable-background-networking --disable-component-update --disable-sync "
    "--password-store=basic --user-data-dir=$HOME/.chromium-task about:blank"
)


def test_apps_start_cleanly_in_the_sandbox(desktop: LocalSandboxProvider) -> None:
    """xterm, mousepad, Chromium and LibreOffice Calc open their main windows with no first-run
    dialog; Chrome's CDP answers inside. Chromium runs without its own sandbox, which needs user
    namespaces: the desktop forbids them (the desktop's sandbox is the boundary)."""
    handle = desktop.reset()
    with _client(handle) as c:
        for cmd in ("xterm", "mousepad", CHROMIUM, "soffice --calc"):
            assert c.post("/setup/launch", json={"command": cmd, "shell": True}).status_code == 200
    wanted = ("xterm", "Mousepad", "Chromium", "LibreOffice Calc")
    titles = wait_for(
        lambda: (lambda out: out if all(w in out for w in wanted) else "")(
            sh(handle, "wmctrl -l")["output"]
        ),
        "all four app windows",
        timeout=60,
    )
    assert "Tip of the Day" not in titles and "Recovery" not in titles, titles
    cdp = wait_for(
        lambda: sh(handle, "curl -s -m 2 http://127.0.0.1:9222/json/version")["output"],
        "Chrome's remote debugging port",
    )
    assert '"Browser"' in cdp
    assert "--no-sandbox" in sh(handle, "ps -eo args | grep -i chromium")["output"]
    assert sh(handle, "unshare -Ur true")["returncode"] != 0
    desktop.reset()
