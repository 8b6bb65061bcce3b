"""A run's wall-clock against its ideal, printed as a table: the built-in OSWorld suite at
``-n 1`` and ``-n 2``, with the reference endpoint answering after 1.5 s (a realistic model) and
at once, each row with the host's load before and after.

The ideal is the sum of the agents' model turns (model latency + the harness's per-turn time)
divided by the workers; the ratio is wall-clock / ideal (issue target: <= 1.15 on a quiet host).
Per worker it also says what the workers waited for: set-up, scoring, the agent's start and
end, idle (``fixtures.cases.records.critical_path``). ``--from RUN_DIR`` reads finished runs instead
(their result files and ``summary.json``'s wall-clock; give ``--workers``).

    .venv/bin/python scripts/critical_path.py [--workers 1,2] [--delays 1.5,0] [--json] [-- ARGS]
    .venv/bin/python scripts/critical_path.py --from results/RUN --workers 2
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fixtures.cases.records.critical_path import CriticalPath, critical_path  # noqa: E402
from fixtures.cases.records.results import scan_results  # noqa: E402

TARGET_RATIO = 1.15


def from_run(run_dir: Path, workers: int) -> CriticalPath | None:
    """The split of a finished run (its result files, its summary's wall-clock)."""
    path = run_dir / "summary.json"
    if not path.is_file():
        return None
    run = json.loads(path.read_text(encoding="utf-8")).get("run") or {}
    scan = scan_results(run_dir)
    return critical_path(scan.results, run.get("wall_s"), workers)


def run_load(run_dir: Path) -> float | None:
    """The host's load averaged over a finished run's model turns (its summary)."""
    path = run_dir / "summary.json"
    if not path.is_file():
        return None
    harness = json.loads(path.read_text(encoding="utf-8")).get("harness") or {}
    return harness.get("load_mean")


def run_suite(
    results: Path, name: str, workers: int, delay: float, extra: list[str]
) -> tuple[int, float]:
    """One run of the built-in suite: (exit code, seconds)."""
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "tests/osworld",
        "-q",
        "-p",
        "no:cacheprovider",
        "-n",
        str(workers),
        "--results-dir",
        str(results),
        "--run",
        name,
        *extra,
    ]
    if delay > 0:
        cmd += ["--reference-faults", f"delay={delay:g}"]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    if proc.returncode not in (0, 1):
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-2000:])
    return proc.returncode, time.monotonic() - t0


def row(
    label: str, c: CriticalPath | None, load: tuple[float, float] | None, rc: int = 0
) -> dict[str, object]:
    """One table row (a dict, for ``--json`` too); ``load``: before and after the run (None:
    a finished run read back, whose load is in its summary's harness section)."""
    out: dict[str, object] = {
        "run": label,
        "rc": rc,
        "load_before": None if load is None else round(load[0], 2),
        "load_after": None if load is None else round(load[1], 2),
    }
    if c is not None:
        out.update(c.model_dump())
    return out


def load_text(r: dict[str, object]) -> str:
    if r["load_before"] is None:
        return f"mean {r.get('load_mean')}" if r.get("load_mean") is not None else "?"
    return f"{r['load_before']}->{r['load_after']}"


def print_table(rows: list[dict[str, object]]) -> None:
    head = (
        f"{'run':16} {'wall s':>7} {'ideal s':>7} {'ratio':>6} {'setup':>6} {'score':>6} "
        f"{'agent':>6} {'idle':>6} {'ahead':>5}  load"
    )
    print(head)
    for r in rows:
        if "wall_s" not in r:
            print(f"{r['run']:16} (no result; exit {r['rc']})")
            continue
        ratio = r["ratio"]
        mark = "" if not isinstance(ratio, float) else (" ok" if ratio <= TARGET_RATIO else " over")
        print(
            f"{r['run']:16} {r['wall_s']:>7} {r['ideal_s']:>7} {ratio!s:>6} "
            f"{r['setup_s']:>6} {r['scoring_s']:>6} {r['agent_other_s']:>6} "
            f"{r['idle_s']:>6} {r['prepared_ahead']!s:>5}  "
            f"{load_text(r)}{mark}"
        )
    print(
        f"(seconds per worker; ratio = wall / ideal, target <= {TARGET_RATIO}; "
        f"{os.cpu_count()} cores)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,2", help="xdist worker counts, e.g. 1,2")
    parser.add_argument("--delays", default="1.5,0", help="model delays in seconds")
    parser.add_argument(
        "--from",
        dest="runs",
        type=Path,
        nargs="*",
        default=None,
        help="read these finished run folders instead of running",
    )
    parser.add_argument("--results-dir", type=Path, default=None)
    parser.add_argument("--json", action="store_true", help="last line: the rows as JSON")
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = parser.parse_args(argv)
    workers = [int(w) for w in args.workers.split(",")]
    rows: list[dict[str, object]] = []
    if args.runs is not None:
        for run_dir in args.runs:
            rows.append(row(run_dir.name, from_run(run_dir, workers[0]), None))
            rows[-1]["load_mean"] = run_load(run_dir)
    else:
        with tempfile.TemporaryDirectory(prefix="critical-path-") as tmp:
            results = args.results_dir or Path(tmp)
            for n in workers:
                for delay in (float(d) for d in args.delays.split(",")):
                    name = f"n{n}-delay{delay:g}-{time.strftime('%H%M%S')}"
                    before = os.getloadavg()[0]
                    rc, _ = run_suite(results, name, n, delay, args.pytest_args)
                    after = os.getloadavg()[0]
                    path = results / name / "summary.json"
                    c = from_run(results / name, n) if path.is_file() else None
                    rows.append(row(f"-n {n} delay {delay:g}", c, (before, after), rc))
    print_table(rows)
    if args.json:
        print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
