"""RemoteProvider against a real guest server on loopback (Xvfb + computer_env.desktop.server),
and OSWorldCloudProvider's error path and adapter."""

from __future__ import annotations

import importlib
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from computer_env.desktop.providers.osworld_cloud import OSWorldCloudProvider, parse_address
from computer_env.desktop.providers.remote import RemoteProvider, split_url_token
from computer_env.errors import ConfigurationError, VMUnreachable
from computer_env.procs import kill_group, spawn
from tests.harness.helpers.polling import scaled, wait_for

ROOT = Path(__file__).resolve().parents[3]


def _desktop_env_modules() -> dict[str, object]:
    return {
        m: mod
        for m, mod in sys.modules.items()
        if m == "desktop_env" or m.startswith("desktop_env.")
    }


@pytest.fixture
def own_desktop_env() -> Iterator[None]:
    """The test imports its own ``desktop_env`` (a test double or none): the modules loaded before
    are hidden, and afterwards exactly they are back, with none the test loaded left behind (a
    double left in ``sys.modules`` would be every later test's OSWorld in this worker)."""
    from computer_env.osworld.upstream.loader import upstream_available

    before = _desktop_env_modules()
    for name in before:
        del sys.modules[name]
    upstream_available.cache_clear()
    try:
        yield
    finally:
        for name in _desktop_env_modules():
            del sys.modules[name]
        sys.modules.update(before)  # type: ignore[arg-type]
        importlib.invalidate_caches()
        upstream_available.cache_clear()


def _port(path: Path, proc: subprocess.Popen[bytes], what: str, timeout: float) -> str:
    """The port ``proc`` writes to ``path``; fails at once if ``proc`` exits first."""

    def written() -> str:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        return path.read_text().strip() if path.exists() else ""

    return wait_for(written, f"{what} to write its port to {path}", timeout, interval=0.05)


@pytest.fixture(scope="module")
def guest_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A real Xvfb display and the project's guest server on a free loopback port."""
    if shutil.which("Xvfb") is None:
        pytest.skip("Xvfb is not installed")
    tmp = tmp_path_factory.mktemp("remote")
    read_fd, write_fd = os.pipe()
    xvfb = spawn(
        ["Xvfb", "-displayfd", str(write_fd), "-screen", "0", "800x600x24", "-nolisten", "tcp"],
        pass_fds=(write_fd,),
    )
    os.close(write_fd)
    server = None
    try:
        with os.fdopen(read_fd) as pipe:
            display = ":" + pipe.readline().strip()
        token = secrets.token_urlsafe(16)
        port_file = tmp / "port"
        env = {**os.environ, "DISPLAY": display, "DESKTOP_SERVER_TOKEN": token, "HOME": str(tmp)}
        server = spawn(
            [
                sys.executable,
                "-m",
                "computer_env.desktop.server",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--port-file",
                str(port_file),
                "--no-warm",
            ],
            env=env,
            cwd=ROOT,
        )
        port = _port(port_file, server, "the guest server", 30)
        yield f"http://127.0.0.1:{port}", token
    finally:
        if server is not None:
            kill_group(server, timeout=10)
        kill_group(xvfb, timeout=10)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_remote_provider_uses_a_real_server_with_its_token(guest_server: tuple[str, str]) -> None:
    url, token = guest_server
    provider = RemoteProvider([f"{url}#{token}"], ready_timeout=20)
    handle = provider.start()
    assert handle.url == url and handle.token == token and handle.provider == "remote"
    assert provider.is_alive()
    assert provider.reset() == handle  # no lifecycle: reset is a health check
    provider.close()
    wrong = RemoteProvider([url], tokens=["not-the-token"], ready_timeout=5)
    assert not wrong.is_alive()
    with pytest.raises(VMUnreachable, match="refused the token"):
        wrong.start()


def test_remote_provider_closed_port_is_not_alive() -> None:
    provider = RemoteProvider([f"http://127.0.0.1:{_closed_port()}"], ready_timeout=1.0)
    assert not provider.is_alive()
    t0 = time.monotonic()
    with pytest.raises(VMUnreachable, match="did not return a screenshot within"):
        provider.start()
    assert time.monotonic() - t0 < scaled(10)


def test_remote_provider_picks_url_by_worker_number() -> None:
    urls = ["http://10.0.0.1:5000#a", "http://10.0.0.2:5000#b"]
    assert RemoteProvider(urls, worker="gw3").url == "http://10.0.0.2:5000"
    assert RemoteProvider(urls, worker_index=4).url == "http://10.0.0.1:5000"
    picked = RemoteProvider(urls, tokens=["x", None], worker="gw0")
    assert (picked.url, picked._token) == ("http://10.0.0.1:5000", "x")
    assert split_url_token("http://h:5000/") == ("http://h:5000", None)
    with pytest.raises(ConfigurationError, match="not an http"):
        RemoteProvider(["h:5000"])
    with pytest.raises(ConfigurationError, match="tokens given"):
        RemoteProvider(urls, tokens=["x"])


@pytest.mark.usefixtures("own_desktop_env")
def test_osworld_cloud_without_desktop_env_fails_clearly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # desktop_env is installed by make setup: hide it (and the checkout) from the import system
    sys.modules["desktop_env"] = None  # type: ignore[assignment]  # own_desktop_env undoes it
    provider = OSWorldCloudProvider("aws", osworld_root=tmp_path, region="us-east-1")
    assert provider.name == "osworld:aws" and provider.region == "us-east-1"
    with pytest.raises(ConfigurationError, match="--osworld-root"):
        provider.start()
    with pytest.raises(ConfigurationError, match="bad provider name"):
        OSWorldCloudProvider("")
    assert parse_address("10.0.0.5") == ("10.0.0.5", 5000)
    assert parse_address("localhost:49153:49154:49155:49156") == ("localhost", 49153)


_FAKE_PROVIDERS = '''
"""Test double of OSWorld's desktop_env.providers (no cloud here): the "VM" is a loopback server."""
CALLS = []

class Manager:
    def get_vm_path(self, os_type, region, screen_size=(1920, 1080)):
        CALLS.append(("get_vm_path", os_type, region))
        return "vm-1"

class Provider:
    def __init__(self, region):
        self.region = region
    def start_emulator(self, path_to_vm, headless, os_type):
        CALLS.append(("start", path_to_vm))
    def get_ip_address(self, path_to_vm):
        return ADDRESS
    def revert_to_snapshot(self, path_to_vm, snapshot_name):
        CALLS.append(("revert", path_to_vm, snapshot_name))
        return "vm-2"
    def stop_emulator(self, path_to_vm, region=None):
        CALLS.append(("stop", path_to_vm))

def create_vm_manager_and_provider(provider_name, region, use_proxy=False):
    if provider_name != "fakecloud":
        raise NotImplementedError(provider_name)
    return Manager(), Provider(region)
'''


@pytest.mark.usefixtures("own_desktop_env")
def test_osworld_cloud_adapter_follows_the_provider_interface(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, guest_server: tuple[str, str]
) -> None:
    """Uses a test double of OSWorld's providers package (clouds are unreachable here); the VM
    address it reports is the real loopback guest server (OSWorld's server answers without a
    token; ours needs one, so readiness is checked against a server started for this test)."""
    url, _ = guest_server
    pkg = tmp_path / "desktop_env" / "providers"
    pkg.mkdir(parents=True)
    (tmp_path / "desktop_env" / "__init__.py").write_text("")
    port = url.rsplit(":", 1)[1]
    (pkg / "__init__.py").write_text(_FAKE_PROVIDERS + f"\nADDRESS = '127.0.0.1:{port}'\n")
    monkeypatch.setattr(sys, "path", list(sys.path))
    # OSWorld's in-VM server has no auth, ours has: the real readiness wait gets our token.
    from computer_env.desktop.providers import osworld_cloud

    real_wait = osworld_cloud.wait_until_ready
    monkeypatch.setattr(
        osworld_cloud, "wait_until_ready", lambda u, _tok, **kw: real_wait(u, guest_server[1], **kw)
    )
    provider = OSWorldCloudProvider(
        "fakecloud", osworld_root=tmp_path, region="r1", ready_timeout=5
    )
    handle = provider.start()
    assert handle.url == url and handle.token is None and handle.provider == "osworld:fakecloud"
    provider.reset()
    provider.close()
    calls = sys.modules["desktop_env.providers"].CALLS
    assert calls == [
        ("get_vm_path", "Ubuntu", "r1"),
        ("start", "vm-1"),
        ("revert", "vm-1", "init_state"),
        ("stop", "vm-2"),
    ]
    with pytest.raises(ConfigurationError, match="no provider"):
        OSWorldCloudProvider("othercloud", osworld_root=tmp_path).start()


@pytest.mark.usefixtures("own_desktop_env")
def test_osworld_cloud_without_its_sdk_fails_clearly(monkeypatch: pytest.MonkeyPatch) -> None:
    """OSWorld's package is installed without its cloud SDKs: asking for a cloud provider whose
    SDK is absent is a configuration error naming the module, not a traceback."""
    import importlib.util

    # the installed package, not a test double's checkout left on sys.path by another test
    monkeypatch.setattr(
        sys,
        "path",
        [p for p in sys.path if "site-packages" in p or not (Path(p) / "desktop_env").exists()],
    )
    if importlib.util.find_spec("desktop_env") is None or importlib.util.find_spec("boto3"):
        pytest.skip("needs desktop_env installed without boto3 (what make setup installs)")
    provider = OSWorldCloudProvider("aws", region="us-east-1")
    with pytest.raises(ConfigurationError, match="boto3"):
        provider.start()
