"""What a Ray-placed desktop costs against a local one (``--provider ray`` vs ``local``).

Measured, over ``--runs`` each, for both providers: start-up of one desktop (for Ray: actor
placement, the actor's process, the desktop on its node, the node's door; ``actor_only_s`` is an
empty actor's start alone), reset to ready, and the per-turn path through the worker's client
(a PNG screenshot, a JPEG screenshot, one click through the fast action path). ``--suite`` also
runs the built-in smoke suite with ``-n 1 --spare-desktop off`` (each case pays its reset) on
each provider, ``--rounds`` times alternating
(the host is shared: a busy spell then hits both), and prints the medians of its harness time
per model turn (``summary.json`` ``harness.non_model_s``: settle + action + screenshot +
record) and of its cases' reset.

Without ``--ray-address`` it starts its own two-node cluster on this host (head 127.0.0.1, a
node on 127.0.0.2, as the tests do: ``tests/harness/helpers/raycluster.py``) and removes it after;
the Ray desktop is placed on the second node, so every request crosses its door.

    .venv/bin/python scripts/ray_bench.py [--runs 5] [--suite [--rounds 2]]
        [--ray-address HOST:PORT] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from computer_env.desktop.client import DesktopClient  # noqa: E402
from computer_env.desktop.providers.base import DesktopProvider  # noqa: E402
from computer_env.desktop.providers.registry import ProviderOptions, make_provider  # noqa: E402

SCREEN = (1920, 1080)


def _median_ms(fn: Callable[[], object], runs: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def measure(name: str, opts: ProviderOptions, runs: int) -> dict[str, float]:
    """Start-up, reset and per-turn client times of provider ``name``."""
    starts = []
    for _ in range(runs):
        provider: DesktopProvider = make_provider(name, opts)
        t0 = time.perf_counter()
        try:
            provider.start()
            starts.append(time.perf_counter() - t0)
        finally:
            provider.close()
    provider = make_provider(name, opts)
    try:
        handle = provider.start()
        resets = []
        for _ in range(runs):
            t0 = time.perf_counter()
            handle = provider.reset()
            resets.append(time.perf_counter() - t0)
        with DesktopClient.from_handle(handle) as client:
            client.capabilities()
            png = _median_ms(lambda: client.screenshot("png"), runs * 4)
            jpeg = _median_ms(lambda: client.screenshot("jpeg"), runs * 4)
            click = _median_ms(lambda: client.run_pyautogui("pyautogui.click(200, 200)"), runs * 4)
        where = getattr(provider, "where", {}) or {}
    finally:
        provider.close()
    out = {
        "start_s_p50": statistics.median(starts),
        "start_s_max": max(starts),
        "reset_s_p50": statistics.median(resets),
        "screenshot_png_ms": png,
        "screenshot_jpeg_ms": jpeg,
        "click_fast_ms": click,
        "turn_client_ms": png + click,
    }
    if where:
        out["node"] = where.get("node_ip")  # type: ignore[assignment]
    return out


def actor_only(address: str, runs: int) -> float:
    """Median start of an empty actor needing one ``desktop`` (placement + its process)."""
    from computer_env.desktop.providers.ray.cluster import connect

    ray = connect(address)

    class Empty:
        def ping(self) -> int:
            return os.getpid()

    cls = ray.remote(Empty)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        actor = cls.options(
            num_cpus=0, resources={"desktop": 1}, scheduling_strategy="SPREAD"
        ).remote()
        ray.get(actor.ping.remote(), timeout=120)
        times.append(time.perf_counter() - t0)
        ray.kill(actor)
    return statistics.median(times)


def suite(provider_args: list[str], tmp: Path, run: str) -> dict[str, float]:
    """The smoke suite with ``-n 1``: harness time per turn and the cases' median reset."""
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "tests/osworld",
        "-m",
        "smoke",
        "-n",
        "1",
        "-q",
        "--spare-desktop",
        "off",  # the same reset path on both (auto differs by provider)
        "--results-dir",
        str(tmp),
        "--run",
        run,
        "-p",
        "no:cacheprovider",
        *provider_args,
    ]
    res = subprocess.run(
        cmd, cwd=ROOT, capture_output=True, text=True, timeout=900, start_new_session=True
    )
    if res.returncode != 0:
        raise SystemExit(f"{run}: the suite failed:\n{res.stdout[-3000:]}{res.stderr[-2000:]}")
    summary = json.loads((tmp / run / "summary.json").read_text())
    resets = [
        json.loads(p.read_text())["timings"]["reset_s"] for p in (tmp / run).rglob("result.json")
    ]
    h = summary["harness"]
    return {
        "turns": h["turns"],
        "non_model_s": h["non_model_s"],
        "settle_s": h["settle_s"],
        "action_s": h["action_s"],
        "observe_s": h["observe_s"],
        "case_reset_s_p50": statistics.median(resets),
        "wall_s": summary["run"]["wall_s"],
        "load_mean": h.get("load_mean", 0.0),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--ray-address", default=None)
    ap.add_argument("--suite", action="store_true", help="also run the smoke suite on each")
    ap.add_argument(
        "--rounds",
        type=int,
        default=2,
        help="suite runs per provider, alternating (medians reported)",
    )
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    cluster = None
    address = args.ray_address
    if address is None:
        from tests.harness.helpers.raycluster import TwoNodeCluster

        # the head has no 'desktop': the Ray desktop lands on the second node
        cluster = TwoNodeCluster(desktops=4, head_desktops=0).start()
        address = cluster.address
    try:
        out: dict[str, Any] = {
            "runs": args.runs,
            "cores": os.cpu_count(),
            "load_1m_before": os.getloadavg()[0],
        }
        base = ProviderOptions(screen=SCREEN, run_id="bench", ray_address=address)
        out["local"] = measure("local", base, args.runs)
        out["ray"] = measure("ray", base, args.runs)
        out["ray"]["actor_only_s_p50"] = actor_only(address, args.runs)
        if args.suite:
            runs: dict[str, list[dict[str, float]]] = {"suite_local": [], "suite_ray": []}
            with tempfile.TemporaryDirectory(prefix="raybench") as tmp:
                for n in range(args.rounds):  # alternating, so a busy spell hits both
                    runs["suite_local"].append(suite([], Path(tmp), f"local{n}"))
                    runs["suite_ray"].append(
                        suite(["--provider", "ray", "--ray-address", address], Path(tmp), f"ray{n}")
                    )
            for key, rows in runs.items():
                out[key] = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
        out["load_1m_after"] = os.getloadavg()[0]
    finally:
        if cluster is not None:
            cluster.close()
    if args.json:
        print(json.dumps(out))
        return 0
    for section, values in out.items():
        if isinstance(values, dict):
            print(f"[{section}]")
            for key, value in values.items():
                print(
                    f"  {key:22} {value:.4g}" if isinstance(value, float) else f"  {key:22} {value}"
                )
        else:
            print(
                f"{section}: {values:.3g}" if isinstance(values, float) else f"{section}: {values}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
