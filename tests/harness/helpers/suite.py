"""Helpers for tests that run the benchmark suite itself in a child pytest process.

The child is a real ``pytest tests/osworld`` (or realtimegym) run: real local desktops, the real
reference endpoint, real result files. These helpers only start it and read what it wrote.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.harness.helpers.polling import scaled
from tests.harness.helpers.tiers import E2E, needs

ROOT = Path(__file__).resolve().parents[3]
OSWORLD_DATA = Path(
    os.environ.get("OSWORLD_EXAMPLES", ROOT.parent / "shared" / "osworld" / "evaluation_examples")
)
"""OSWorld's evaluation_examples, in the ``shared/`` folder beside the checkout (data for tests
only; override with $OSWORLD_EXAMPLES)."""

CHAOS = ("-p", "tests.harness.helpers.chaos")
"""Arguments that load the fault-injection plugin (``helpers/chaos.py``) into a child run."""

_FOREGROUND = (
    "import os, signal, sys\n"
    "for s in (signal.SIGINT, signal.SIGHUP):\n"
    "    signal.signal(s, signal.SIG_DFL)\n"
    "os.execvp(sys.argv[1], sys.argv[1:])\n"
)


def as_foreground(cmd: list[str]) -> list[str]:
    """``cmd`` with SIGINT and SIGHUP at their default actions, as in a terminal's foreground
    job. A test run started in the background or under ``nohup`` ignores them, and an ignored
    signal stays ignored across exec: the child would never see the Ctrl-C or hangup a test
    sends it. A shell cannot undo that (an ignored signal cannot be trapped), Python can."""
    return [sys.executable, "-c", _FOREGROUND, *cmd]


@dataclass
class SuiteRun:
    """What a child suite run printed and wrote."""

    rc: int
    output: str
    run_dir: Path

    @property
    def summary(self) -> dict[str, Any]:
        summary: dict[str, Any] = json.loads((self.run_dir / "summary.json").read_text())
        return summary

    def results(self) -> dict[str, dict[str, Any]]:
        """case_id -> result.json of every case."""
        out = {}
        for path in self.run_dir.rglob("result.json"):
            data = json.loads(path.read_text())
            out[data["case_id"]] = data
        return out


def task_list_file(tmp_path: Path, ids_by_domain: dict[str, list[str]]) -> Path:
    """A ``--task-list`` file selecting some built-in tasks."""
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps(ids_by_domain))
    return path


def builtin_smoke() -> dict[str, list[str]]:
    """The built-in smoke subset ``{domain: [ids]}``."""
    from computer_env.osworld.builtin import BUILTIN_ROOT

    smoke: dict[str, list[str]] = json.loads((BUILTIN_ROOT / "test_smoke.json").read_text())
    return smoke


def first_smoke_tasks(n: int, *, exclude_domains: tuple[str, ...] = ()) -> dict[str, list[str]]:
    """``n`` smoke tasks, at most one per domain (fast ones first by file order)."""
    out: dict[str, list[str]] = {}
    for domain, ids in builtin_smoke().items():
        if domain in exclude_domains or not ids:
            continue
        out[domain] = [ids[0]]
        if len(out) == n:
            break
    return out


@needs(E2E)
def run_suite(
    results_dir: Path,
    run: str,
    *args: str,
    target: str = "tests/osworld",
    timeout: float = 900,
    env: dict[str, str] | None = None,
) -> SuiteRun:
    """Run the suite to completion in a child process (its own process group), within
    ``timeout`` seconds times the time scale."""
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        target,
        "--results-dir",
        str(results_dir),
        "--run",
        run,
        "-q",
        "-rA",
        *args,
    ]
    proc = subprocess.run(
        cmd,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=scaled(timeout),
        env={**os.environ, **(env or {})},
        start_new_session=True,
    )
    return SuiteRun(proc.returncode, proc.stdout + proc.stderr, results_dir / run)


@needs(E2E)
def start_suite(
    results_dir: Path,
    run: str,
    *args: str,
    target: str = "tests/osworld",
    env: dict[str, str] | None = None,
    log: Path | None = None,
) -> subprocess.Popen[str]:
    """Start the suite in the background (own process group) for interruption tests."""
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        target,
        "--results-dir",
        str(results_dir),
        "--run",
        run,
        "-q",
        "-rA",
        *args,
    ]
    out = open(log, "w") if log else subprocess.DEVNULL
    return subprocess.Popen(
        as_foreground(cmd),
        cwd=ROOT,
        stdout=out,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(env or {})},
        start_new_session=True,
    )


def kill_group(proc: subprocess.Popen[str], sig: int = signal.SIGKILL) -> None:
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass


def tagged_processes(tag: str) -> list[str]:
    """Command lines of live processes whose environment carries ``HOLO_TEST_TAG=<tag>``
    (the child suite run sets it; its desktops, servers and workers inherit it)."""
    hits = []
    needle = f"HOLO_TEST_TAG={tag}".encode()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if needle in (proc / "environ").read_bytes().split(b"\0"):
                hits.append(
                    (proc / "cmdline")
                    .read_bytes()
                    .replace(b"\0", b" ")
                    .decode(errors="replace")[:200]
                )
        except OSError:
            continue
    return hits


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time) of a live process. Read as bytes: a process's name is any
    bytes it chose (the audit's exploits name theirs in bytes that are not UTF-8)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return int(fields[1]), int(fields[19])


def run_tree(tag: str) -> dict[tuple[int, int], str]:
    """Every live process of a tagged run: the tagged ones (pytest controller and workers) and
    all their descendants (sandboxes, X servers, guest servers, apps), keyed by (pid, start
    time) so that a reused pid is never mistaken for a survivor."""
    parents: dict[int, int] = {}
    starts: dict[int, int] = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and (st := _stat(int(proc.name))):
            parents[int(proc.name)], starts[int(proc.name)] = st
    roots = set()
    needle = f"HOLO_TEST_TAG={tag}".encode()
    for pid in parents:
        try:
            if needle in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                roots.add(pid)
        except OSError:
            continue
    tree: dict[tuple[int, int], str] = {}
    for pid in parents:
        p, seen = pid, 0
        while p > 1 and seen < 64:
            if p in roots:
                try:
                    cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
                except OSError:  # gone since the listing: not live (a "?" here would
                    break  # overwrite what a caller noted of it, an X server for one)
                tree[(pid, starts[pid])] = cmd.decode(errors="replace")[:160]
                break
            p, seen = parents.get(p, 0), seen + 1
    return tree


def still_alive(procs: dict[tuple[int, int], str]) -> list[str]:
    """Which of the recorded processes still run (same pid and start time)."""
    return [cmd for (pid, start), cmd in procs.items() if (st := _stat(pid)) and st[1] == start]
