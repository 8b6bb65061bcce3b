"""The hybrid GUI + code protocol (OS-Helix): the ``run_code`` tool's schema and prompt, its
run inside a real sandboxed desktop (not on the host) with a timeout and cut output, and a real
suite run with ``--code-actions --profile os-helix --judge-url reference`` (the reference
endpoint plays the built-in tasks' code solutions over HTTP; the judge is its judge mode)."""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from computer_env.desktop.client import DesktopClient
from computer_env.osworld import OSWorldComputerEnv, TaskContext, default_vars
from computer_env.osworld.catalog.tasks import parse_task
from holo_agent.code_tool import MODEL_CHARS, run_code_action, truncate
from holo_agent.prompt import build_system_prompt
from holo_agent.records import read_traj
from holo_agent.tools import StepParseError, parse_step, step_json_schema
from tests.harness.helpers.suite import run_suite, task_list_file

needs_sandbox = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("bwrap"),
    reason="the local sandbox needs root and bubblewrap",
)

RUN_CODE = json.dumps(
    {
        "note": None,
        "thought": "count",
        "tool_call": {"tool_name": "run_code", "language": "bash", "code": "ls ~"},
    }
)


def test_run_code_only_when_code_actions_are_on() -> None:
    with pytest.raises(StepParseError, match="run_code"):
        parse_step(RUN_CODE)
    assert parse_step(RUN_CODE, code_actions=True).tool_call.tool_name == "run_code"
    assert "run_code" not in json.dumps(step_json_schema())
    assert "run_code" in json.dumps(step_json_schema(code_actions=True))
    on, off = build_system_prompt(code_actions=True), build_system_prompt()
    assert "run_code(language, code)" in on and "run_code" not in off
    # the prompt's <output_format> is the schema that is sent
    assert json.dumps(step_json_schema(code_actions=True), indent=2) in on
    bad = json.loads(RUN_CODE)
    bad["tool_call"]["language"] = "ruby"
    with pytest.raises(StepParseError, match="language"):
        parse_step(json.dumps(bad), code_actions=True)


def test_truncate_keeps_head_and_tail() -> None:
    text = "HEAD" + "x" * 10_000 + "TAIL"
    cut, was = truncate(text, 1000)
    assert was and cut.startswith("HEAD") and cut.endswith("TAIL") and len(cut) < 1100
    assert "characters cut" in cut
    assert truncate("short", 1000) == ("short", False)


@pytest.fixture(scope="module")
def env() -> Iterator[OSWorldComputerEnv]:
    from computer_env.desktop.providers.local.provider import LocalSandboxProvider

    provider = LocalSandboxProvider(width=800, height=600)
    provider.start()
    try:
        client = DesktopClient.from_handle(provider.handle)
        ctx = TaskContext(
            client=client,
            handle=provider.handle,
            cache_dir=Path("/tmp"),
            vars=default_vars((800, 600)),
            screen=(800, 600),
        )
        task = parse_task(
            {"id": "c", "instruction": "code", "evaluator": {"func": "infeasible"}}, domain="demo"
        )
        yield OSWorldComputerEnv(task, ctx, settle=None)
        client.close()
    finally:
        provider.close()


@pytest.mark.desktop
@needs_sandbox
def test_code_runs_inside_the_desktop_not_on_the_host(env: OSWorldComputerEnv) -> None:
    marker = f"/tmp/holo-code-{uuid.uuid4().hex}"
    text, rec = run_code_action(env, "bash", f"echo made > {marker}; cat {marker}; echo $DISPLAY")
    assert rec["exit_code"] == 0 and not rec["timed_out"] and "made" in rec["output"]
    assert text.startswith("[bash exit code 0]")
    assert env.ctx.client.read_file(marker) == b"made\n"  # the desktop has it ...
    assert not Path(marker).exists()  # ... the host does not (the sandbox has its own /tmp)
    assert env.ctx.action_history[-1].startswith("# run_code bash")
    text, rec = run_code_action(env, "python", "import sys; print('out'); sys.exit('boom')")
    assert rec["exit_code"] == 1 and "out" in rec["output"] and "boom" in rec["output"]
    assert text.startswith("[python exit code 1]")


@pytest.mark.desktop
@needs_sandbox
def test_code_timeout_and_long_output(env: OSWorldComputerEnv) -> None:
    text, rec = run_code_action(env, "bash", "sleep 30", timeout_s=2)
    assert rec["timed_out"] and rec["exit_code"] is None and "timed out" in text
    text, rec = run_code_action(env, "python", "print('A' * 50000 + 'END')", timeout_s=30)
    assert rec["output_chars"] > 50000 and rec["truncated"]
    assert len(text) < MODEL_CHARS + 200 and text.rstrip().endswith("END")
    text, rec = run_code_action(env, "python", "import time; time.sleep(30)", timeout_s=2)
    assert rec["timed_out"] and "timed out" in text


@pytest.mark.desktop
@needs_sandbox
def test_suite_with_code_actions_profile_and_judge(tmp_path: Path) -> None:
    tasks = task_list_file(
        tmp_path, {"os": ["os-count-error-lines"], "text_editor": ["text-editor-new-config"]}
    )
    run = run_suite(
        tmp_path / "results",
        "code",
        "-n",
        "0",
        "--task-list",
        str(tasks),
        "--code-actions",
        "--profile",
        "os-helix",
        "--judge-url",
        "reference",
    )
    assert run.rc == 0, run.output[-3000:]
    results = run.results()
    assert set(results) == {"os/os-count-error-lines", "text_editor/text-editor-new-config"}
    for r in results.values():
        assert r["outcome"] == "passed" and r["score"] == 1.0
        assert r["protocol"]["profile"] == "os-helix" and r["protocol"]["code_actions"]
        assert r["protocol"]["max_steps"] == 50 and r["protocol"]["image_budget"] == 8
        assert r["protocol"]["image_size"] == [1504, 832]
        assert r["actions"]["code"] == 1 and r["actions"]["malformed"] == 0
        assert r["judge"]["status"] == "scored" and r["judge"]["verdict"] == 1
        assert r["judge"]["rule_score"] == 1.0 and r["judge"]["score_by"] == "rule"
    case = run.run_dir / "reference-policy" / "text_editor" / "text-editor-new-config"
    steps = read_traj(case)
    code = [s.code_run for s in steps if s.code_run]
    assert len(code) == 1 and "port=8080$" in code[0].output
    assert all(s.image_size == (1504, 832) for s in steps)  # the profile's resolution
    page = (case / "replay.html").read_text()
    assert "code (bash) · exit code 0" in page and "judge (reference-judge): done" in page
    p = run.summary["protocols"]
    assert p["code_actions"] == 2 and p["gui_actions"] == 4 and p["malformed_calls"] == 0
    assert p["code_action_ratio"] == pytest.approx(2 / 6)
    assert p["steps_per_task"] == pytest.approx(3.0)
    assert list(p["five_groups"]) == ["OS", "Office", "Daily", "Professional", "Workflow"]
    assert p["five_groups"]["OS"]["passed"] == 1 and p["five_groups"]["Professional"]["n"] == 0
    assert p["judge"]["tp"] == 2 and p["judge"]["precision"] == 1.0
    assert "code-action ratio 33.3%" in run.output and "five groups" in run.output
    assert "judge reference-judge vs rule evaluator" in run.output
    report = (run.run_dir / "report.html").read_text()
    assert "<h3>Protocols</h3>" in report and "code-action ratio 33.3%" in report
