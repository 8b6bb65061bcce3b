"""Watching a run, the parts that need no desktop: the ETA arithmetic, the run state in the
summary (terminal, JSON, CSV, report HTML), the resume command, the explanation of differing
files (real xlsx/ods/docx/csv/text files), one file mode for result files, and the reference
endpoint's command line (``--builtin``, request log with verdicts, plain-text help) over HTTP.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shlex
import signal
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from computer_env.osworld.scoring.explain import explain_files
from fixtures.cases.records.results import TaskResult, Timings, task_dir, write_result
from fixtures.report.progress import Estimator, Tally, case_key_of, format_eta, result_line
from fixtures.report.report_html import summary_html
from fixtures.report.runstate import RunState, format_run_state, not_run_ids
from fixtures.report.summary import Summary, format_summary, summarize, summary_csv
from fixtures.run.resume import is_secret_option, resume_command

ROOT = Path(__file__).resolve().parents[3]


# -- progress -------------------------------------------------------------------------------
def test_case_key_of_node_ids() -> None:
    assert case_key_of("tests/osworld/test_osworld.py::test_osworld[chrome/abc]") == "chrome/abc"
    assert case_key_of("t.py::test[os/x/sample-1]") == "os/x/sample-1"
    assert case_key_of("tests/harness/test_x.py::test_plain") is None


def test_eta_uses_earlier_durations_and_this_runs_pace() -> None:
    est = Estimator({"a/1": 100.0, "a/2": 50.0, "a/3": 10.0}, workers=2)
    # nothing finished yet: earlier runs' times, spread over the two workers
    assert est.eta(["a/1", "a/2"], {}) == pytest.approx(75.0)
    # a case never seen before counts as the median of the known ones (50)
    assert est.eta(["new/9"], {}) == pytest.approx(50.0)
    # a running case counts what is left of it
    assert est.eta([], {"a/1": 30.0}) == pytest.approx(70.0)
    # an overdue case still has a little left (never "ETA 0s" while something runs)
    assert est.eta([], {"a/3": 25.0}) == pytest.approx(1.0)
    # samples share their task's duration
    assert est.expected("a/3/sample-1") == 10.0
    # this run is twice as slow as earlier ones: the rest is expected twice as long
    est.finished("a/3", 20.0)
    assert est.pace == pytest.approx(2.0)
    assert est.eta(["a/1", "a/2"], {}) == pytest.approx(150.0)


def test_eta_without_history_learns_from_finished_cases() -> None:
    est = Estimator({}, workers=1)
    assert est.eta(["x/1"], {}) is None  # nothing known yet
    est.finished("x/0", 12.0)
    assert est.eta(["x/1", "x/2"], {}) == pytest.approx(24.0)


def test_tally_format_and_result_line() -> None:
    t = Tally()
    for outcome, score in (("passed", 1.0), ("failed", 0.0), ("unscored", None), ("failed", 0.5)):
        t.add(outcome, score)
    assert (t.done, t.passed, t.failed, t.unscored) == (4, 1, 2, 1)
    assert t.mean == pytest.approx(0.5)
    assert format_eta(None) == "ETA ?" and format_eta(75) == "ETA 1m15s"
    assert format_eta(3 * 3600 + 120) == "ETA 3h02m" and format_eta(9.4) == "ETA 9s"
    line = result_line("chrome/abc", "failed", 0.0, 7, 12.34)
    assert line == "chrome/abc  FAILED  score 0.00  steps 7  12.3 s"
    assert (
        result_line("os/x", "unscored", None, None, None, reused=True)
        == "os/x  UNSCORED  score —  (reused from disk)"
    )


# -- run state -------------------------------------------------------------------------------
def test_resume_command_keeps_the_selection_and_names_the_run() -> None:
    cmd = resume_command(
        [
            "tests/osworld",
            "-n",
            "2",
            "-k",
            "calc and not chart",
            "--run",
            "old",
            "--lf",
            "--results-dir",
            "/r",
        ],
        "r1",
        argv0=".venv/bin/pytest",
    )
    assert shlex.split(cmd) == [
        ".venv/bin/pytest",
        "tests/osworld",
        "-n",
        "2",
        "-k",
        "calc and not chart",
        "--results-dir",
        "/r",
        "--resume",
        "--run",
        "r1",
    ]
    assert (
        resume_command(["--run=x", "--resume"], "x", argv0="/p/pytest/__main__.py")
        == "python -m pytest --resume --run x"
    )


def test_resume_command_names_no_secret_and_refers_to_the_environment() -> None:
    key, judge, token = "sk-resume-" + "k" * 12, "jk-resume-" + "j" * 12, "tok-" + "t" * 12
    cmd = resume_command(
        [
            "tests/osworld",
            "--api-key",
            key,
            f"--judge-api-key={judge}",
            "--vm-url",
            f"http://h:5000#{token}",
            "--vm-url",
            "http://g:5000",
            "--turn-tokens",
            "4096",
            "--pass-threshold",
            "0.5",
        ],
        "r1",
        argv0="pytest",
    )
    assert key not in cmd and judge not in cmd and token not in cmd
    # the shell fills the key in from the option's environment twin
    assert '--api-key "$HOLO_API_KEY"' in cmd and '--judge-api-key "$HOLO_JUDGE_API_KEY"' in cmd
    assert shlex.split(cmd) == [
        "pytest",
        "tests/osworld",
        "--api-key",
        "$HOLO_API_KEY",
        "--judge-api-key",
        "$HOLO_JUDGE_API_KEY",
        "--vm-url",
        "$HOLO_VM_URLS",
        "--vm-url",
        "http://g:5000",
        "--turn-tokens",
        "4096",
        "--pass-threshold",
        "0.5",
        "--resume",
        "--run",
        "r1",
    ]
    # a key-like option without an environment twin is dropped with its value
    assert (
        resume_command(["--hf-token", token, "-k", "x"], "r", argv0="pytest")
        == "pytest -k x --resume --run r"
    )
    assert is_secret_option("--api-key") and is_secret_option("--db-password")
    assert not is_secret_option("--turn-tokens") and not is_secret_option("--pass-threshold")


def test_not_run_ids_keep_selection_order() -> None:
    assert not_run_ids(["c/3", "a/1", "b/2"], {"a/1"}) == ["c/3", "b/2"]


def _results() -> list[TaskResult]:
    return [
        TaskResult(
            benchmark="osworld",
            case_id=f"os/t{i}",
            domain="os",
            task_id=f"t{i}",
            outcome="passed",
            score=1.0,
            timings=Timings(total_s=40.0),
        )
        for i in range(5)
    ]


def test_interrupted_run_says_so_everywhere() -> None:
    state = RunState(
        interrupted=True,
        stop_reason="interrupted (Ctrl-C)",
        selected=27,
        finished=5,
        not_run=22,
        not_run_ids=[f"os/n{i}" for i in range(22)],
        resume_command="pytest tests/osworld --resume --run r1",
        wall_s=95.0,
    )
    summary = summarize(_results(), reference_policy=True).model_copy(update={"run": state})
    text = format_summary(summary)
    assert "INTERRUPTED (interrupted (Ctrl-C)): 5 of 27 selected cases finished, 22 not run" in text
    assert "to finish this run: pytest tests/osworld --resume --run r1" in text
    assert "not run: os/n0, os/n1" in text and "and 14 more" in text
    # wall-clock vs the sum of case times (5 x 40 s)
    assert "wall-clock 95 s, sum of case times 200 s" in text
    again = Summary.model_validate_json(summary.model_dump_json())
    assert again.run is not None and again.run.not_run == 22 and again.run.interrupted
    row = next(csv.DictReader(io.StringIO(summary_csv(summary))))
    assert (row["level"], row["interrupted"], row["not_run"], row["wall_s"]) == (
        "overall",
        "True",
        "22",
        "95.0",
    )
    assert row["resume_command"] == state.resume_command
    page = summary_html(summary)
    assert "INTERRUPTED" in page and "--resume --run r1" in page


def test_complete_run_and_check_labels() -> None:
    assert format_run_state(RunState(interrupted=False, selected=3, finished=3)) == []
    check = format_run_state(RunState(interrupted=False, check_evaluators=True))
    assert check and "EVALUATOR CHECK" in check[0]
    reused = format_run_state(RunState(interrupted=False, reused=["os/a", "os/b"]))
    assert reused == ["reused from disk (--resume): 2: os/a, os/b"]


# -- explain --------------------------------------------------------------------------------
def test_explain_xlsx_names_rule_sheet_and_cells(tmp_path: Path) -> None:
    import openpyxl

    for name, d1 in (("result.xlsx", None), ("expected.xlsx", "Line Total")):
        wb = openpyxl.Workbook()
        ws = wb.active
        ws.title = "orders"
        ws.append(["Product", "Qty", "Price", d1])
        ws.append(["Pencil", 12, 2, 24 if d1 else None])
        ws.append(["Marker", 8, 3.0, 24.0 if d1 else None])
        wb.save(tmp_path / name)
    lines = explain_files(
        tmp_path / "result.xlsx",
        tmp_path / "expected.xlsx",
        options={"rules": [{"type": "sheet_data", "sheet_idx0": "RI0", "sheet_idx1": "EI0"}]},
    )
    assert (
        lines[0] == "rule 1 (sheet_data) RI0 vs EI0: sheet 'orders' vs 'orders': 3 cell(s) differ"
    )
    assert lines[1:] == [
        "  D1: result empty, expected 'Line Total'",
        "  D2: result empty, expected 24",
        "  D3: result empty, expected 24",
    ]
    same = explain_files(tmp_path / "expected.xlsx", tmp_path / "expected.xlsx")
    assert same == ["sheet 'orders' vs expected 'orders': all cells equal"]
    missing = explain_files(
        tmp_path / "result.xlsx",
        tmp_path / "expected.xlsx",
        options={"rules": [{"type": "sheet_data", "sheet_idx0": "RI1", "sheet_idx1": "EI0"}]},
    )
    assert missing == ["rule 1 (sheet_data) RI1 vs EI0: sheet RI1 does not exist"]


def test_explain_ods_docx_csv_and_text(tmp_path: Path) -> None:
    import docx
    import pandas as pd

    pd.DataFrame([["a", 1], ["b", 2]]).to_excel(
        tmp_path / "r.ods", engine="odf", index=False, header=False
    )
    pd.DataFrame([["a", 1], ["b", 3]]).to_excel(
        tmp_path / "e.ods", engine="odf", index=False, header=False
    )
    ods = explain_files(tmp_path / "r.ods", tmp_path / "e.ods")
    assert ods[-1] == "  B2: result 2, expected 3", ods

    for name, text in (("r.docx", "Approved by Dana"), ("e.docx", "Approved by Dana Whitfield")):
        d = docx.Document()
        d.add_paragraph("Quarterly letter")
        d.add_paragraph(text)
        d.save(str(tmp_path / name))
    lines = explain_files(tmp_path / "r.docx", tmp_path / "e.docx")
    assert lines == [
        "1 paragraph(s) differ",
        "  paragraph 2: result 'Approved by Dana', expected 'Approved by Dana Whitfield'",
    ]

    (tmp_path / "r.csv").write_text("name,price\nkettle,20\n")
    (tmp_path / "e.csv").write_text("name,price\nkettle,25\n")
    assert (
        explain_files(tmp_path / "r.csv", tmp_path / "e.csv")[1]
        == "  B2: result '20', expected '25'"
    )

    (tmp_path / "r.txt").write_text("alpha\nbeta\n")
    (tmp_path / "e.txt").write_text("alpha\ngamma\n")
    diff = explain_files(tmp_path / "r.txt", tmp_path / "e.txt")
    assert diff[0] == "2 line(s) differ (- expected, + result)"
    assert "  -gamma" in diff and "  +beta" in diff

    (tmp_path / "bad.xlsx").write_text("not a workbook")
    broken = explain_files(tmp_path / "bad.xlsx", tmp_path / "bad.xlsx")
    assert broken[0].startswith("could not compare bad.xlsx with bad.xlsx:")


# -- file modes --------------------------------------------------------------------------------
def test_every_result_file_is_0644_and_every_folder_0755(tmp_path: Path) -> None:
    """Whatever the umask: recorder files (steps, agent.json, traj), the replay, result files."""
    from holo_agent import Recorder, render_replay

    old = os.umask(0o077)
    try:
        folder = task_dir(tmp_path / "run", "m", "os/t1")
        write_result(
            folder,
            TaskResult(
                benchmark="osworld",
                case_id="os/t1",
                domain="os",
                task_id="t1",
                outcome="failed",
                score=0.0,
            ),
        )
        rec = Recorder(folder)
        rec.start("do it", "prompt", {"model": "m"})
        rec.save_screenshot(0, b"\x89PNG\r\n\x1a\n" + b"0" * 16, "image/png")
        from holo_agent.records import StepRecord

        rec.record_step(
            StepRecord(index=0, step=0, time=0.0, latency_s=0.1, thought="t", reasoning="r")
        )
        render_replay(folder)
    finally:
        os.umask(old)
    files = [p for p in (tmp_path / "run").rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {
        "result.json",
        "result.txt",
        "agent.json",
        "traj.jsonl",
        "reasoning.jsonl",
        "system_prompt.txt",
        "step_000.png",
        "replay.html",
    }
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o644, path
    for path in [p for p in (tmp_path / "run").rglob("*") if p.is_dir()]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o755, path


# -- the reference endpoint's command --------------------------------------------------------
def test_reference_cli_help_is_plain_text() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "holo_agent.reference", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert "``" not in out and "--builtin" in out and "(default 0: a free one)" in out


def test_reference_cli_serves_builtin_solutions_and_logs_verdicts(tmp_path: Path) -> None:
    from computer_env.osworld.builtin import load_solutions
    from computer_env.osworld.catalog.tasks import load_builtin_tasks
    from tests.harness.helpers.reference_requests import good_body

    task = next(t for t in load_builtin_tasks() if t.id in load_solutions())
    first = load_solutions()[task.id][0]
    log = tmp_path / "stderr.log"
    with open(log, "w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "holo_agent.reference", "--builtin"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            start_new_session=True,
        )
    try:
        url = proc.stdout.readline().strip()
        body = json.loads(
            json.dumps(good_body(1)).replace(
                json.dumps("Open the file and report its first line.")[1:-1],
                json.dumps(task.instruction)[1:-1],
            )
        )
        answer = httpx.post(f"{url}/chat/completions", json=body, timeout=10)
        assert answer.status_code == 200, answer.text
        assert json.loads(answer.json()["choices"][0]["message"]["content"]) == first
        broken = dict(body, structured_outputs=None)
        assert httpx.post(f"{url}/chat/completions", json=broken, timeout=10).status_code == 400
        unknown = httpx.post(f"{url}/chat/completions", json=good_body(1), timeout=10)
        assert unknown.status_code == 404 and "no_solution" in unknown.text
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    text = log.read_text()
    assert "request 1: conforms; task" in text and "step 0 -> " in text, text
    assert "request 2: does not conform (rule" in text, text
    assert "request 3: conforms, but no solution for this task" in text, text


def test_share_modes_fixes_files_other_tools_wrote(tmp_path: Path) -> None:
    """The HTML report and its assets are written by pytest-html with the process umask."""
    from computer_env.atomic import share_modes

    (tmp_path / "assets").mkdir(mode=0o700)
    for path in (tmp_path / "report.html", tmp_path / "assets" / "style.css"):
        path.write_text("x")
        path.chmod(0o600)
    share_modes(tmp_path / "report.html")
    share_modes(tmp_path / "assets")
    assert stat.S_IMODE((tmp_path / "report.html").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "assets").stat().st_mode) == 0o755
    assert stat.S_IMODE((tmp_path / "assets" / "style.css").stat().st_mode) == 0o644
