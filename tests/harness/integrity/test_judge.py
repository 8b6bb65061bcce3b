"""The judge model as second opinion (SEAgent): verdict parsing, the agreement figures, the
``openai``-based client against the real reference endpoint's judge mode over HTTP, and a real
suite run whose judge endpoint is down (the rule score stays, the judgement is unscored)."""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path
from typing import Any

import pytest

from fixtures.cases.records.results import TaskResult
from fixtures.report.tables.protocol_summary import agreement
from holo_agent.judge import JudgeClient, JudgeParseError, parse_verdict
from holo_agent.reference import ReferenceEndpoint
from tests.harness.helpers.suite import run_suite, task_list_file

SOLUTION: list[dict[str, Any]] = [
    {"note": None, "thought": "t", "tool_call": {"tool_name": "press_key", "key": "enter"}},
    {"note": None, "thought": "t", "tool_call": {"tool_name": "answer", "content": "DONE"}},
]
PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00"
    b"\x00\x90wS\xde\x00\x00\x00\x0cIDATx\x9cc\xf8\xcf\xc0\x00\x00\x03\x01\x01\x00\xc9\xfe"
    b"\x92\xef\x00\x00\x00\x00IEND\xaeB`\x82"
)


def test_parse_verdict_forms() -> None:
    assert parse_verdict('{"verdict": "success", "reason": "ok"}') == (1, "ok")
    assert (
        parse_verdict('thinking...\n```json\n{"verdict": "failure", "reason": "no"}\n```')[0] == 0
    )
    assert parse_verdict('{"verdict": true}')[0] == 1
    for bad in ("", "the task is done", '{"verdict": "maybe"}'):
        with pytest.raises(JudgeParseError):
            parse_verdict(bad)


def _result(domain: str, rule: float, verdict: int | None, status: str = "scored") -> TaskResult:
    return TaskResult(
        benchmark="osworld",
        case_id=f"{domain}/t{rule}{verdict}",
        domain=domain,
        task_id="t",
        outcome="passed" if rule >= 1 else "failed",
        score=rule,
        threshold=1.0,
        judge={"status": status, "verdict": verdict, "rule_score": rule},
    )


def test_agreement_confusion_matrix() -> None:
    rs = [
        _result("os", 1, 1),
        _result("os", 1, 1),
        _result("os", 0, 1),
        _result("os", 0, 0),
        _result("os", 1, 0),
        _result("chrome", 0, 0),
        _result("os", 1, None, "unscored"),
    ]
    a = agreement(rs)
    assert (a.tp, a.fp, a.tn, a.fn, a.judged, a.unscored) == (2, 1, 2, 1, 6, 1)
    assert a.precision == pytest.approx(2 / 3) and a.npv == pytest.approx(2 / 3)
    assert a.agreement == pytest.approx(4 / 6)
    chrome = agreement([r for r in rs if r.domain == "chrome"])
    assert chrome.precision is None and chrome.npv == 1.0


def test_judge_client_against_the_reference_judge_over_http() -> None:
    with ReferenceEndpoint({"press enter": SOLUTION}) as ep:
        judge = JudgeClient(ep.url)  # model: the first one /v1/models lists is the policy ...
        judge.model = "reference-judge"  # ... the judge mode has its own model name
        actions = [{"step": i, "tool_call": s["tool_call"]} for i, s in enumerate(SOLUTION)]
        good = judge.judge("press enter", actions, "answered", [(PNG, "image/png")])
        assert good.status == "scored" and good.verdict == 1, good
        bad = judge.judge("press enter", actions[1:], "answered", [(PNG, "image/png")])
        assert bad.status == "scored" and bad.verdict == 0 and "differs" in bad.reason
        body = ep.requests_seen[-1]
        assert body["model"] == "reference-judge" and body["messages"][0]["role"] == "system"
        assert any(p.get("type") == "image_url" for p in body["messages"][1]["content"])
        judge.close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_judge_endpoint_down_is_an_unscored_judgement() -> None:
    judge = JudgeClient(f"http://127.0.0.1:{_closed_port()}/v1", "m", timeout=5, max_retries=0)
    answer = judge.judge("x", [], "answered", [])
    assert answer.status == "unscored" and answer.verdict is None and "Connection" in answer.error


@pytest.mark.desktop
@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("bwrap"),
    reason="the local sandbox needs root and bubblewrap",
)
def test_suite_judge_down_keeps_the_rule_score(tmp_path: Path) -> None:
    tasks = task_list_file(tmp_path, {"os": ["os-create-report-file"]})
    run = run_suite(
        tmp_path / "results",
        "judge-down",
        "-n",
        "0",
        "--task-list",
        str(tasks),
        "--judge-url",
        f"http://127.0.0.1:{_closed_port()}/v1",
        "--judge-model",
        "j",
        "--judge-timeout",
        "5",
        "--score-by",
        "judge",
    )
    assert run.rc == 0, run.output[-3000:]
    r = run.results()["os/os-create-report-file"]
    assert r["outcome"] == "passed" and r["score"] == 1.0  # the rule score, intact
    assert r["judge"]["status"] == "unscored" and r["judge"]["rule_score"] == 1.0
    assert r["judge"]["score_by"].startswith("rule")
    assert run.summary["protocols"]["judge"]["unscored"] == 1
    assert "1 unscored judgement(s)" in run.output


def test_score_by_judge_needs_a_judge(tmp_path: Path) -> None:
    run = run_suite(tmp_path / "results", "x", "--score-by", "judge", "--collect-only")
    assert run.rc != 0 and "--score-by judge needs --judge-url" in run.output


def test_reference_judge_accepts_a_declared_infeasible_solution() -> None:
    from holo_agent.judge import build_judge_messages
    from holo_agent.reference.judge import judge_verdict

    infeasible = [
        {
            "note": None,
            "thought": "t",
            "tool_call": {"tool_name": "answer", "content": "INFEASIBLE: no such device"},
        }
    ]
    actions = [{"step": 0, "tool_call": infeasible[0]["tool_call"]}]

    def verdict(end: str, acts: list) -> str:
        body = {"messages": build_judge_messages("pair it", acts, end, [])}
        return judge_verdict(body, {"pair it": infeasible})["verdict"]

    assert verdict("infeasible", actions) == "success"
    assert verdict("max_steps", actions) == "failure"
    assert verdict("infeasible", []) == "failure"


def test_score_by_judge_replaces_the_rule_score_and_keeps_it_recorded(tmp_path: Path) -> None:
    """``judge_case`` against the real reference judge over HTTP; the worker state is reduced to
    what ``judge_case`` reads (settings, the judge client, the phase hook)."""
    from types import SimpleNamespace

    from fixtures.cases.attempt import Attempt
    from fixtures.cases.integrity.judge import judge_case
    from holo_agent.records import StepRecord, Trajectory

    traj = Trajectory(instruction="press enter", end="answered")
    for i, s in enumerate(SOLUTION):
        traj.add(StepRecord(index=i, step=i, time=0.0, latency_s=0.1, tool_call=s["tool_call"]))
    (tmp_path / "step_000.png").write_bytes(PNG)
    with ReferenceEndpoint({"press enter": SOLUTION}) as ep:
        for score_by, want in (("judge", 1.0), ("rule", 0.0)):
            ws: Any = SimpleNamespace(  # a case context, as far as judging reads it
                judge=JudgeClient(ep.url, "reference-judge"),
                phase=lambda *a: None,
                settings=SimpleNamespace(protocols=SimpleNamespace(score_by=score_by)),
            )
            attempt = Attempt(number=1, score=0.0)
            judge_case(ws, tmp_path, "press enter", traj, attempt)
            assert attempt.score == want and attempt.judge is not None
            assert attempt.judge["verdict"] == 1 and attempt.judge["rule_score"] == 0.0
            assert attempt.judge["score_by"] == score_by
            ws.judge.close()
        sent = ep.requests_seen[-1]["messages"][1]["content"]
        assert sum(p["type"] == "image_url" for p in sent) == 1
