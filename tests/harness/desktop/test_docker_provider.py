"""DockerProvider with the locally built guest-server image on a real dockerd.

Needs a daemon (started by scripts/start-dockerd.sh when run as root) and the image built by
docker/build-image.sh beforehand; the tests never build it (minutes) and skip with the reason.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from computer_env.desktop.client import DesktopClient
from computer_env.desktop.providers.docker.containers import LABEL_PID, sweep_dead_containers
from computer_env.desktop.providers.docker.provider import DockerProvider, sweep_dead_leftovers
from computer_env.errors import ConfigurationError
from tests.harness.helpers.dockerd import IMAGE, docker_client  # noqa: F401 (fixture)
from tests.harness.helpers.polling import wait_for

ROOT = Path(__file__).resolve().parents[3]
BASE_IMAGE = "holo-bench/debian-base:bookworm"


def _ours(client: Any) -> list[Any]:
    # ignore_removed: a container removed between docker-py's listing and its look at each one
    # (the background removal these tests wait for) is gone, not an error
    return client.containers.list(
        all=True, filters={"label": f"{LABEL_PID}={os.getpid()}"}, ignore_removed=True
    )


@pytest.mark.docker
def test_start_token_screenshot_reset_close(docker_client: Any) -> None:
    provider = DockerProvider(IMAGE, worker="t-main", prewarm=True, ready_timeout=60)
    try:
        handle = provider.start()
        assert (
            handle.provider == "docker"
            and handle.token
            and handle.url.startswith("http://127.0.0.1:")
        )
        assert set(handle.ports) == {"server", "cdp", "vlc"}  # OSWorld's getters reach these
        auth = {"Authorization": f"Bearer {handle.token}"}
        shot = httpx.get(f"{handle.url}/screenshot", headers=auth, timeout=30)
        assert shot.status_code == 200 and shot.content[:8] == b"\x89PNG\r\n\x1a\n"
        assert httpx.get(f"{handle.url}/screenshot", timeout=10).status_code == 403
        assert provider.is_alive()
        with DesktopClient.from_handle(handle) as client:  # the real client, through the port
            assert client.screen_size() == (1920, 1080)
            assert client.run_pyautogui("pyautogui.moveTo(17, 23)").ok
            assert client.cursor_position() == (17, 23)
            assert client.execute(["python", "-c", "import pyautogui"]).returncode == 0
        first = provider._container.id
        labels = provider._container.labels
        assert labels["holo-bench.worker"] == "t-main"
        assert labels["holo-bench.controller-pid"] == str(os.getpid())
        assert {"holo-bench.run", "holo-bench.created"} <= set(labels)

        new = provider.reset()
        assert provider._container.id != first  # replaced, not restarted
        assert new.token != handle.token
        assert (
            httpx.get(
                f"{new.url}/screenshot",
                headers={"Authorization": f"Bearer {new.token}"},
                timeout=30,
            ).status_code
            == 200
        )
        wait_for(
            lambda: not any(c.id == first for c in _ours(docker_client)),  # in the background
            "the old container to be removed",
            30,
            interval=0.2,
        )
    finally:
        provider.close()
    assert _ours(docker_client) == []  # active and spare both gone
    provider.close()  # idempotent


@pytest.mark.docker
def test_two_workers_never_share_host_ports(docker_client: Any) -> None:
    a = DockerProvider(IMAGE, worker="gw0", prewarm=False, ready_timeout=60)
    b = DockerProvider(IMAGE, worker="gw1", prewarm=False, ready_timeout=60)
    try:
        ha, hb = a.start(), b.start()
        assert ha.url != hb.url
        assert not set(ha.ports.values()) & set(hb.ports.values())
        assert a.is_alive() and b.is_alive()
    finally:
        a.close()
        b.close()
    assert _ours(docker_client) == []


_CHILD = textwrap.dedent("""
    import sys, time
    from computer_env.desktop.providers.docker.provider import DockerProvider
    p = DockerProvider(sys.argv[1], worker="killed", prewarm=False, ready_timeout=60)
    p.start()
    print(p._container.name, flush=True)
    time.sleep(600)
""")


@pytest.mark.docker
def test_sigkilled_run_leaves_a_container_that_the_sweep_removes(docker_client: Any) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, IMAGE], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    try:
        assert child.stdout is not None
        name = child.stdout.readline().strip()
        assert name, "the child did not start its container"
    finally:
        child.kill()  # SIGKILL: no close(), no atexit
        child.wait(timeout=10)
    assert docker_client.containers.get(name).labels[LABEL_PID] == str(child.pid)
    assert docker_client.networks.list(names=[name])  # the desktop's own network, same name
    removed = sweep_dead_leftovers()
    assert name in removed
    # ignore_removed: another test's container may go between the listing and its inspection
    listed = docker_client.containers.list(all=True, ignore_removed=True)
    assert name not in [c.name for c in listed]
    assert not docker_client.networks.list(names=[name])  # nor its network


@pytest.mark.docker
def test_sweep_removes_dead_pid_and_keeps_live_ones(docker_client: Any) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    labels = {
        "holo-bench.run": "sweep-test",
        "holo-bench.worker": "gw9",
        "holo-bench.created": f"{time.time():.3f}",
    }
    made = []
    try:
        for pid in (gone.pid, os.getpid()):
            made.append(
                docker_client.containers.create(
                    BASE_IMAGE if _has(docker_client, BASE_IMAGE) else IMAGE,
                    ["sleep", "600"],
                    labels={**labels, LABEL_PID: str(pid)},
                    entrypoint=["sleep"],
                )
            )
        removed = sweep_dead_containers()
        names = {c.name for c in docker_client.containers.list(all=True, ignore_removed=True)}
        assert made[0].name in removed and made[0].name not in names
        assert made[1].name not in removed and made[1].name in names
    finally:
        for c in made:
            try:
                c.remove(force=True)
            except Exception:  # noqa: BLE001 - already swept
                pass


def _has(client: Any, image: str) -> bool:
    try:
        client.images.get(image)
        return True
    except Exception:  # noqa: BLE001
        return False


@pytest.mark.docker
def test_preflight_missing_image_says_how_to_build(docker_client: Any) -> None:
    with pytest.raises(ConfigurationError, match="build-image.sh"):
        DockerProvider("holo-bench/no-such-image:never").check_host()
    assert DockerProvider(IMAGE).check_host() == []


def test_preflight_missing_qcow2_says_where_to_get_it(tmp_path: Path) -> None:
    provider = DockerProvider(vm_path=tmp_path / "Ubuntu.qcow2")
    assert provider.kind == "osworld" and provider.image == "happysixd/osworld-docker"
    with pytest.raises(ConfigurationError) as info:
        provider.check_host()
    text = str(info.value)
    for needle in (
        "Ubuntu.qcow2",
        "xlangai/ubuntu_osworld",
        "Ubuntu.qcow2.zip",
        "12.3 GB",
        "24.5 GB",
        "wget -c",
        "--resume",
    ):
        assert needle in text, needle


def test_preflight_unreachable_daemon_hints_docker_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent.sock")
    with pytest.raises(ConfigurationError) as info:
        DockerProvider(IMAGE).check_host()
    text = str(info.value)
    assert "unix:///nonexistent.sock" in text and "DOCKER_HOST" in text and "rootless" in text


def test_osworld_options_follow_upstream(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The container spec for OSWorld's image (cannot boot here: no usable KVM, no 24 GB image)."""
    qcow2 = tmp_path / "Ubuntu.qcow2"
    qcow2.write_bytes(b"")
    monkeypatch.setenv("KVM", "N")
    monkeypatch.setenv("RAM_SIZE", "8G")
    opts = DockerProvider(vm_path=qcow2, cpu_cores=2).container_options()
    assert opts["environment"] == {
        "DISK_SIZE": "32G",
        "RAM_SIZE": "8G",
        "CPU_CORES": "2",
        "KVM": "N",
    }
    assert opts["devices"] == ["/dev/net/tun"] and opts["cap_add"] == ["NET_ADMIN"]
    assert opts["volumes"] == {str(qcow2): {"bind": "/System.qcow2", "mode": "ro"}}
    assert set(opts["ports"]) == {"5000/tcp", "9222/tcp", "8080/tcp", "8006/tcp"}
    assert all(v == ("127.0.0.1", None) for v in opts["ports"].values())  # Docker picks ports
    with_kvm = DockerProvider(vm_path=qcow2, kvm=True).container_options()
    assert "/dev/kvm" in with_kvm["devices"] and "KVM" not in with_kvm["environment"]


def _sh(handle: Any, command: str) -> dict:
    with httpx.Client(
        base_url=handle.url, headers={"Authorization": f"Bearer {handle.token}"}, timeout=120
    ) as c:
        resp = c.post("/execute", json={"command": command, "shell": True})
    assert resp.status_code == 200, resp.text
    return resp.json()


@pytest.mark.docker
def test_container_limits_hold_and_are_reported(docker_client: Any) -> None:
    """The guest-server container has the desktop limits: a 2 GiB allocation is killed, a fork
    bomb is capped, /tmp is a capped tmpfs, no user namespaces; each breach is reported."""
    provider = DockerProvider(IMAGE, worker="t-limits", prewarm=False, ready_timeout=90)
    try:
        handle = provider.start()
        assert provider.limit_breaches() == []
        res = _sh(handle, "python3 -c \"b = b'x' * (2 * 1024 ** 3); print('allocated')\"")
        assert "allocated" not in res["output"] and res["returncode"] != 0, res
        assert provider.is_alive()
        assert any("memory limit" in b for b in provider.limit_breaches())

        handle = provider.reset()
        assert provider.limit_breaches() == []
        out = _sh(
            handle,
            "df -B1 --output=size /tmp | tail -n 1; "
            "dd if=/dev/zero of=/tmp/fill bs=1M count=600 2>&1",
        )["output"]
        assert out.split()[0] == str(512 * 1024 * 1024) and "No space left" in out, out
        assert any("/tmp size limit" in b for b in provider.limit_breaches())
        assert _sh(handle, "unshare -Ur true")["returncode"] != 0

        handle = provider.reset()
        with httpx.Client(
            base_url=handle.url, headers={"Authorization": f"Bearer {handle.token}"}, timeout=60
        ) as c:
            c.post("/setup/launch", json={"command": "bash -c ':(){ :|:& };:'", "shell": True})
        wait_for(
            lambda: any("process limit (1024) reached" in b for b in provider.limit_breaches()),
            "the process limit to be reported",
            120,
            interval=0.5,
        )
        assert subprocess.run(["true"], timeout=30).returncode == 0  # the host still forks
    finally:
        provider.close()
    assert _ours(docker_client) == []


@pytest.mark.docker
def test_image_carries_osworld_apps(docker_client: Any) -> None:
    """OSWorld's programs, real sudo with its password, pactl, gsettings over the bus address
    the tasks export, Chromium as google-chrome (named chrome) and the dpkg database."""
    provider = DockerProvider(IMAGE, worker="t-apps", prewarm=False, ready_timeout=90)
    try:
        handle = provider.start()
        progs = (
            "google-chrome google-chrome-stable socat libreoffice gimp vlc thunderbird "
            "gnome-terminal nautilus gedit sudo pactl pulseaudio expect gsettings dconf"
        )
        out = _sh(
            handle,
            f"for p in {progs}; do command -v $p >/dev/null || echo MISSING $p; done; echo checked",
        )["output"]
        assert out.strip() == "checked", out
        sudo = _sh(
            handle,
            "echo password | sudo -S mkdir ~/Desktop/todo_list_Jan_1 && "
            "stat -c %U ~/Desktop/todo_list_Jan_1",
        )
        assert sudo["returncode"] == 0 and sudo["output"].strip() == "root", sudo
        assert _sh(handle, "sudo -k; echo wrong | sudo -S true")["returncode"] != 0
        bus = "export DBUS_SESSION_BUS_ADDRESS='unix:path=/run/user/1000/bus'\n"
        got = _sh(
            handle,
            f"{bus}gsettings set org.gnome.desktop.session idle-delay 300 && "
            "gsettings get org.gnome.desktop.session idle-delay",
        )
        assert got["output"].strip() == "uint32 300", got
        vol = (
            "pulseaudio --start\npactl list sinks | grep '^[[:space:]]Volume:' | head -n 1 | "
            "awk '{print $5}' | sed 's/%//g'"
        )
        assert _sh(handle, vol)["output"] == "40\n"
        assert "libreoffice-impress/" in _sh(handle, "apt list --installed 2>/dev/null")["output"]
        wheel = (
            "python -c \"import zipfile; z = zipfile.ZipFile('/tmp/osw_probe-1.0-py3-none-any."
            "whl', 'w'); z.writestr('osw_probe/__init__.py', 'V = 42'); d = 'osw_probe-1.0."
            "dist-info/'; z.writestr(d + 'METADATA', 'Metadata-Version: 2.1\\nName: osw_probe"
            "\\nVersion: 1.0\\n'); z.writestr(d + 'WHEEL', 'Wheel-Version: 1.0\\nRoot-Is-"
            "Purelib: true\\nTag: py3-none-any\\n'); z.writestr(d + 'RECORD', ''); z.close()\" "
            "&& pip install /tmp/osw_probe-1.0-py3-none-any.whl && cd / && "
            "python -c 'import osw_probe, pyautogui; print(osw_probe.V)'"
        )
        assert _sh(handle, wheel)["output"].strip().endswith("42")  # pip as a user install
        with httpx.Client(
            base_url=handle.url, headers={"Authorization": f"Bearer {handle.token}"}, timeout=60
        ) as c:
            c.post(
                "/setup/launch", json={"command": ["google-chrome", "--remote-debugging-port=1337"]}
            )
        wait_for(
            lambda: (
                '"Browser"'
                in _sh(handle, "curl -s -m 2 http://127.0.0.1:1337/json/version")["output"]
            ),
            "Chrome's DevTools endpoint on port 1337",
            60,
            interval=1,
        )
        assert _sh(handle, "pgrep -x chrome")["returncode"] == 0
    finally:
        provider.close()
