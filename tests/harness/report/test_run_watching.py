"""Watching real suite runs (child ``pytest tests/osworld`` on real local desktops with the real
reference endpoint): progress lines with an ETA, per-case result lines, the ``--watch`` page in
headless Chromium, an interrupted run's summary and its resume, the files and screen kept from
a failing table task (each sample in its own work folder), earlier attempts kept, and
``--check-evaluators`` labelled as a check. No timing assertions."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import stat
from pathlib import Path

import pytest
from test_watch import chromium_page, need_chromium

from tests.harness.helpers.polling import wait_for
from tests.harness.helpers.suite import (
    CHAOS,
    ROOT,
    kill_group,
    run_suite,
    start_suite,
    task_list_file,
)

pytestmark = pytest.mark.desktop

TWO = {"os": ["os-create-report-file"], "text_editor": ["text-editor-sort-names"]}
TABLE = {"libreoffice_calc": ["calc-line-totals"]}
CHAOS_ENV = {"PYTHONPATH": str(ROOT)}


def test_parallel_run_progress_eta_result_lines_and_watch_page(tmp_path: Path) -> None:
    sync_api = need_chromium()
    log = tmp_path / "child.log"
    # -n 3 for 2 cases: one worker too many (and, on a 2-core machine, above the cores);
    # -v twice: the helper passes -q
    # each model answer takes 1 s so that the page can be looked at while cases run
    child = start_suite(
        tmp_path,
        "w1",
        "--task-list",
        str(task_list_file(tmp_path, TWO)),
        "-n",
        "3",
        "-v",
        "-v",
        "--watch",
        "--reference-faults",
        "delay=1",
        log=log,
    )
    try:
        url = str(
            wait_for(
                lambda: (
                    (m := re.search(r"watch the run: (http://127\.0\.0\.1:\d+/)", log.read_text()))
                    and m.group(1)
                ),
                "the watch URL in the header",
                120,
            )
        )

        def a_screen() -> bool:
            from urllib.request import urlopen

            with urlopen(url + "status.json", timeout=10) as r:
                status = json.loads(r.read())
            return any(w.get("screen_url") and w.get("phase") == "agent" for w in status["workers"])

        wait_for(a_screen, "a running case with a screen on the watch page", 240)
        with sync_api.sync_playwright() as pw:
            browser, page = chromium_page(pw)
            try:
                page.goto(url)
                page.wait_for_function(
                    "[...document.querySelectorAll('.worker img')].some(i => i.naturalWidth > 0)",
                    timeout=30_000,
                )
                text = page.inner_text("#workers")
                assert "step:" in text and "thought:" in text
                assert " / 2" in page.inner_text("#progress")
                page.screenshot(path=str(tmp_path / "watch.png"))
            finally:
                browser.close()
        assert child.wait(timeout=600) == 0, log.read_text()[-3000:]
    finally:
        kill_group(child)
    out = log.read_text()
    for case in ("os/os-create-report-file", "text_editor/text-editor-sort-names"):
        assert re.search(
            rf"^{re.escape(case)}  PASSED  score 1\.00  steps \d+  [\d.]+ s$", out, re.M
        ), out[-3000:]
    assert re.search(
        r"^\[progress 1/2\] \| passed 1, failed 0, unscored 0 \| mean 100\.0% \| "
        r"elapsed \d+s \| ETA \d+",
        out,
        re.M,
    ), out[-3000:]
    assert "[progress 2/2] | passed 2, failed 0, unscored 0 | mean 100.0%" in out
    assert "WARNING: -n 3 starts 3 workers for 2 selected case(s): 1 will stay idle" in out
    if (os.cpu_count() or 1) < 3:
        assert f"WARNING: -n 3 is above this machine's {os.cpu_count()} CPU core(s)" in out
    run = json.loads((tmp_path / "w1" / "summary.json").read_text())["run"]
    assert run["interrupted"] is False and run["not_run"] == 0 and run["selected"] == 2
    assert run["wall_s"] > 0 and "wall-clock" in out and "sum of case times" in out
    assert not (tmp_path / "w1" / ".watch").exists()
    assert (tmp_path / "watch.png").stat().st_size > 10_000


def test_interrupted_run_says_so_and_resume_lists_what_it_reused(tmp_path: Path) -> None:
    tasks = {**TWO, "libreoffice_calc": ["calc-average-score"]}
    task_file = task_list_file(tmp_path, tasks)
    args = ("--task-list", str(task_file), "-n0", "--order", "collected")
    log = tmp_path / "child.log"
    child = start_suite(tmp_path, "intr", *args, "--reference-faults", "delay=3", log=log)
    try:
        first = wait_for(
            lambda: [
                p
                for p in (tmp_path / "intr").rglob("result.json")
                if json.loads(p.read_text())["outcome"] == "passed"
            ],
            "a first scored result",
            300,
        )
        kill_group(child, signal.SIGINT)
        child.wait(timeout=180)
    finally:
        kill_group(child)
    out = log.read_text()
    summary = json.loads((tmp_path / "intr" / "summary.json").read_text())
    run = summary["run"]
    assert run["interrupted"] is True, out[-3000:]
    assert run["selected"] == 3 and run["not_run"] == 3 - summary["total"] >= 1
    assert run["stop_reason"].startswith("interrupted")
    cmd = shlex.split(run["resume_command"])
    assert cmd[-3:] == ["--resume", "--run", "intr"] and "--task-list" in cmd
    assert "INTERRUPTED" in out and f"to finish this run: {run['resume_command']}" in out
    csv_row = (tmp_path / "intr" / "summary.csv").read_text().splitlines()[1]
    assert ",True," in csv_row and "--resume --run intr" in csv_row
    report = (tmp_path / "intr" / "report.html").read_text()
    assert "INTERRUPTED" in report and "--resume --run intr" in report

    done = {json.loads(p.read_text())["case_id"] for p in first}
    resumed = run_suite(tmp_path, "intr", *args, "--resume")
    assert resumed.rc == 0, resumed.output[-3000:]
    again = resumed.summary["run"]
    assert set(again["reused"]) >= done and again["interrupted"] is False
    assert again["not_run"] == 0
    assert f"reused from disk (--resume): {len(again['reused'])}: " in resumed.output
    assert "to finish this run" not in resumed.output


def test_failing_table_task_keeps_what_was_scored(tmp_path: Path) -> None:
    """calc-line-totals stopped after 3 steps (nothing saved) scores 0: each sample keeps the
    screen at scoring time and both files compare_table read, in its own work folder, and the
    replay says which cells differed."""
    sync_api = need_chromium()
    run = run_suite(
        tmp_path,
        "tbl",
        "--task-list",
        str(task_list_file(tmp_path, TABLE)),
        "--max-steps",
        "3",
        "--samples",
        "2",
        "-n",
        "1",
    )
    assert run.rc == 1, run.output[-3000:]
    sources = set()
    for k in (0, 1):
        folder = (
            run.run_dir
            / "reference-policy"
            / "libreoffice_calc"
            / "calc-line-totals"
            / f"sample-{k}"
        )
        result = json.loads((folder / "result.json").read_text())
        assert result["outcome"] == "failed" and result["score"] == 0.0
        assert "D1: result empty, expected 'Line Total'" in result["message"]
        scored = json.loads((folder / "scored.json").read_text())
        roles = {f["role"]: f for f in scored["files"]}
        assert (folder / roles["result"]["path"]).name == "orders.xlsx"
        assert (folder / roles["expected"]["path"]).name == "orders_gold.xlsx"
        sources.add(str(Path(roles["result"]["source"]).parent))
        (explained,) = scored["explanations"]
        assert explained["func"] == "compare_table"
        assert "  D1: result empty, expected 'Line Total'" in explained["lines"]
        assert (folder / "scoring_screen.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        for path in folder.rglob("*"):
            want = 0o755 if path.is_dir() else 0o644
            assert stat.S_IMODE(path.stat().st_mode) == want, path
    assert len(sources) == 2, f"both samples used the same work folder: {sources}"
    assert all(f"sample-{k}" in s for k, s in zip((0, 1), sorted(sources)))
    replay = (
        run.run_dir
        / "reference-policy"
        / "libreoffice_calc"
        / "calc-line-totals"
        / "sample-0"
        / "replay.html"
    )
    with sync_api.sync_playwright() as pw:
        browser, page = chromium_page(pw)
        try:
            page.goto(replay.as_uri())
            section = page.inner_text("details.scored")
            assert "D1: result empty, expected 'Line Total'" in section
            assert "scored/result/orders.xlsx" in section
            page.wait_for_function(
                "document.querySelector('figure.scoring-screen img').naturalWidth > 0",
                timeout=20_000,
            )
        finally:
            browser.close()


def test_rerun_keeps_the_earlier_attempts_files(tmp_path: Path) -> None:
    """The guest server is killed while the agent runs: the rerun passes, and the first
    attempt's error and what its agent recorded stay in attempt-1/."""
    run = run_suite(
        tmp_path,
        "att",
        "--task-list",
        str(task_list_file(tmp_path, {"os": ["os-create-report-file"]})),
        *CHAOS,
        "--infra-rerun-delay",
        "0",
        env={**CHAOS_ENV, "CHAOS_KILL_SERVER": "agent"},
    )
    assert run.rc == 0, run.output[-3000:]
    (result,) = run.results().values()
    assert result["outcome"] == "passed" and result["attempts"] == 2
    (earlier,) = result["earlier_attempts"]
    assert earlier["attempt"] == 1 and earlier["outcome"] == "unscored"
    folder = run.run_dir / result["artifact_dir"] / earlier["folder"]
    first = json.loads((folder / "attempt_result.json").read_text())
    assert first["outcome"] == "unscored" and first["infra_reason"]
    assert (folder / "agent.json").is_file()  # what the agent had recorded stays
    replay = (run.run_dir / result["artifact_dir"] / "replay.html").read_text()
    assert "attempt 1: unscored" in replay  # linked from the final attempt's replay
    if (folder / "traj.jsonl").is_file():  # the desktop died after a first step
        assert (folder / "replay.html").is_file() and "attempt-1/replay.html" in replay
    assert run.summary["total"] == 1, "an earlier attempt must not count as a case"


def test_check_evaluators_run_is_labelled_a_check(tmp_path: Path) -> None:
    run = run_suite(
        tmp_path,
        "chk",
        "--task-list",
        str(task_list_file(tmp_path, {"os": ["os-create-report-file"]})),
        "--check-evaluators",
    )
    assert run.rc == 0, run.output[-3000:]
    assert "EVALUATOR CHECK" in run.output
    assert "check mean" in run.output  # the progress line
    assert run.summary["run"]["check_evaluators"] is True
    report = (run.run_dir / "report.html").read_text()
    assert "evaluator check, not a model score" in report and "EVALUATOR CHECK" in report
