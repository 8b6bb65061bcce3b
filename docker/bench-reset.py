#!/usr/bin/env python3
"""Measure DockerProvider reset time with and without the pre-warmed spare (prints a table).

    .venv/bin/python docker/bench-reset.py [--resets 5] [--task-seconds 3] [--image TAG]

``--task-seconds`` is how long the "task" runs between resets (the spare boots meanwhile).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from computer_env.desktop.providers.docker.provider import (
    DEFAULT_GUEST_SERVER_IMAGE,
    DockerProvider,
)


def measure(image: str, prewarm: bool, resets: int, task_s: float) -> tuple[float, list[float]]:
    provider = DockerProvider(image, worker="bench", prewarm=prewarm)
    try:
        t0 = time.monotonic()
        provider.start()
        start_s = time.monotonic() - t0
        times = []
        for _ in range(resets):
            time.sleep(task_s)  # stands for the task the agent runs on the desktop
            t0 = time.monotonic()
            provider.reset()
            times.append(time.monotonic() - t0)
        return start_s, times
    finally:
        provider.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--image", default=DEFAULT_GUEST_SERVER_IMAGE)
    ap.add_argument("--resets", type=int, default=5)
    ap.add_argument("--task-seconds", type=float, default=3.0)
    args = ap.parse_args()
    print(f"{'mode':>8} {'start_s':>8} {'reset median_s':>15} {'reset max_s':>12}")
    for prewarm in (False, True):
        start_s, times = measure(args.image, prewarm, args.resets, args.task_seconds)
        print(
            f"{'spare' if prewarm else 'cold':>8} {start_s:>8.2f} "
            f"{statistics.median(times):>15.2f} {max(times):>12.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
