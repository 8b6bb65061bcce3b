"""The benchmark plugin end to end: child ``pytest tests/osworld`` runs on real local desktops with
the real reference endpoint. Faults are real: a dying guest server, an endpoint that answers 5xx
or is killed, a wrong solution. None of them may ever end as a scored 0."""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys
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

CHAOS_ENV = {"PYTHONPATH": str(ROOT)}
FAST = (
    "--infra-reruns",
    "1",
    "--infra-rerun-delay",
    "0",
    "--endpoint-retries",
    "1",
    "--endpoint-backoff",
    "0.05",
)


def _one_task(tmp_path: Path) -> tuple[Path, str, str]:
    tasks = first_smoke_tasks(1, exclude_domains=("chrome",))
    domain, ids = next(iter(tasks.items()))
    return task_list_file(tmp_path, tasks), domain, ids[0]


def _outcomes(run) -> dict[str, str]:
    return {cid: r["outcome"] for cid, r in run.results().items()}


def test_full_builtin_run_passes_and_summary_matches_results(tmp_path: Path) -> None:
    run = run_suite(tmp_path, "full", "-n", "1", timeout=1500)
    assert run.rc == 0, run.output[-4000:]
    results = run.results()
    summary = run.summary
    assert summary["reference_policy"] is True
    assert "REFERENCE POLICY" in run.output
    assert summary["unscored"] == 0
    assert summary["scored"] == len(results) >= 24
    assert all(r["outcome"] == "passed" and r["score"] == 1.0 for r in results.values())
    # the summary is a re-computation of the result files
    mean = sum(r["score"] for r in results.values()) / len(results)
    assert math.isclose(summary["mean_score"], mean)
    for domain, row in summary["by_domain"].items():
        mine = [r for r in results.values() if r["domain"] == domain]
        assert row["scored"] == len(mine)
    # every case has its artifacts
    for r in results.values():
        folder = run.run_dir / r["artifact_dir"]
        for name in ("result.json", "result.txt", "traj.jsonl", "system_prompt.txt", "replay.html"):
            assert (folder / name).is_file(), f"{folder}/{name} missing"
        assert list(folder.glob("step_000.*")), f"no screenshot in {folder}"
        assert r["versions"]["harness_commit"] and r["versions"]["model"] == "reference-policy"
        assert r["timings"]["total_s"] > 0
    assert (run.run_dir / "summary.csv").is_file()
    report = run.run_dir / "report.html"
    assert report.is_file()
    _check_report_in_browser(report, len(results))


def _check_report_in_browser(report: Path, n_cases: int) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path="/usr/bin/chromium",
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(report.as_uri())
        page.wait_for_load_state("load")
        body = page.inner_text("body")
        assert "harness check" in body.lower()
        assert page.locator("svg").count() >= 1
        links = page.locator("a[href$='replay.html']")
        hrefs = {links.nth(i).get_attribute("href") for i in range(links.count())}
        assert len(hrefs) == n_cases  # (an infra rerun adds a row linking the same replay)
        href = links.first.get_attribute("href")
        target = (report.parent / href).resolve()
        assert target.is_file()
        page.screenshot(path=str(report.parent / "report.png"), full_page=False)
        page.goto(target.as_uri())  # the link's target (it may open a new tab when clicked)
        page.wait_for_load_state("load")
        assert "step" in page.inner_text("body").lower()
        assert page.locator("img").count() >= 1
        browser.close()


def test_endpoint_5xx_is_recovered_not_scored_zero(tmp_path: Path) -> None:
    tasks, _, task_id = _one_task(tmp_path)
    run = run_suite(
        tmp_path,
        "r5xx",
        "--task-list",
        str(tasks),
        "--reference-faults",
        "status=503:2",
        "--endpoint-backoff",
        "0.05",
    )
    assert run.rc == 0, run.output[-3000:]
    (result,) = run.results().values()
    assert result["outcome"] == "passed" and result["attempts"] == 1


def test_endpoint_always_failing_is_unscored_after_reruns(tmp_path: Path) -> None:
    tasks, _, task_id = _one_task(tmp_path)
    run = run_suite(
        tmp_path, "rdown", "--task-list", str(tasks), "--reference-faults", "status=503:1000", *FAST
    )
    assert run.rc == 0, run.output[-3000:]  # xfail is not a failure of the run
    (result,) = run.results().values()
    assert result["outcome"] == "unscored" and result["score"] is None
    assert result["infra_category"] == "model_endpoint"
    assert result["attempts"] == 2
    assert "infra: model_endpoint" in run.output
    assert not (run.run_dir / result["artifact_dir"] / "result.txt").exists()
    assert run.summary["unscored"] == 1 and run.summary["scored"] == 0
    assert run.summary["by_infra_category"] == {"model_endpoint": 1}


def test_endpoint_killed_mid_task_is_unscored(tmp_path: Path) -> None:
    """A separate reference-endpoint process (attach mode, --base-url) is killed mid-task."""
    from computer_env.osworld.builtin import load_solutions
    from computer_env.osworld.catalog.tasks import load_builtin_tasks

    tasks, _, task_id = _one_task(tmp_path)
    task = next(t for t in load_builtin_tasks() if t.id == task_id)
    sol = tmp_path / "solutions.json"
    sol.write_text(json.dumps({task.instruction: load_solutions()[task_id]}))
    port = _free_port()
    endpoint = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "holo_agent.reference",
            "--port",
            str(port),
            "--solutions",
            str(sol),
            "--faults",
            "delay=1.5",
        ],
        cwd=ROOT,
        start_new_session=True,
    )
    try:
        _wait_http(f"http://127.0.0.1:{port}/v1/models")
        child = start_suite(
            tmp_path,
            "rkill",
            "--task-list",
            str(tasks),
            "--base-url",
            f"http://127.0.0.1:{port}/v1",
            *FAST,
            log=tmp_path / "child.log",
        )
        run_dir = tmp_path / "rkill"
        wait_for(
            lambda: any(p.read_text().strip() for p in run_dir.rglob("traj.jsonl")),
            "the first recorded step",
            120,
        )
        kill_group(endpoint)  # type: ignore[arg-type]
        child.wait(timeout=300)
    finally:
        kill_group(endpoint)  # type: ignore[arg-type]
    out = (tmp_path / "child.log").read_text()
    results = json.loads(next((tmp_path / "rkill").rglob("result.json")).read_text())
    assert results["outcome"] == "unscored", out[-3000:]
    assert results["infra_category"] == "model_endpoint"
    assert results["score"] is None
    # unscored keeps what the attempt learnt before the endpoint died: its steps, tokens,
    # timings and the model it talked to (the rerun found the endpoint gone from the start)
    first = results
    if results["attempts"] > 1:
        (earlier, *_) = results["earlier_attempts"]
        first = json.loads(
            (
                run_dir / results["artifact_dir"] / earlier["folder"] / "attempt_result.json"
            ).read_text()
        )
    assert first["outcome"] == "unscored" and first["infra_category"] == "model_endpoint"
    assert first["steps"] >= 1 and first["tokens"]["prompt"] > 0, first
    assert first["timings"]["agent_s"] is not None and first["timings"]["setup_s"] is not None
    # the reset (getting a fresh desktop) is a part of the set-up, recorded on its own
    assert 0 <= first["timings"]["reset_s"] <= first["timings"]["setup_s"], first["timings"]
    assert first["versions"]["model"] and first["actions"]["gui"] >= 1


def test_vm_server_killed_mid_task_is_rerun_on_a_new_desktop(tmp_path: Path) -> None:
    tasks, _, task_id = _one_task(tmp_path)
    run = run_suite(
        tmp_path,
        "rvm",
        "--task-list",
        str(tasks),
        *CHAOS,
        "--infra-rerun-delay",
        "0",
        env={**CHAOS_ENV, "CHAOS_KILL_SERVER": "agent"},
    )
    assert run.rc == 0, run.output[-3000:]
    (result,) = run.results().values()
    assert result["outcome"] == "passed" and result["attempts"] == 2, result
    (earlier,) = result["earlier_attempts"]
    assert earlier["outcome"] == "unscored" and earlier["infra_category"] == "vm_unreachable"
    first = json.loads(
        (
            run.run_dir / result["artifact_dir"] / earlier["folder"] / "attempt_result.json"
        ).read_text()
    )
    assert first["steps"] >= 1 and first["tokens"]["prompt"] > 0, first  # killed after step 1


def test_evaluator_getter_failure_is_infra_not_zero(tmp_path: Path) -> None:
    tasks, _, task_id = _one_task(tmp_path)
    run = run_suite(
        tmp_path,
        "reval",
        "--task-list",
        str(tasks),
        *CHAOS,
        "--infra-rerun-delay",
        "0",
        env={**CHAOS_ENV, "CHAOS_KILL_SERVER": "evaluate"},
    )
    assert run.rc == 0, run.output[-3000:]
    (result,) = run.results().values()
    # first attempt unscored (evaluator), the rerun on a replaced desktop scores it
    assert result["outcome"] == "passed" and result["attempts"] == 2, result


def test_lf_reruns_exactly_failed_and_unscored(tmp_path: Path) -> None:
    tasks = first_smoke_tasks(3, exclude_domains=("chrome",))
    assert len(tasks) == 3
    (d_ok, (ok,)), (d_bad, (bad,)), (d_un, (un,)) = tasks.items()
    task_file = task_list_file(tmp_path, tasks)
    cache = ("-o", f"cache_dir={tmp_path / 'cache'}")
    env = {**CHAOS_ENV, "CHAOS_WRONG": bad, "CHAOS_UNREACHABLE": un}
    first = run_suite(
        tmp_path, "lf1", "--task-list", str(task_file), *CHAOS, *cache, *FAST, env=env
    )
    assert _outcomes(first) == {
        f"{d_ok}/{ok}": "passed",
        f"{d_bad}/{bad}": "failed",
        f"{d_un}/{un}": "unscored",
    }, first.output[-3000:]
    assert first.results()[f"{d_bad}/{bad}"]["score"] == 0.0
    second = run_suite(
        tmp_path,
        "lf2",
        "--task-list",
        str(task_file),
        *CHAOS,
        *cache,
        "--lf",
        "--collect-only",
        env=env,
    )
    selected = {
        line.split("[", 1)[1].rstrip("]")
        for line in second.output.splitlines()
        if "test_osworld[" in line
    }
    assert selected == {f"{d_bad}/{bad}", f"{d_un}/{un}"}, second.output[-3000:]


def test_resume_after_sigkill_finishes_the_rest(tmp_path: Path) -> None:
    tasks = first_smoke_tasks(3, exclude_domains=("chrome",))
    task_file = task_list_file(tmp_path, tasks)
    child = start_suite(
        tmp_path, "res", "--task-list", str(task_file), "-n0", log=tmp_path / "child.log"
    )
    first = wait_for(
        lambda: [
            p
            for p in (tmp_path / "res").rglob("result.json")
            if json.loads(p.read_text())["outcome"] == "passed"
        ],
        "a first scored result",
        300,
    )
    kill_group(child)
    child.wait(timeout=60)
    kept = {p: p.stat().st_mtime_ns for p in first}
    resumed = run_suite(tmp_path, "res", "--task-list", str(task_file), "--resume", "-n", "1")
    assert resumed.rc == 0, resumed.output[-3000:]
    for p, mtime in kept.items():
        assert p.stat().st_mtime_ns == mtime, f"{p} was run again"
    # the summary counts the kept results with the new ones: what a clean run of the three
    # would say (the reference policy passes each)
    summary = resumed.summary
    assert (summary["scored"], summary["unscored"]) == (3, 0), summary
    assert summary["mean_score"] == 1.0 and summary["pass_rate"] == 1.0, summary
    assert {d: row["scored"] for d, row in summary["by_domain"].items()} == dict.fromkeys(tasks, 1)


def test_interrupting_a_parallel_run_leaves_no_desktop(tmp_path: Path) -> None:
    tag = uuid.uuid4().hex
    tasks = first_smoke_tasks(4)
    child = start_suite(
        tmp_path,
        "intr",
        "--task-list",
        str(task_list_file(tmp_path, tasks)),
        "-n",
        "4",
        env={"HOLO_TEST_TAG": tag},
        log=tmp_path / "child.log",
    )
    seen: dict[tuple[int, int], str] = {}

    def note() -> dict[tuple[int, int], str]:
        # an exiting process (a zombie) reads an empty command line: keep what it was
        tree = run_tree(tag)
        seen.update({k: v for k, v in tree.items() if v.strip() or k not in seen})
        return tree

    def sandboxes_up() -> bool:  # judged on the scan that was noted (one scan, not two)
        return sum(cmd.startswith("Xvfb") for cmd in note().values()) >= 2

    try:
        wait_for(
            sandboxes_up, "two sandboxed desktops (their X servers) to start", 240, interval=0.2
        )
        note()
        kill_group(child, signal.SIGINT)  # Ctrl-C reaches the whole foreground group

        def stopped() -> bool:
            note()
            return child.poll() is not None

        wait_for(stopped, "the run to stop on Ctrl-C", 120)
    finally:
        kill_group(child)
    log = (tmp_path / "child.log").read_text()
    assert any("Xvfb" in c for c in seen.values()), seen
    try:
        wait_for(lambda: not still_alive(seen), "every process of the run to end", 30, interval=0.2)
    except AssertionError:
        raise AssertionError(f"left behind: {still_alive(seen)}\n{log[-3000:]}") from None
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    worker_pids = {str(pid) for (pid, _), cmd in seen.items() if "pytest" in cmd or "xdist" in cmd}
    leftover = [
        line for line in netns.splitlines() if line.split()[0].rsplit("-", 1)[-1] in worker_pids
    ]
    assert leftover == [], leftover


def test_dead_base_url_is_a_configuration_error_before_any_task(tmp_path: Path) -> None:
    port = _free_port()
    run = run_suite(tmp_path, "dead", "--base-url", f"http://127.0.0.1:{port}/v1", timeout=120)
    assert run.rc not in (0, 1), run.output[-2000:]
    assert "does not answer" in run.output
    assert not list(tmp_path.rglob("result.json"))


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_http(url: str, timeout: float = 30) -> None:
    import httpx

    def up() -> bool:
        try:
            return httpx.get(url, timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    wait_for(up, url, timeout)


def _task(task_id: str, expected: str) -> dict:
    return {
        "id": task_id,
        "snapshot": "os",
        "instruction": f"Check evaluator soundness ({task_id}).",
        "source": "holo-bench test",
        "config": [],
        "trajectory": "trajectories/",
        "related_apps": ["os"],
        "evaluator": {
            "func": "exact_match",
            "result": {"type": "vm_command_line", "command": ["printf", "leak"]},
            "expected": {"type": "rule", "rules": {"expected": expected}},
        },
    }


def test_check_evaluators_flags_a_reward_leak_and_passes_sound_tasks(tmp_path: Path) -> None:
    root = tmp_path / "evaluation_examples"
    (root / "examples" / "os").mkdir(parents=True)
    (root / "test_all.json").write_text(json.dumps({"os": ["leaky", "sound"]}))
    (root / "examples" / "os" / "leaky.json").write_text(json.dumps(_task("leaky", "leak")))
    (root / "examples" / "os" / "sound.json").write_text(json.dumps(_task("sound", "nope")))
    run = run_suite(tmp_path, "chk", "--osworld-root", str(root), "--check-evaluators")
    assert run.rc == 1, run.output[-3000:]
    outcomes = _outcomes(run)
    # no oracle for "sound": its leak check passed, and that is all it says (never a 100 %)
    assert outcomes == {"os/leaky": "failed", "os/sound": "skipped"}, run.output[-3000:]
    assert "reward leak" in run.results()["os/leaky"]["message"]
    assert run.results()["os/sound"]["message"].startswith("leak check only")
    assert run.results()["os/sound"]["score"] is None
