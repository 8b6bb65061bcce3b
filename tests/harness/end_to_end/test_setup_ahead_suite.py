"""``--setup-ahead`` end to end: child ``pytest tests/osworld`` runs on real local desktops with
the real reference endpoint. A case set up ahead scores as one set up at its start; a set-up
ahead that fails is the next case's (its rerun), never the current one's; an interrupt in the
middle of a prepared case leaves nothing behind, and ``--lf`` and ``--resume`` behave as after
any interrupt."""

from __future__ import annotations

import json
import signal
import uuid
from pathlib import Path

import pytest

from tests.harness.helpers.polling import wait_for
from tests.harness.helpers.suite import (
    CHAOS,
    ROOT,
    first_smoke_tasks,
    kill_group,
    run_suite,
    run_tree,
    start_suite,
    still_alive,
    task_list_file,
)

pytestmark = pytest.mark.desktop

AHEAD = ("--spare-desktop", "on", "--setup-ahead", "on", "-n0")
CHAOS_ENV = {"PYTHONPATH": str(ROOT)}


def _three(tmp_path: Path) -> tuple[Path, list[str]]:
    """Three smoke tasks (no Chrome: the quickest) in collection order: the task file and
    their case ids."""
    tasks = first_smoke_tasks(3, exclude_domains=("chrome",))
    assert len(tasks) == 3
    return task_list_file(tmp_path, tasks), [f"{d}/{ids[0]}" for d, ids in tasks.items()]


def _order(run_output: str) -> list[str]:
    """Case ids in the order the collect-only listing shows them."""
    return [
        line.split("[", 1)[1].rstrip("]")
        for line in run_output.splitlines()
        if "test_osworld[" in line
    ]


def test_cases_set_up_ahead_score_and_say_so(tmp_path: Path) -> None:
    task_file, _ = _three(tmp_path)
    # the model answers after 1 s: each agent turn is long enough to hide the next set-up
    run = run_suite(
        tmp_path,
        "ahead",
        "--task-list",
        str(task_file),
        "--order",
        "collected",
        "--reference-faults",
        "delay=1",
        *AHEAD,
    )
    assert run.rc == 0, run.output[-3000:]
    results = run.results()
    assert {r["outcome"] for r in results.values()} == {"passed"}
    ahead = [cid for cid, r in results.items() if r["timings"].get("prepared_ahead")]
    assert len(ahead) == 2, results  # every case but the first
    for cid in ahead:
        t = results[cid]["timings"]
        assert t["setup_s"] is not None and t["settle_s"] is not None, t  # its set-up's times
        # what ran ahead: the spare's reset (reset_s: reserving it, timed apart on this path),
        # the setup steps and the settle; a case that waited less than all of it had part of
        # its set-up hidden behind the case before, however slow the host
        assert t["setup_wait_s"] < t["reset_s"] + t["setup_s"] + t["settle_s"], t
    behind = [cid for cid, r in results.items() if r["timings"].get("scored_behind")]
    assert len(behind) == 2, results  # every case but the last: the next one's agent played
    for cid in behind:
        t = results[cid]["timings"]
        assert 0 <= t["score_wait_s"] <= (t["eval_s"] or 0) + 60, t
    path = run.summary["harness"]["critical_path"]
    assert path["prepared_ahead"] == 2 and path["cases"] == 3 and path["ratio"] > 0
    assert path["scored_behind"] == 2
    assert "critical path: wall-clock" in run.output
    assert "2 of 3 cases set up ahead, 2 scored behind" in run.output


def test_a_rerun_of_the_case_before_stops_the_agent_started_ahead(tmp_path: Path) -> None:
    """Every case's first evaluation finds its desktop's server killed from the host (the
    environment's failure: a rerun). The next case's agent, started while that case was
    scored, is stopped when the rerun comes first; every case then scores at its second
    attempt, its first attempt unscored, nothing of a stopped agent in its files."""
    task_file, ids, order = _three_in_order(tmp_path)
    env = {**CHAOS_ENV, "CHAOS_KILL_SERVER": "evaluate"}
    run = run_suite(
        tmp_path,
        "rerun",
        "--task-list",
        str(task_file),
        "--order",
        "collected",
        *CHAOS,
        "--infra-rerun-delay",
        "0",
        "-o",
        "log_cli=true",
        "--log-cli-level=INFO",
        *AHEAD,
        env=env,
    )
    assert run.rc == 0, run.output[-3000:]
    results = run.results()
    assert {cid: r["outcome"] for cid, r in results.items()} == dict.fromkeys(ids, "passed")
    for cid in ids:
        r = results[cid]
        assert r["attempts"] == 2, r
        assert [e["outcome"] for e in r["earlier_attempts"]] == ["unscored"], r
    stopped = [
        line for line in run.output.splitlines() if "the agent started ahead was stopped" in line
    ]
    assert stopped, run.output[-3000:]
    assert any(f"{order[1].split('/', 1)[1]}/rerun-attempt-1" in line for line in stopped)


def _three_in_order(tmp_path: Path) -> tuple[Path, list[str], list[str]]:
    """The three tasks' file, their ids, and the order the suite runs them in."""
    task_file, ids = _three(tmp_path)
    listing = run_suite(
        tmp_path, "order", "--task-list", str(task_file), "--order", "collected", "--collect-only"
    )
    return task_file, ids, _order(listing.output)


def test_a_failed_set_up_ahead_is_the_next_cases_rerun_not_the_current_cases(
    tmp_path: Path,
) -> None:
    task_file, ids, (first, second, third) = _three_in_order(tmp_path)
    env = {**CHAOS_ENV, "CHAOS_AHEAD_SETUP_FAIL": second.split("/", 1)[1]}
    run = run_suite(
        tmp_path,
        "fail",
        "--task-list",
        str(task_file),
        "--order",
        "collected",
        *CHAOS,
        "--infra-rerun-delay",
        "0",
        *AHEAD,
        env=env,
    )
    assert run.rc == 0, run.output[-3000:]
    results = run.results()
    assert {cid: r["outcome"] for cid, r in results.items()} == dict.fromkeys(ids, "passed")
    assert results[first]["attempts"] == 1 and results[first]["earlier_attempts"] == []
    failed = results[second]["earlier_attempts"]
    assert results[second]["attempts"] == 2 and len(failed) == 1, results[second]
    assert failed[0]["outcome"] == "unscored" and failed[0]["infra_category"] == "setup"
    assert not results[second]["timings"].get("prepared_ahead")  # its rerun set itself up
    assert results[third]["attempts"] == 1 and results[third]["timings"]["prepared_ahead"]


@pytest.mark.parametrize("ahead", ["set-up", "agent"])
def test_an_interrupt_in_a_prepared_case_leaves_nothing_and_resume_finishes(
    tmp_path: Path, ahead: str
) -> None:
    """``set-up``: the interrupt comes once the third case is set up ahead; ``agent``: once its
    agent has started ahead, while the second case is scored."""
    task_file, ids, (first, second, third) = _three_in_order(tmp_path)
    tag = uuid.uuid4().hex
    cache = ("-o", f"cache_dir={tmp_path / 'pytest-cache'}")
    log = tmp_path / "child.log"
    # the model answers after 1 s; for ``set-up`` the second case's agent waits for the
    # interrupt (chaos: CHAOS_HOLD_AGENT), so it still plays when its successor's set-up ahead
    # has ended, on any host; for ``agent`` the second case is scored while the third's agent
    # plays ahead
    hold = {"CHAOS_HOLD_AGENT": second.split("/", 1)[1]} if ahead == "set-up" else {}
    child = start_suite(
        tmp_path,
        "intr",
        "--task-list",
        str(task_file),
        "--order",
        "collected",
        "--reference-faults",
        "delay=1",
        *cache,
        *AHEAD,
        *CHAOS,
        "-o",
        "log_cli=true",
        "--log-cli-level=INFO",
        env={"HOLO_TEST_TAG": tag, **CHAOS_ENV, **hold},
        log=log,
    )
    seen: dict[tuple[int, int], str] = {}
    key = f"{third.split('/', 1)[1]}/intr-attempt-1"
    third_ahead = f"set up {key} ahead" if ahead == "set-up" else f"{key}: its agent starts"
    try:
        # the log is read first, so the moment is seen at once: a scan of the run's processes
        # (run_tree) takes seconds on a loaded host
        wait_for(
            lambda: third_ahead in log.read_text() or seen.update(run_tree(tag)),
            f"the third case's {ahead} to start ahead while the second plays",
            300,
            interval=0.2,
        )
        results = {
            json.loads(p.read_text())["case_id"] for p in (tmp_path / "intr").rglob("result.json")
        }
        if ahead == "set-up":
            assert results == {first}, "the interrupt must come while the second case plays"
            # the second case's agent is held, so its desktops stay: scan them once before
            # the interrupt (the log line may come before any scan, and after Ctrl-C the
            # desktops go faster than a scan on a loaded host)
            seen.update(run_tree(tag))
        else:
            assert third not in results and first in results, results
        kill_group(child, signal.SIGINT)  # Ctrl-C reaches the whole foreground group
        wait_for(
            lambda: seen.update(run_tree(tag)) or child.poll() is not None,
            "the run to stop on Ctrl-C",
            120,
        )
    finally:
        kill_group(child)
    output = log.read_text()
    wait_for(lambda: not still_alive(seen), "every process of the run to end", 30, interval=0.2)
    assert any(c.startswith("Xvfb") for c in seen.values()), seen
    on_disk = {
        json.loads(p.read_text())["case_id"] for p in (tmp_path / "intr").rglob("result.json")
    }
    assert third not in on_disk, output[-3000:]
    third_dirs = [
        p for p in (tmp_path / "intr").rglob("*") if p.is_dir() and p.name == third.split("/", 1)[1]
    ]
    assert not third_dirs, f"the case whose {ahead} started ahead left {third_dirs}"
    work = tmp_path / ".cache" / "tasks" / third.split("/", 1)[1]
    assert not list(work.glob("intr*")), "the prepared case's work folder was left behind"
    # --lf: nothing failed before the interrupt, so it selects every case (as after any)
    again = run_suite(
        tmp_path, "lf", "--task-list", str(task_file), *cache, "--lf", "--collect-only"
    )
    assert sorted(_order(again.output)) == sorted(ids), again.output[-3000:]
    kept = {
        p: p.stat().st_mtime_ns
        for p in (tmp_path / "intr").rglob("result.json")
        if json.loads(p.read_text())["outcome"] == "passed"
    }
    assert kept, output[-3000:]
    resumed = run_suite(tmp_path, "intr", "--task-list", str(task_file), "--resume", *AHEAD)
    assert resumed.rc == 0, resumed.output[-3000:]
    for p, mtime in kept.items():
        assert p.stat().st_mtime_ns == mtime, f"{p} was run again"
    assert {cid: r["outcome"] for cid, r in resumed.results().items()} == dict.fromkeys(
        ids, "passed"
    )
