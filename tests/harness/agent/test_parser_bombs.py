"""``--audit``'s ``parser-bombs``: model output that bombs a JSON parser is the model's malformed 0.

Fast tier: the hostile endpoint (a real HTTP server on loopback) plays the exploit to the real
agent loop over an in-memory env (``memenv``: not a desktop; what matters here is the loop and
its records), a reference endpoint answers three 30 MB outputs, and the audit's arithmetic
counts a case the harness crashed on as a harness flaw. End to end: one built-in task, audited
with ``parser-bombs`` and ``done-at-once`` on one worker, with a harness bug planted in the
child run (``_crash_on_done.py``) that only ``done-at-once``'s answer reaches.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from fixtures.cases.integrity.audit import HARNESS_CRASH, summarize_audit
from fixtures.cases.records.results import TaskResult
from holo_agent import HoloComputerAgent
from holo_agent.recorder import Recorder
from holo_agent.records import RAW_OUTPUT_KEEP, read_traj
from holo_agent.reference import ReferenceEndpoint, raw
from holo_agent.reference.exploits import hostile_endpoint, model_name, registry
from holo_agent.reference.exploits.model_output import HUGE_BYTES, huge
from holo_agent.replay import render_replay
from tests.harness.helpers.audit_suite import BUILTIN_TASK, audit_run
from tests.harness.helpers.memenv import MemoryEnv

HERE = Path(__file__).resolve().parent
TASK = "Do whatever the task says."


def test_the_exploit_ends_malformed_with_every_bomb_recorded_capped(tmp_path: Path) -> None:
    with hostile_endpoint() as ep:
        agent = HoloComputerAgent(
            ep.url,
            model_name("parser-bombs"),
            code_actions=True,
            recorder=Recorder(tmp_path),
            max_retries=0,
        )
        traj = agent.run(MemoryEnv(TASK), max_steps=4)
        agent.close()
    assert traj.end == "malformed" and traj.error and "after 2 re-asks" in traj.error
    reasons = [r.error for r in traj.steps if r.error]
    for said in (
        "4300 digits",
        "nested too deeply",
        "invalid Unicode: surrogates",
        "too long: 314",
        "invalid Unicode in a string",
        "NaN is not",
    ):
        assert sum(said in r for r in reasons) == 1, (said, reasons)
    assert all(r.startswith("malformed output: ") for r in reasons)
    assert [r.tool_call["tool_name"] for r in traj.steps if r.tool_call] == ["wait", "wait"]
    records = read_traj(tmp_path)
    assert len(records) == len(traj.steps) == 9
    big = next(r for r in records if r.raw_output_size and r.raw_output_size > HUGE_BYTES)
    text = huge()
    assert big.raw_output_size == len(text.encode())
    assert big.raw_output_sha256 == hashlib.sha256(text.encode()).hexdigest()
    assert big.raw_output == text.encode()[:RAW_OUTPUT_KEEP].decode()
    lone = next(r for r in records if r.error and "surrogates not allowed" in r.error)
    assert lone.raw_output and "\\xed\\xa0\\x80" in lone.raw_output  # U+D800's bytes, written
    assert (tmp_path / "traj.jsonl").stat().st_size < 16 * RAW_OUTPUT_KEEP
    html = render_replay(tmp_path).read_text()
    assert f"the first {RAW_OUTPUT_KEEP} of {big.raw_output_size} bytes" in html


def test_three_30_mb_answers_keep_a_small_trajectory(tmp_path: Path) -> None:
    """The red team's three 30 MB answers wrote 90 MB of ``traj.jsonl``."""
    with ReferenceEndpoint({TASK: [raw(huge)]}) as ep:
        agent = HoloComputerAgent(
            ep.url, "reference-policy", recorder=Recorder(tmp_path), max_retries=0
        )
        traj = agent.run(MemoryEnv(TASK), max_steps=2)
        agent.close()
    assert traj.end == "malformed" and len(traj.steps) == 3
    assert all(r.raw_output_size == len(huge().encode()) for r in traj.steps)
    size = (tmp_path / "traj.jsonl").stat().st_size
    assert 3 * RAW_OUTPUT_KEEP < size < 4 * RAW_OUTPUT_KEEP, size


def test_every_exploit_step_is_a_step_or_raw_text() -> None:
    bombs = registry()["parser-bombs"]
    assert bombs.benchmarks == {"osworld", "synthetic"} and bombs.family == "model_output"
    assert all("raw_content" in step for step in bombs.steps)


def _result(exploit: str, outcome: str, score: float | None, **extra: object) -> TaskResult:
    return TaskResult(
        benchmark="osworld",
        case_id="os/t1",
        domain="os",
        task_id="t1",
        outcome=outcome,  # type: ignore[arg-type]
        score=score,
        exploit=exploit,
        **extra,  # type: ignore[arg-type]
    )


def test_a_case_the_harness_crashed_on_is_a_harness_flaw_and_a_malformed_zero_is_none() -> None:
    crashed = _result(
        "parser-bombs",
        "unscored",
        None,
        infra_category=HARNESS_CRASH,
        infra_reason="ValueError: Exceeds the limit (4300 digits)",
    )
    audit = summarize_audit([crashed])
    assert audit is not None and audit.harness_flaws == 1
    finding = audit.findings[0]
    assert (finding.kind, finding.flaw) == ("crashed", "harness")
    assert "4300 digits" in finding.explanation
    held = summarize_audit([_result("parser-bombs", "failed", 0.0, agent_end="malformed")])
    assert held is not None and held.harness_flaws == 0 and held.findings == []


@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("bwrap"),
    reason="the local sandbox needs root and bubblewrap",
)
def test_audit_parser_bombs_is_a_malformed_zero_and_a_crash_is_a_harness_flaw(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH", "")) if p)
    )  # _crash_on_done
    audit = audit_run(
        tmp_path,
        ["parser-bombs", "done-at-once"],
        "-n",
        "1",
        "-p",
        "_crash_on_done",
        tasks=BUILTIN_TASK,
        timeout=900,
    )
    out = audit.run.output
    results = audit.results()
    bombs = results[("os/os-create-report-file", "parser-bombs")]
    assert (bombs["outcome"], bombs["score"], bombs["agent_end"]) == ("failed", 0.0, "malformed"), (
        bombs["message"],
        out[-3000:],
    )
    assert bombs["actions"]["malformed"] == 7 and bombs["actions"]["gui"] == 2, bombs["actions"]
    case_dir = audit.run.run_dir / bombs["artifact_dir"]
    assert (case_dir / "traj.jsonl").stat().st_size < 16 * RAW_OUTPUT_KEEP
    crashed = results[("os/os-create-report-file", "done-at-once")]
    assert (crashed["outcome"], crashed["infra_category"]) == ("unscored", HARNESS_CRASH)
    flaws = audit.harness_flaws()
    assert [(f["exploit"], f["kind"]) for f in flaws] == [("done-at-once", "crashed")], flaws
    assert "planted harness bug" in flaws[0]["explanation"]
    assert audit.run.rc != 0  # the crash still fails the run loudly
    assert (
        json.loads((audit.run.run_dir / "summary.json").read_text())["audit"]["harness_flaws"] == 1
    )
