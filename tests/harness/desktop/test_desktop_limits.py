"""Limits per local desktop (memory, processes, /tmp, no nested user namespaces), tested by
breaking them for real inside a real sandbox: the desktop's programs are stopped, the host is
not, and the breach is reported so the case is unscored."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from computer_env.desktop.providers.base import DesktopHandle
from computer_env.desktop.providers.limits import DesktopLimits, MiB, parse_size
from computer_env.desktop.providers.local.provider import LocalSandboxProvider
from computer_env.desktop.providers.local.session import SandboxSession
from computer_env.errors import ResourceLimitError
from fixtures.cases.desktops.pool import VMPool
from fixtures.cases.outcomes import classify
from tests.harness.helpers.localdesk import guest_sh, local_desktop
from tests.harness.helpers.polling import wait_for

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(
        os.geteuid() != 0 or not shutil.which("bwrap"),
        reason="the local sandbox needs root and bubblewrap",
    ),
]


sh = guest_sh


def _cgroup_dirs(provider: LocalSandboxProvider) -> list[Path]:
    session = provider._res.session
    assert isinstance(session, SandboxSession) and session.cgroup is not None, (
        "the desktop has no cgroup"
    )
    return list(session.cgroup.dirs)


def _read(dirs: list[Path], *names: str) -> str:
    for d in dirs:
        for name in names:
            if (d / name).exists():
                return (d / name).read_text().strip()
    raise AssertionError(f"none of {names} in {dirs}")


@pytest.fixture(scope="module")
def desktop() -> Iterator[LocalSandboxProvider]:
    with local_desktop(width=800, height=600) as provider:
        yield provider


@pytest.fixture()
def handle(desktop: LocalSandboxProvider) -> DesktopHandle:
    handle = desktop.reset()
    assert desktop.limit_breaches() == []  # every session starts clean
    return handle


def test_defaults_are_in_force(desktop: LocalSandboxProvider, handle: DesktopHandle) -> None:
    dirs = _cgroup_dirs(desktop)
    assert int(_read(dirs, "memory.max", "memory.limit_in_bytes")) == 1536 * MiB
    assert int(_read(dirs, "pids.max")) == 1024
    # every process of the desktop is in the cgroup
    procs = {int(p) for d in dirs for p in (d / "cgroup.procs").read_text().split()}
    assert set(desktop.pids()) <= procs


def test_2gib_allocation_is_killed_and_reported(
    desktop: LocalSandboxProvider, handle: DesktopHandle
) -> None:
    res = sh(handle, "python3 -c \"b = b'x' * (2 * 1024 ** 3); print('allocated', len(b))\"")
    assert "allocated" not in res["output"] and res["returncode"] != 0, res
    assert desktop.is_alive()  # the kernel killed the hog, not the desktop's server
    breaches = desktop.limit_breaches()
    assert any("memory limit (1.5 GiB) exceeded" in b for b in breaches), breaches


def test_fork_bomb_is_capped_and_the_host_survives(
    desktop: LocalSandboxProvider, handle: DesktopHandle
) -> None:
    dirs = _cgroup_dirs(desktop)
    with httpx.Client(
        base_url=handle.url, headers={"Authorization": f"Bearer {handle.token}"}, timeout=60
    ) as c:
        bomb = "bash -c ':(){ :|:& };:'"
        assert c.post("/setup/launch", json={"command": bomb, "shell": True}).status_code == 200
    try:
        wait_for(
            lambda: int(_read(dirs, "pids.current")) >= 1024 - 8,
            "the fork bomb to reach the desktop's process cap",
            timeout=120,
            interval=0.5,
        )
        assert int(_read(dirs, "pids.current")) <= 1024
        # the host still starts processes while the bomb runs
        assert subprocess.run(["true"], timeout=30).returncode == 0
        breaches = wait_for(desktop.limit_breaches, "the process limit to be reported", 30)
        assert any("process limit (1024) reached" in b for b in breaches), breaches
    finally:
        desktop.reset()  # ends the bomb with the session
    assert int(_read(_cgroup_dirs(desktop), "pids.current")) < 200
    assert desktop.is_alive() and desktop.limit_breaches() == []


def test_tmp_is_capped_and_not_host_shared_memory(
    desktop: LocalSandboxProvider, handle: DesktopHandle
) -> None:
    out = sh(
        handle,
        "df -B1 --output=size /tmp /dev/shm | tail -n 2; "
        "dd if=/dev/zero of=/tmp/fill bs=1M count=600 2>&1; stat -c %d /tmp",
    )
    lines = out["output"].split("\n")
    assert [int(x) for x in lines[:2]] == [512 * MiB, 512 * MiB], out
    assert "No space left on device" in out["output"], out
    tmp_dev = int(out["output"].split()[-1])
    assert tmp_dev not in (os.stat("/dev/shm").st_dev, os.stat("/tmp").st_dev)
    assert not Path("/dev/shm/fill").exists() and not Path("/tmp/fill").exists()
    breaches = desktop.limit_breaches()
    assert any("/tmp size limit (512 MiB) reached" in b for b in breaches), breaches


def test_no_nested_user_namespaces(handle: DesktopHandle) -> None:
    for cmd in ("unshare -Ur true", "unshare -U true", "bwrap --unshare-user --bind / / true"):
        res = sh(handle, cmd)
        assert res["returncode"] != 0, (cmd, res)


def test_limits_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOLO_DESKTOP_MEMORY", "768M")
    monkeypatch.setenv("HOLO_DESKTOP_PIDS", "300")
    monkeypatch.setenv("HOLO_DESKTOP_TMP", "64M")
    with LocalSandboxProvider(width=640, height=480) as provider:
        dirs = _cgroup_dirs(provider)
        assert int(_read(dirs, "memory.max", "memory.limit_in_bytes")) == 768 * MiB
        assert int(_read(dirs, "pids.max")) == 300
        handle = provider.handle
        assert handle is not None
        assert sh(handle, "df -B1 --output=size /tmp | tail -n 1")["output"].strip() == str(
            64 * MiB
        )
    assert not any(d.exists() for d in dirs)  # the cgroups go with the desktop


def test_bad_limits_are_refused() -> None:
    assert parse_size("1.5G") == 1536 * MiB and parse_size("512MiB") == 512 * MiB
    for bad in ("lots", "-1G", "0"):
        with pytest.raises(ValueError, match="desktop memory limit"):
            DesktopLimits.from_values(memory=bad)
    with pytest.raises(ValueError, match="too small"):
        DesktopLimits.from_values(pids=3)
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--desktop-memory",
            "lots",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/osworld",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert res.returncode == 4 and "--desktop-memory" in res.stderr and "lots" in res.stderr, (
        res.stderr[-2000:]
    )


def test_a_breach_makes_the_case_unscored() -> None:
    """The pool turns a breach into ResourceLimitError (category resource_limit), once per
    case; the next case's desktop starts clean."""
    pool = VMPool(lambda: LocalSandboxProvider(width=640, height=480))
    try:
        handle = pool.acquire()
        sh(handle, "python3 -c \"b = b'x' * (2 * 1024 ** 3)\"")
        with pytest.raises(ResourceLimitError) as info:
            pool.check_limits()
        category, reason = classify(info.value) or ("", "")
        assert category == "resource_limit" and "memory limit" in reason, reason
        pool.acquire()
        pool.check_limits()  # a fresh desktop: nothing to report
    finally:
        pool.close()
