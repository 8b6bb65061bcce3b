"""Where a run's time goes outside the model: the harness's seconds per model turn, task set-up,
worker memory and screenshot speed, printed as numbers (and one JSON line with ``--json``).

Runs ``pytest tests/osworld -m smoke -n 1`` (the built-in tasks played by their reference
solutions; ``--all`` for every built-in task) and reads the run's ``summary.json`` ``harness``
section (means per model turn: ``non_model_s`` = settle + action + screenshot + record) and each
``result.json``'s set-up (reset + setup + settle: ``timings.setup_s + timings.settle_s``).
While it runs, the resident memory of the host-side xdist worker processes is sampled from
``/proc``. ``--bench`` also runs ``python -m computer_env.desktop.bench`` for the screenshot
times (1080p PNG and JPEG through the API). The host's load is printed beside the numbers:
they mean little on a busy host.

    .venv/bin/python scripts/harness_overhead.py [--all] [--bench] [--json]

Targets (quiet host): non_model_s <= 0.15 s, set-up median <= 2 s, worker RSS <= 160 MiB,
screenshots <= 10 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGETS = {
    "non_model_s": 0.15,
    "setup_median_s": 2.0,
    "worker_rss_mib": 160.0,
    "screenshot_png_ms": 10.0,
    "screenshot_jpeg_ms": 10.0,
}


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return out


def _descendants(pid: int) -> list[int]:
    todo, seen = [pid], []
    while todo:
        kids = _children(todo.pop())
        seen += kids
        todo += kids
    return seen


def _rss_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _is_worker(pid: int) -> bool:
    """An xdist worker: execnet starts it as ``python -c "...sys.stdin.readline()..."``."""
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return False
    return b"python" in cmd and b"sys.stdin.readline" in cmd


class WorkerMemory:
    """Samples the peak RSS of the xdist workers under ``pid`` every ``interval`` s."""

    def __init__(self, pid: int, interval: float = 0.25) -> None:
        self.pid, self.interval = pid, interval
        self.peak: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            for child in _descendants(self.pid):
                if _is_worker(child) and (rss := _rss_mib(child)) is not None:
                    self.peak[child] = max(rss, self.peak.get(child, 0.0))

    def stop(self) -> float | None:
        self._stop.set()
        self._thread.join(timeout=5)
        return max(self.peak.values()) if self.peak else None


def run_suite(
    results_dir: Path, name: str, smoke: bool, workers: int, extra: list[str]
) -> tuple[int, float | None, float]:
    """One suite run: (exit code, peak worker RSS in MiB, seconds)."""
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
        str(results_dir),
        "--run",
        name,
        *extra,
    ]
    if smoke:
        cmd += ["-m", "smoke"]
    t0 = time.monotonic()
    proc = subprocess.Popen(
        cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    memory = WorkerMemory(proc.pid)
    output, _ = proc.communicate()
    peak = memory.stop()
    if proc.returncode not in (0, 1):
        sys.stderr.write(output[-3000:])
    return proc.returncode, peak, time.monotonic() - t0


def setup_times(run_dir: Path) -> tuple[list[float], list[float], list[float]]:
    """Of every case that got that far: reset + setup + settle, the reset alone (getting a
    fresh desktop; near 0 with a spare ready), and the settle alone."""
    total, resets, settles = [], [], []
    for path in sorted(run_dir.rglob("result.json")):
        timings = json.loads(path.read_text(encoding="utf-8")).get("timings") or {}
        if timings.get("setup_s") is not None:
            total.append(timings["setup_s"] + (timings.get("settle_s") or 0.0))
            resets.append(timings.get("reset_s") or 0.0)
            settles.append(timings.get("settle_s") or 0.0)
    return total, resets, settles


def bench_screenshots(runs: int) -> dict[str, float]:
    """PNG and JPEG medians (ms) from ``python -m computer_env.desktop.bench``."""
    proc = subprocess.run(
        [sys.executable, "-m", "computer_env.desktop.bench", "--runs", str(runs), "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    last = (proc.stdout.strip().splitlines() or ["{}"])[-1]
    data = json.loads(last) if last.startswith("{") else {}
    return {
        "screenshot_png_ms": data.get("screenshot_png_ms_p50", float("nan")),
        "screenshot_jpeg_ms": data.get("screenshot_jpeg_ms_p50", float("nan")),
    }


def _load() -> float:
    return os.getloadavg()[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--all", action="store_true", help="every built-in task, not smoke")
    parser.add_argument("--workers", type=int, default=1, help="xdist workers (default 1)")
    parser.add_argument("--bench", action="store_true", help="also time screenshots")
    parser.add_argument("--bench-runs", type=int, default=20)
    parser.add_argument(
        "--results-dir",
        type=Path,
        default=None,
        help="where the run's results go (default: a temporary folder)",
    )
    parser.add_argument("--json", action="store_true", help="last line: one JSON object")
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = parser.parse_args(argv)
    load_before = _load()
    with tempfile.TemporaryDirectory(prefix="harness-overhead-") as tmp:
        results = args.results_dir or Path(tmp)
        name = time.strftime("overhead-%Y%m%d-%H%M%S")
        rc, peak, seconds = run_suite(results, name, not args.all, args.workers, args.pytest_args)
        summary_path = results / name / "summary.json"
        summary = json.loads(summary_path.read_text()) if summary_path.is_file() else {}
        setups, resets, settles = setup_times(results / name)
    out: dict[str, float | int | None] = {
        "rc": rc,
        "suite_s": round(seconds, 1),
        "cores": os.cpu_count() or 1,
        "load_before": round(load_before, 2),
    }
    h = summary.get("harness") or {}
    for key in (
        "turns",
        "model_s",
        "non_model_s",
        "settle_s",
        "action_s",
        "observe_s",
        "record_s",
        "load_mean",
        "load_max",
    ):
        out[key] = h.get(key)
    out["setup_median_s"] = round(statistics.median(setups), 3) if setups else None
    out["setup_max_s"] = round(max(setups), 3) if setups else None
    out["reset_median_s"] = round(statistics.median(resets), 3) if resets else None
    out["settle_after_setup_median_s"] = round(statistics.median(settles), 3) if settles else None
    out["worker_rss_mib"] = round(peak, 1) if peak is not None else None
    if args.bench:
        out.update(bench_screenshots(args.bench_runs))
    out["load_after"] = round(_load(), 2)
    print(
        f"harness overhead ({'all built-in tasks' if args.all else 'smoke'}, "
        f"-n {args.workers}, {out['cores']} cores, load {load_before:.1f} -> "
        f"{out['load_after']:.1f}; run exit {rc}, {seconds:.0f} s)"
    )
    for key, value in out.items():
        if key in ("rc", "suite_s", "cores", "load_before", "load_after"):
            continue
        target = TARGETS.get(key)
        mark = (
            ""
            if target is None or value is None
            else f"  target <= {target:g} {'ok' if value <= target else 'MISSED'}"
        )
        shown = (
            "—" if value is None else (f"{value:.3f}" if isinstance(value, float) else str(value))
        )
        print(f"  {key:20} {shown:>10}{mark}")
    if args.json:
        print(json.dumps(out))
    return 0 if rc in (0, 1) else rc


if __name__ == "__main__":
    sys.exit(main())
