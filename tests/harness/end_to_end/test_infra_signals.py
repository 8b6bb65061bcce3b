"""Every case that ran is in the summary; signals leave nothing behind (issue 11, item 6).

Real child suite runs on real local desktops: the desktop's X server is killed mid-task (its
server then answers HTTP 500), and the controller alone gets SIGTERM or SIGINT.
"""

from __future__ import annotations

import os
import signal
import subprocess
import uuid
from pathlib import Path

import pytest

from computer_env.desktop.client import DesktopRequestError
from fixtures.cases.outcomes import classify
from tests.harness.helpers.polling import wait_for
from tests.harness.helpers.suite import (
    CHAOS,
    ROOT,
    first_smoke_tasks,
    kill_group,
    run_suite,
    run_tree,
    start_suite,
    task_list_file,
)

CHAOS_ENV = {"PYTHONPATH": str(ROOT)}


def test_a_desktop_5xx_is_infrastructure_and_a_4xx_is_not() -> None:
    found = classify(
        DesktopRequestError(500, "screenshot failed: X server gone", path="/screenshot")
    )
    assert found is not None and found[0] == "desktop_error"
    assert classify(DesktopRequestError(404, "no such file", path="/file")) is None


@pytest.mark.desktop
def test_a_dead_x_server_mid_task_is_rerun_and_every_case_is_in_the_summary(tmp_path: Path) -> None:
    tasks = first_smoke_tasks(2, exclude_domains=("chrome",))
    run = run_suite(
        tmp_path,
        "deadx",
        "--task-list",
        str(task_list_file(tmp_path, tasks)),
        "-n0",
        *CHAOS,
        "--infra-rerun-delay",
        "0",
        env={**CHAOS_ENV, "CHAOS_KILL_X": "agent"},
    )
    results = run.results()
    assert len(results) == 2, run.output[-3000:]
    for case_id, result in results.items():
        assert result["attempts"] == 2, (case_id, result)  # each lost its X server once
        assert result["outcome"] == "passed", (case_id, result["message"])  # on a new desktop
    assert run.summary["total"] == 2 and run.summary["passed"] == 2, run.summary
    assert sum(1 for _ in (tmp_path / "deadx").rglob("result.json")) == 2
    assert run.rc == 0, run.output[-3000:]


def _netns() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def _chains() -> set[str]:
    out = subprocess.run(["iptables", "-w", "-S"], capture_output=True, text=True).stdout
    return {line.split()[1] for line in out.splitlines() if line.startswith("-N ")}


@pytest.mark.desktop
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "sigint"])
def test_a_signal_to_the_controller_alone_writes_the_summary_and_leaves_no_network(
    tmp_path: Path, sig: int
) -> None:
    tag = uuid.uuid4().hex
    tasks = first_smoke_tasks(2, exclude_domains=("chrome",))
    child = start_suite(
        tmp_path,
        "sig",
        "--task-list",
        str(task_list_file(tmp_path, tasks)),
        "-n",
        "2",
        env={"HOLO_TEST_TAG": tag},
        log=tmp_path / "child.log",
    )
    ours: set[str] = set()

    def desktops_up() -> bool:
        tree = run_tree(tag)
        workers = {str(pid) for (pid, _), cmd in tree.items() if pid != child.pid}
        ours.update(n for n in _netns() if n.rsplit("-", 1)[-1] in workers)
        return sum(cmd.startswith("Xvfb") for cmd in tree.values()) >= 2 and len(ours) >= 2

    try:
        wait_for(
            desktops_up, "two desktops (their X servers and networks) to start", 240, interval=0.2
        )
        os.kill(child.pid, sig)  # the controller only, not its process group
        wait_for(
            lambda: child.poll() is not None, f"the run to stop on signal {sig}", 150, interval=0.2
        )
    finally:
        kill_group(child)
    log = (tmp_path / "child.log").read_text()
    run_dir = tmp_path / "sig"
    assert (run_dir / "summary.json").is_file(), log[-3000:]
    assert (run_dir / "report.html").is_file(), log[-3000:]
    slots = {name.split("-")[1] for name in ours}
    left = [n for n in _netns() if n in ours]
    assert left == [], (left, log[-2000:])
    reclaimed = {n.split("-")[1] for n in _netns() if n.startswith("celocal-")}
    for slot in slots - reclaimed:  # a slot another run took since is that run's business
        assert not Path(f"/sys/class/net/cel{slot}h").exists(), slot
        assert f"CELOCAL-{slot}" not in _chains(), slot
