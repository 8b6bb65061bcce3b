"""Stress benchmark: the built-in OSWorld suite under full CPU load, counting false zeros.

Runs ``pytest tests/osworld`` (the built-in tasks played by their reference solutions) ``--runs``
times while ``--load`` busy-loop processes saturate the cores, and prints per run the cases
scored, passed, unscored and the *false zeros*: reference solutions scored below 1 (a reference
solution is correct by construction, so each one is the harness' fault). The target is 0.

    .venv/bin/python scripts/stress.py --runs 3 --load 2 [--provider docker] [--json]

With ``--json`` the last line is ``{"runs": R, "scored": S, "false_zeros": F, "unscored": U}``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class RunCounts:
    """What one suite run scored."""

    rc: int
    seconds: float
    scored: int = 0
    passed: int = 0
    unscored: int = 0
    skipped: int = 0
    false_zeros: list[str] = field(default_factory=list)
    unscored_cases: list[str] = field(default_factory=list)


def _busy() -> None:  # pragma: no cover - runs in a child process
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    while True:
        pass


def count_results(run_dir: Path) -> RunCounts:
    """Counts from the ``result.json`` files of one run (``rc``/``seconds`` left 0)."""
    counts = RunCounts(rc=0, seconds=0.0)
    for path in sorted(run_dir.rglob("result.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        outcome, case = data.get("outcome"), data.get("case_id", str(path.parent))
        if outcome == "unscored":
            counts.unscored += 1
            counts.unscored_cases.append(
                f"{case}: {data.get('infra_category')}: {(data.get('infra_reason') or '')[:120]}"
            )
            continue
        if outcome == "skipped":
            counts.skipped += 1
            continue
        counts.scored += 1
        if outcome == "passed":
            counts.passed += 1
        elif data.get("reference_policy"):
            counts.false_zeros.append(
                f"{case}: score {data.get('score')}: {(data.get('message') or '')[:160]}"
            )
    return counts


def run_once(results_dir: Path, name: str, args: argparse.Namespace) -> RunCounts:
    """One full suite run; returns its counts."""
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "tests/osworld",
        "-q",
        "-p",
        "no:cacheprovider",
        "-n",
        str(args.workers),
        "--results-dir",
        str(results_dir),
        "--run",
        name,
        "--provider",
        args.provider,
        *args.pytest_args,
    ]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - t0
    if proc.returncode not in (0, 1):  # 1: some case failed; anything else: the run broke
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
    counts = count_results(results_dir / name)
    counts.rc, counts.seconds = proc.returncode, seconds
    return counts


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {value}")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=_positive, default=3, help="suite runs (default 3)")
    parser.add_argument(
        "--load",
        type=_non_negative,
        default=os.cpu_count() or 2,
        help="busy-loop processes during the runs (default: one per core)",
    )
    parser.add_argument("--provider", default="local", choices=("local", "docker"))
    parser.add_argument("--workers", type=_positive, default=2, help="xdist workers (default 2)")
    parser.add_argument("--results-dir", type=Path, default=ROOT / "results" / "stress")
    parser.add_argument("--json", action="store_true", help="last line: one JSON object")
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = parser.parse_args(argv)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    hogs = [multiprocessing.Process(target=_busy, daemon=True) for _ in range(args.load)]
    for hog in hogs:
        hog.start()
    totals = {"runs": 0, "scored": 0, "false_zeros": 0, "unscored": 0}
    print(
        f"stress: {args.runs} run(s) of the built-in suite on {args.provider} desktops, "
        f"{args.load} busy-loop process(es), {args.workers} workers",
        flush=True,
    )
    try:
        for i in range(1, args.runs + 1):
            name = f"stress-{args.provider}-{stamp}-{i}"
            c = run_once(args.results_dir, name, args)
            print(
                f"run {i}: scored {c.scored}, passed {c.passed}, unscored {c.unscored}, "
                f"skipped {c.skipped}, false zeros {len(c.false_zeros)} "
                f"({c.seconds:.0f} s, exit {c.rc}, {args.results_dir / name})",
                flush=True,
            )
            for line in c.false_zeros:
                print(f"  false zero: {line}", flush=True)
            for line in c.unscored_cases:
                print(f"  unscored: {line}", flush=True)
            totals["runs"] += 1
            totals["scored"] += c.scored
            totals["false_zeros"] += len(c.false_zeros)
            totals["unscored"] += c.unscored
    finally:
        for hog in hogs:
            hog.terminate()
        for hog in hogs:
            hog.join(timeout=5)
    print(
        f"total: {totals['false_zeros']} false zero(s) of {totals['scored']} scored cases in "
        f"{totals['runs']} run(s); {totals['unscored']} unscored",
        flush=True,
    )
    if args.json:
        print(json.dumps(totals), flush=True)
    return 0 if totals["false_zeros"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
