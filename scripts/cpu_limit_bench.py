#!/usr/bin/env python3
"""How much one runaway desktop slows the host and the other desktops, with a CPU limit.

Starts two local sandbox desktops with the same limits (``--cpus``, as ``--desktop-cpus``),
measures the host's load and the *other* desktop's screenshot latency, then runs a fork bomb as a
bash code action (``/run_bash_script``, as the ``run_code`` tool does) in the first one and
measures again while it runs. ``--cpus`` equal to the host's CPU count is the same as no CPU
limit. Needs root and bubblewrap. Example::

    python scripts/cpu_limit_bench.py --cpus 1 --seconds 20
    python scripts/cpu_limit_bench.py --cpus "$(nproc)" --seconds 20   # as without a CPU limit
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time
from pathlib import Path

from computer_env.desktop.client import DesktopClient
from computer_env.desktop.providers.limits import DesktopLimits, host_cpus
from computer_env.desktop.providers.local.cgroups import session_cgroups
from computer_env.desktop.providers.local.provider import LocalSandboxProvider

FORK_BOMB = ":(){ :|:& };:"


def loadavg() -> tuple[float, int]:
    """(1-minute load average, tasks runnable right now) from /proc/loadavg."""
    fields = Path("/proc/loadavg").read_text().split()
    return float(fields[0]), int(fields[3].split("/")[0])


def sample(client: DesktopClient, seconds: float) -> dict[str, float]:
    """Screenshot latencies of ``client`` and the host's load over ``seconds``."""
    latencies: list[float] = []
    runnable: list[int] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        t0 = time.monotonic()
        client.screenshot(fmt="png")
        latencies.append(time.monotonic() - t0)
        runnable.append(loadavg()[1])
    latencies.sort()
    return {
        "shots": len(latencies),
        "median_ms": 1000 * statistics.median(latencies),
        "p90_ms": 1000 * latencies[int(0.9 * (len(latencies) - 1))],
        "max_ms": 1000 * latencies[-1],
        "runnable_mean": statistics.mean(runnable),
        "load1": loadavg()[0],
    }


def cpu_stat(provider: LocalSandboxProvider) -> dict[str, int]:
    """The ``cpu.stat`` counters (periods, throttled periods) of ``provider``'s session cgroup."""
    pids = set(provider.pids())
    for d in session_cgroups(os.getpid()):
        procs = (d / "cgroup.procs").read_text().split()
        if (d / "cpu.stat").exists() and pids & {int(p) for p in procs}:
            return {
                k: int(v)
                for k, v in (line.split() for line in (d / "cpu.stat").read_text().splitlines())
            }
    return {}


def show(label: str, r: dict[str, float]) -> None:
    print(
        f"{label:<8} load1 {r['load1']:6.2f}  runnable {r['runnable_mean']:6.1f}  "
        f"screenshot median {r['median_ms']:7.1f} ms  p90 {r['p90_ms']:7.1f} ms  "
        f"max {r['max_ms']:7.1f} ms  ({r['shots']} shots)",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cpus",
        type=float,
        default=None,
        help="CPU limit of each desktop (default: the --desktop-cpus default)",
    )
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each sample")
    args = parser.parse_args()
    limits = DesktopLimits.from_values(cpus=args.cpus)
    print(f"host: {host_cpus()} CPUs; each desktop: {limits.describe()}", flush=True)
    bomb_desk = LocalSandboxProvider(width=1280, height=800, limits=limits)
    other_desk = LocalSandboxProvider(width=1280, height=800, limits=limits)
    try:
        bomb = DesktopClient.from_handle(bomb_desk.start())
        other = DesktopClient.from_handle(other_desk.start())
        show("before", sample(other, args.seconds))
        done = threading.Event()

        def run_bomb() -> None:
            try:
                bomb.run_bash_script(FORK_BOMB, timeout=args.seconds + 10)
            except Exception as exc:  # noqa: BLE001 - a bomb's answer is whatever it is
                print(f"(bomb's code action ended: {type(exc).__name__})", flush=True)
            finally:
                done.set()

        threading.Thread(target=run_bomb, daemon=True).start()
        deadline = time.monotonic() + 60  # measure once the bomb has reached its process cap
        while not bomb_desk.limit_breaches() and time.monotonic() < deadline:
            time.sleep(0.2)
        stat0 = cpu_stat(bomb_desk)
        show("during", sample(other, args.seconds))
        stat1 = cpu_stat(bomb_desk)
        if stat0 and stat1:
            periods = stat1.get("nr_periods", 0) - stat0.get("nr_periods", 0)
            throttled = stat1.get("nr_throttled", 0) - stat0.get("nr_throttled", 0)
            print(f"bomb desktop: throttled in {throttled} of {periods} CFS periods", flush=True)
        print(f"bomb desktop breaches: {bomb_desk.limit_breaches()}", flush=True)
        bomb_desk.reset()  # ends the bomb with its session
        done.wait(timeout=30)
        show("after", sample(other, min(args.seconds, 10.0)))
        bomb.close()
        other.close()
    finally:
        bomb_desk.close()
        other_desk.close()


if __name__ == "__main__":
    if os.geteuid() != 0:
        raise SystemExit("cpu_limit_bench: the local sandbox needs root")
    main()
