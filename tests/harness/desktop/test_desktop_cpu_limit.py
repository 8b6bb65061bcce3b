"""CPU limit per desktop (``--desktop-cpus`` / ``HOLO_DESKTOP_CPUS``): busy loops inside a real
local sandbox get no more CPU time than the limit, through the real option parser, settings and
provider; the Docker provider passes the same limit as the container's ``--cpus``."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import psutil
import pytest

from computer_env.desktop.providers.docker.provider import DockerProvider
from computer_env.desktop.providers.limits import DesktopLimits, default_cpus, host_cpus
from computer_env.desktop.providers.local.provider import LocalSandboxProvider
from computer_env.desktop.providers.local.session import SandboxSession
from computer_env.desktop.providers.registry import ProviderOptions, make_provider
from tests.harness.helpers.localdesk import guest_sh
from tests.harness.helpers.parsed_settings import settings_of
from tests.harness.helpers.polling import wait_for

needs_sandbox = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("bwrap"),
    reason="the local sandbox needs root and bubblewrap",
)


def _cpu_dir(provider: LocalSandboxProvider) -> Path:
    session = provider._res.session
    assert isinstance(session, SandboxSession) and session.cgroup is not None, (
        "the desktop has no cgroup"
    )
    assert session.cgroup.cpu_dir is not None, f"no CPU cgroup among {session.cgroup.dirs}"
    return session.cgroup.cpu_dir


def _quota(cpu_dir: Path) -> float:
    """The CPUs the cgroup may use (v2 ``cpu.max`` or v1 ``cpu.cfs_quota_us``)."""
    if (cpu_dir / "cpu.max").exists():
        quota, period = (cpu_dir / "cpu.max").read_text().split()
    else:
        quota = (cpu_dir / "cpu.cfs_quota_us").read_text().strip()
        period = (cpu_dir / "cpu.cfs_period_us").read_text().strip()
    assert quota not in ("max", "-1"), f"{cpu_dir}: no CPU quota"
    return int(quota) / int(period)


def _cpu_seconds(pids: list[int]) -> dict[int, float]:
    times: dict[int, float] = {}
    for pid in pids:
        try:
            t = psutil.Process(pid).cpu_times()
        except psutil.Error:
            continue
        times[pid] = t.user + t.system
    return times


def _usage_by_pid(provider: LocalSandboxProvider, seconds: float) -> dict[int, float]:
    """CPUs used by each of the desktop's processes over ``seconds`` (those alive throughout)."""
    before, t0 = _cpu_seconds(provider.pids()), time.monotonic()
    time.sleep(seconds)  # the measuring window itself, not a wait for a state
    after, t1 = _cpu_seconds(list(before)), time.monotonic()
    return {p: (after[p] - before[p]) / (t1 - t0) for p in after}


def _usage(provider: LocalSandboxProvider, seconds: float) -> float:
    """CPUs used by the desktop's processes over ``seconds``."""
    return sum(_usage_by_pid(provider, seconds).values())


def _names(by_pid: dict[int, float]) -> str:
    """``name(pid)=CPUs`` for the busiest processes, for a failure message."""

    def name(pid: int) -> str:
        try:
            return psutil.Process(pid).name()
        except psutil.Error:
            return "?"

    top = sorted(by_pid.items(), key=lambda kv: -kv[1])[:8]
    return ", ".join(f"{name(p)}({p})={u:.3f}" for p, u in top)


def test_default_and_bad_values(monkeypatch: pytest.MonkeyPatch) -> None:
    assert default_cpus() == max(1.0, min(4.0, host_cpus() / 2))
    monkeypatch.delenv("HOLO_DESKTOP_CPUS", raising=False)
    assert DesktopLimits.from_values().cpus == default_cpus()
    monkeypatch.setenv("HOLO_DESKTOP_CPUS", "0.75")
    assert DesktopLimits.from_values().cpus == 0.75
    assert settings_of().desktops.limits.cpus == 0.75  # the environment twin
    assert settings_of("--desktop-cpus", "1.5").desktops.limits.cpus == 1.5  # option wins
    for bad in ("lots", "0", "0.01", "nan", "inf"):
        with pytest.raises(pytest.UsageError, match="--desktop-cpus.*desktop CPU limit"):
            settings_of("--desktop-cpus", bad)


def test_docker_containers_get_the_cpu_limit(tmp_path: Path) -> None:
    """The container spec (no container is started: that is test_docker_provider's job)."""
    limits = DesktopLimits(cpus=1.25)
    guest = DockerProvider("holo-bench/desktop:latest", limits=limits, kvm=False)
    assert guest.container_options("t")["nano_cpus"] == 1_250_000_000
    qcow2 = tmp_path / "Ubuntu.qcow2"
    qcow2.write_bytes(b"")
    vm = DockerProvider(vm_path=qcow2, limits=limits, kvm=False).container_options()
    assert vm["nano_cpus"] == 1_250_000_000 and vm["environment"]["CPU_CORES"] == "4"


@pytest.mark.desktop
@needs_sandbox
def test_busy_loops_get_at_most_the_limit() -> None:
    """4 busy loops in a desktop started with --desktop-cpus 0.25 use at most ~0.25 CPU."""
    settings = settings_of("--desktop-cpus", "0.25", "--screen", "640x480")
    opts = ProviderOptions(screen=settings.desktops.screen, limits=settings.desktops.limits)
    provider = make_provider("local", opts)
    assert isinstance(provider, LocalSandboxProvider)
    try:
        handle = provider.start()
        cpu_dir = _cpu_dir(provider)
        assert _quota(cpu_dir) == pytest.approx(0.25)
        guest_sh(
            handle,
            "for i in 1 2 3 4; do nohup bash -c 'while :; do :; done' >/dev/null 2>&1 & done",
        )
        wait_for(
            lambda: _cpu_seconds(provider.pids()) and _usage(provider, 0.5) > 0.02,
            "the busy loops to run",
            timeout=30,
        )
        by_pid = _usage_by_pid(provider, 5.0)
        used = sum(by_pid.values())
        stat = (cpu_dir / "cpu.stat").read_text()
        # CFS enforces the quota per 100 ms period; allow for accounting slack
        assert used <= 0.25 * 1.3 + 0.03, (
            f"the desktop used {used:.2f} CPUs (limit 0.25): {_names(by_pid)}; "
            f"{cpu_dir}/cpu.stat: {stat.split()}"
        )
        assert "nr_throttled" in stat
        # a throttled desktop still answers
        assert provider.is_alive(), f"the throttled desktop did not answer; {stat.split()}"
    finally:
        provider.close()
