#!/usr/bin/env python3
"""Simulate a full OSWorld run (369 tasks) to size workers, endpoints and VMs.

A discrete-event simulation: each xdist worker owns one desktop and runs tasks one after another
(reset -> setup -> up to 100 steps of "ask the model, act, observe"). Every model request goes to
the worker's endpoint (worker i -> endpoint i mod E); an endpoint's latency grows with the number of
requests it is serving at once. Prints makespan against the ideal (total work / workers) for
several scheduling orders. See docs/scale.md for the model, its parameters and the numbers.

    scripts/simulate_scale.py                      # the default table (about 30 s)
    scripts/simulate_scale.py --workers 16 --endpoints 2 --reps 5
    scripts/simulate_scale.py --measure-xdist 1,2,4,8   # controller overhead on this machine
"""

from __future__ import annotations

import argparse
import heapq
import math
import random
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

#: OSWorld-Verified task counts per domain (test_all.json) and a relative duration per domain.
DOMAINS: dict[str, tuple[int, float]] = {
    "chrome": (46, 0.9),
    "gimp": (26, 1.0),
    "libreoffice_calc": (47, 1.2),
    "libreoffice_impress": (47, 1.1),
    "libreoffice_writer": (23, 1.0),
    "multi_apps": (101, 1.5),
    "os": (24, 0.6),
    "thunderbird": (15, 0.9),
    "vlc": (17, 0.8),
    "vs_code": (23, 0.9),
}


@dataclass(frozen=True)
class ProviderCost:
    """Per-task desktop costs: ``boot_s`` to get a fresh desktop, ``swap_s`` to switch to an
    already-booted spare, ``env_factor`` multiplying in-desktop time per step, ``step_s`` added
    to each step (a Ray-placed desktop: every request crosses its node's door)."""

    name: str
    boot_s: float
    swap_s: float = 0.0
    prewarm: bool = False
    env_factor: float = 1.0
    step_s: float = 0.0


PROVIDERS: dict[str, ProviderCost] = {
    "docker-kvm": ProviderCost("docker-kvm", boot_s=25.0),
    "docker-kvm+spare": ProviderCost("docker-kvm+spare", boot_s=25.0, swap_s=1.5, prewarm=True),
    "docker-tcg": ProviderCost("docker-tcg", boot_s=80.0, env_factor=2.5),
    "local": ProviderCost("local", boot_s=1.0),
    # --provider ray (docs/scale.md, scripts/ray_bench.py): the reset is the node's own; each
    # step pays the door (~0.01 s: a screenshot and an action through it, +4-8 ms measured)
    "ray": ProviderCost("ray", boot_s=1.0, step_s=0.01),
    "ray+docker-kvm": ProviderCost("ray+docker-kvm", boot_s=25.0, step_s=0.01),
}


@dataclass(frozen=True)
class Task:
    """One task: ``steps`` model calls, each followed by ``env_s`` seconds in the desktop."""

    tid: int
    domain: str
    steps: int
    env_s: float
    setup_s: float
    estimate: float = 0.0  # the scheduler's duration estimate (noisy)

    def base_duration(
        self, latency_s: float, env_factor: float = 1.0, step_s: float = 0.0
    ) -> float:
        """Seconds at an idle endpoint (no contention), without the reset."""
        return self.setup_s + self.steps * (latency_s + self.env_s * env_factor + step_s)


@dataclass
class Model:
    """Endpoint behaviour: ``latency_s`` per request when idle; beyond ``saturation`` concurrent
    requests the latency grows linearly (the GPU is throughput-bound); below it, mildly."""

    latency_s: float = 2.5
    saturation: float = 16.0
    slope: float = 0.02

    def latency(self, concurrent: int) -> float:
        return self.latency_s * max(
            1.0 + self.slope * (concurrent - 1), concurrent / self.saturation
        )


def make_tasks(
    seed: int,
    n: int = 369,
    *,
    median_min: float = 4.0,
    sigma: float = 0.55,
    estimate_noise: float = 0.5,
) -> list[Task]:
    """Draw tasks: duration lognormal (most 2-8 min, tail to 30 min), 5-100 steps."""
    rng = random.Random(seed)
    counts = {d: c for d, (c, _) in DOMAINS.items()}
    total = sum(counts.values())
    domains = [d for d, c in counts.items() for _ in range(round(c * n / total))]
    while len(domains) < n:
        domains.append("multi_apps")
    domains = domains[:n]
    tasks: list[Task] = []
    for tid, domain in enumerate(domains):
        duration = rng.lognormvariate(math.log(median_min * 60 * DOMAINS[domain][1]), sigma)
        per_step = rng.uniform(4.0, 18.0)
        steps = max(5, min(100, round(duration / per_step)))
        setup = min(120.0, rng.lognormvariate(math.log(8.0), 0.8))
        env_s = max(0.5, per_step - Model().latency_s)
        true = setup + steps * per_step
        tasks.append(
            Task(
                tid,
                domain,
                steps,
                env_s,
                setup,
                estimate=true * rng.lognormvariate(0.0, estimate_noise),
            )
        )
    return tasks


def order_tasks(tasks: Sequence[Task], schedule: str, rng: random.Random) -> list[list[Task]]:
    """Units of work handed to idle workers, in order (a unit is one task, or one scope)."""
    if schedule == "load":  # xdist --dist load: collection order, unrelated to duration
        shuffled = list(tasks)
        rng.shuffle(shuffled)
        return [[t] for t in shuffled]
    if schedule == "loadscope":  # one scope per module: here one module per domain
        scopes: dict[str, list[Task]] = {}
        for t in tasks:
            scopes.setdefault(t.domain, []).append(t)
        return list(scopes.values())
    if schedule == "longest-first":  # sorted by the true duration (an oracle: best case)
        return [[t] for t in sorted(tasks, key=lambda t: -t.steps * (t.env_s + 2.5) - t.setup_s)]
    if schedule == "longest-first-est":  # sorted by a noisy estimate (e.g. last run's times)
        return [[t] for t in sorted(tasks, key=lambda t: -t.estimate)]
    raise ValueError(f"unknown schedule {schedule!r}")


@dataclass
class Result:
    makespan: float
    ideal: float
    longest: float
    busy: list[float] = field(default_factory=list)

    @property
    def efficiency(self) -> float:
        return self.ideal / self.makespan


def simulate(
    tasks: Sequence[Task],
    *,
    workers: int,
    endpoints: int,
    schedule: str,
    provider: ProviderCost,
    model: Model,
    seed: int = 0,
) -> Result:
    """Run the event simulation; returns makespan and the ideal (sum of base work / workers)."""
    rng = random.Random(seed)
    units = order_tasks(tasks, schedule, rng)
    units.reverse()  # pop() from the end = next in order
    queues: list[list[Task]] = [[] for _ in range(workers)]
    concurrent = [0] * endpoints
    spare_ready = [0.0] * workers  # when each worker's pre-warmed spare is booted
    busy = [0.0] * workers
    remaining = [0] * workers
    current: list[Task | None] = [None] * workers
    events: list[tuple[float, int, int, str]] = []
    seq = 0

    def push(t: float, w: int, kind: str) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(events, (t, seq, w, kind))

    def next_task(w: int, now: float) -> None:
        if not queues[w] and units:
            queues[w] = list(units.pop())
        if not queues[w]:
            current[w] = None
            return
        task = queues[w].pop(0)
        current[w], remaining[w] = task, task.steps
        if provider.prewarm and now > 0.0:
            reset = max(provider.swap_s, spare_ready[w] - now + provider.swap_s)
        else:
            reset = provider.boot_s
        spare_ready[w] = now + reset + provider.boot_s  # the next spare boots from here on
        push(now + reset + task.setup_s, w, "step")

    for w in range(workers):
        next_task(w, 0.0)
    makespan = 0.0
    while events:
        now, _, w, kind = heapq.heappop(events)
        task = current[w]
        assert task is not None
        e = w % endpoints
        if kind == "step":
            concurrent[e] += 1
            push(now + model.latency(concurrent[e]), w, "answer")
        elif kind == "answer":
            concurrent[e] -= 1
            push(now + task.env_s * provider.env_factor + provider.step_s, w, "acted")
        else:  # acted
            remaining[w] -= 1
            if remaining[w] > 0:
                push(now, w, "step")
            else:
                busy[w] = now
                makespan = max(makespan, now)
                next_task(w, now)
    work = [t.base_duration(model.latency_s, provider.env_factor, provider.step_s) for t in tasks]
    return Result(makespan=makespan, ideal=sum(work) / workers, longest=max(work), busy=busy)


SCHEDULES = ("load", "loadscope", "longest-first", "longest-first-est")


def table(
    grid: Sequence[tuple[int, int]],
    *,
    provider: str,
    reps: int,
    seed: int,
    model: Model,
    schedules: Sequence[str] = SCHEDULES,
) -> list[dict[str, float]]:
    """Mean makespan (minutes) per schedule for each (workers, endpoints)."""
    rows = []
    for workers, endpoints in grid:
        row: dict[str, float] = {"workers": workers, "endpoints": endpoints}
        ideals = []
        for schedule in schedules:
            spans = []
            for rep in range(reps):
                tasks = make_tasks(seed + rep)
                res = simulate(
                    tasks,
                    workers=workers,
                    endpoints=endpoints,
                    schedule=schedule,
                    provider=PROVIDERS[provider],
                    model=model,
                    seed=seed + rep,
                )
                spans.append(res.makespan / 60)
                ideals.append(max(res.ideal, res.longest) / 60)
            row[schedule] = statistics.mean(spans)
        row["ideal"] = statistics.mean(ideals)
        rows.append(row)
    return rows


def print_rows(rows: list[dict[str, float]], title: str) -> None:
    keys = [k for k in rows[0] if k not in ("workers", "endpoints")]
    print(f"\n{title}")
    print(f"{'workers':>7} {'endpts':>6} " + " ".join(f"{k:>18}" for k in keys))
    for r in rows:
        cells = " ".join(f"{r[k]:>18.1f}" for k in keys)
        print(f"{int(r['workers']):>7} {int(r['endpoints']):>6} {cells}")


def measure_xdist(counts: Sequence[int]) -> None:
    """Time pytest-xdist with N trivial workers on 369 trivial tests (controller overhead), and
    read each worker's resident memory (what one controller machine pays per worker)."""
    import os
    import subprocess
    import tempfile
    import time
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        test = Path(tmp) / "test_trivial.py"
        test.write_text(
            "import os, pathlib, pytest\n\n"
            "@pytest.mark.parametrize('i', range(369))\n"
            "def test_t(i):\n"
            "    rss = [l for l in open('/proc/self/status') if l.startswith('VmRSS')][0]\n"
            "    name = os.environ.get('PYTEST_XDIST_WORKER', 'main')\n"
            "    pathlib.Path(f'rss-{name}.txt').write_text(rss.split()[1])\n"
        )
        print(f"{'workers':>7} {'wall_s':>8} {'extra_s/worker':>15} {'worker_RSS_MiB':>15}")
        base = None
        for n in counts:
            for old in Path(tmp).glob("rss-*.txt"):
                old.unlink()
            args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test)]
            if n > 0:
                args += ["-n", str(n)]
            t0 = time.monotonic()
            subprocess.run(
                args,
                cwd=tmp,
                check=True,
                capture_output=True,
                env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
            )
            wall = time.monotonic() - t0
            base = wall if base is None else base
            rss = [int(f.read_text()) / 1024 for f in Path(tmp).glob("rss-*.txt")]
            print(
                f"{n:>7} {wall:>8.2f} {(wall - base) / max(1, n):>15.2f} "
                f"{statistics.mean(rss):>15.1f}"
            )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, nargs="*")
    ap.add_argument("--endpoints", type=int, nargs="*")
    ap.add_argument("--provider", default="docker-kvm", choices=sorted(PROVIDERS))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--latency", type=float, default=2.5, help="idle endpoint latency (s)")
    ap.add_argument(
        "--saturation",
        type=float,
        default=16.0,
        help="concurrent requests an endpoint serves before latency grows linearly",
    )
    ap.add_argument("--measure-xdist", default=None, metavar="N,N,...")
    args = ap.parse_args(argv)
    if args.measure_xdist:
        measure_xdist([int(x) for x in args.measure_xdist.split(",")])
        return 0
    model = Model(latency_s=args.latency, saturation=args.saturation)
    if args.workers:
        eps = args.endpoints or [max(1, w // 8) for w in args.workers]
        grid = [(w, e) for w in args.workers for e in eps]
    else:
        grid = [(8, 1), (16, 1), (16, 2), (32, 1), (32, 2), (64, 1), (64, 2), (64, 4), (64, 8)]
    rows = table(grid, provider=args.provider, reps=args.reps, seed=args.seed, model=model)
    print_rows(
        rows,
        f"makespan in minutes, 369 tasks, provider {args.provider}, "
        f"mean of {args.reps} seeds (ideal = max(total work / workers, longest))",
    )
    prov_rows = []
    for name in PROVIDERS:
        r = table(
            [(16, 2)],
            provider=name,
            reps=args.reps,
            seed=args.seed,
            model=model,
            schedules=("longest-first",),
        )[0]
        prov_rows.append((name, r["longest-first"], r["ideal"]))
    print("\nprovider effect (16 workers, 2 endpoints, longest-first), minutes")
    for name, span, ideal in prov_rows:
        print(f"{name:>18} {span:>8.1f}   (ideal {ideal:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
