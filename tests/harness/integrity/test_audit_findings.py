"""The audit's bookkeeping without desktops: the exploit registry and the hostile endpoint (a
real HTTP server), findings (scored above an honest failure, or dodged into unscored), harness
vs task flaws, the trivial-policy floor, the known-flaws file and the ``--audit`` options."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal

import httpx
import pytest

from fixtures.cases.integrity.audit import format_audit, summarize_audit
from fixtures.cases.integrity.known_flaws import (
    INFEASIBLE_BY_DESIGN,
    known_flaws_for,
    load_known_flaws,
)
from fixtures.cases.records.result_format import Outcome
from fixtures.cases.records.results import TaskResult
from fixtures.report.summary import summarize
from holo_agent.conversation import Conversation
from holo_agent.prompt import build_system_prompt
from holo_agent.reference.exploits import (
    exploits_for,
    hostile_endpoint,
    is_raw,
    model_name,
    registry,
)
from holo_agent.tools import CodeStep, parse_step, step_json_schema

ROOT = Path(__file__).resolve().parents[3]


Benchmark = Literal["osworld", "realtimegym", "synthetic"]


def _result(
    case: str,
    exploit: str,
    score: float | None,
    *,
    bench: Benchmark = "osworld",
    outcome: Outcome | None = None,
    known: list[dict[str, str]] | None = None,
) -> TaskResult:
    outcome = outcome or ("failed" if not score else "passed")
    return TaskResult(
        benchmark=bench,
        case_id=case,
        domain=case.split("/")[0],
        task_id=case.split("/", 1)[1],
        outcome=outcome,
        score=score,
        exploit=exploit,
        known_task_flaw=known,
        group="/".join(case.split("/")[:2]) if bench == "realtimegym" else None,
        infra_category="vm" if outcome == "unscored" else None,
    )


def test_every_exploit_is_valid_holo_steps_and_trivial_ones_cover_every_benchmark() -> None:
    reg = registry()
    assert list(reg)[:3] == ["give-up", "done-at-once", "do-nothing"]
    for exploit in reg.values():
        for i in range(len(exploit.steps) + 1):
            if not is_raw(exploit.step(i)):  # raw text (parser-bombs) is no Step on purpose
                parse_step(json.dumps(exploit.step(i)), code_actions=True)
    for bench in ("osworld", "synthetic", "realtimegym"):
        names = {e.name for e in exploits_for(bench)}
        assert {"give-up", "done-at-once", "do-nothing"} <= names
    assert "path-shadow" in {e.name for e in exploits_for("osworld")}
    assert "path-shadow" not in {e.name for e in exploits_for("realtimegym")}
    assert reg["do-nothing"].step(50)["tool_call"]["tool_name"] == "wait"
    with pytest.raises(KeyError, match="nope"):
        exploits_for("osworld", ["nope"])


def _body(model: str, steps: int) -> dict[str, Any]:
    conv = Conversation(build_system_prompt(code_actions=True), "Any task at all.", 3)
    for i in range(steps + 1):
        if i:
            step = CodeStep.model_validate(registry()["path-shadow"].step(i - 1))
            conv.add_step(step)
            conv.add_tool_output(step.tool_call.tool_name, "ok")
        conv.add_observation(b"\x89PNG\r\n\x1a\n" + b"0" * 32, "image/png")
    return {
        "model": model,
        "messages": conv.messages(),
        "temperature": 0.8,
        "reasoning_effort": "medium",
        "structured_outputs": {"json": step_json_schema(code_actions=True)},
        "chat_template_kwargs": {"enable_thinking": True},
    }


def test_hostile_endpoint_plays_the_exploit_the_model_name_selects() -> None:
    with hostile_endpoint() as ep:
        models = {m["id"]: m for m in httpx.get(f"{ep.url}/models", timeout=5).json()["data"]}
        assert models[model_name("path-shadow")]["metadata"]["harness_check"] is True
        first = httpx.post(
            f"{ep.url}/chat/completions", json=_body(model_name("path-shadow"), 0), timeout=10
        )
        step = json.loads(first.json()["choices"][0]["message"]["content"])
        assert step == registry()["path-shadow"].step(0)
        after = httpx.post(
            f"{ep.url}/chat/completions", json=_body(model_name("path-shadow"), 1), timeout=10
        )
        assert json.loads(after.json()["choices"][0]["message"]["content"])["tool_call"] == {
            "tool_name": "answer",
            "content": "DONE",
        }
        give_up = httpx.post(
            f"{ep.url}/chat/completions", json=_body(model_name("give-up"), 0), timeout=10
        )
        content = json.loads(give_up.json()["choices"][0]["message"]["content"])
        assert content["tool_call"]["content"].startswith("INFEASIBLE")
        unknown = httpx.post(
            f"{ep.url}/chat/completions", json=_body("exploit:nope", 0), timeout=10
        )
        assert unknown.status_code == 404


def test_findings_split_into_harness_and_task_flaws() -> None:
    infeasible = known_flaws_for("osworld", "os/infeasible-one", infeasible=True)
    assert infeasible == [{"exploit": "give-up", "explanation": INFEASIBLE_BY_DESIGN}]
    results = [
        _result("os/a", "do-nothing", 0.0),
        _result("os/a", "give-up", 0.0),
        _result("os/a", "path-shadow", 1.0),  # forged: harness flaw
        _result("os/a", "kill-desktop-server", None, outcome="unscored"),  # dodged
        _result("os/b", "do-nothing", None, outcome="unscored"),  # cannot run here at all
        _result("os/b", "give-up", None, outcome="unscored"),
        _result("os/b", "kill-apps", None, outcome="unscored"),  # not a finding
        _result("os/infeasible-one", "do-nothing", 0.0, known=infeasible),
        _result("os/infeasible-one", "give-up", 1.0, known=infeasible),  # task flaw by design
        _result("os/c", "skip", None, outcome="skipped"),
        _result("freeway/E/seed0", "do-nothing", 0.5, bench="realtimegym", outcome="failed"),
        _result("freeway/E/seed0", "give-up", 0.5, bench="realtimegym", outcome="failed"),
        _result("freeway/E/seed0", "input-flood", 0.75, bench="realtimegym"),  # beats do-nothing
        _result("freeway/M/seed0", "do-nothing", 1.0, bench="realtimegym"),  # idle pass
    ]
    audit = summarize_audit(results)
    assert audit is not None
    found = {(f.case_id, f.exploit): (f.kind, f.flaw) for f in audit.findings}
    assert found == {
        ("os/a", "path-shadow"): ("scored", "harness"),
        ("os/a", "kill-desktop-server"): ("dodged", "harness"),
        ("os/infeasible-one", "give-up"): ("scored", "task"),
        ("freeway/E/seed0", "input-flood"): ("scored", "harness"),
        ("freeway/M/seed0", "do-nothing"): ("scored", "task"),
    }
    osw = next(b for b in audit.benchmarks if b.benchmark == "osworld")
    # os/c was only skipped (cannot run here): not one of the audited tasks
    assert (osw.tasks, osw.hackable_tasks, osw.harness_flaws, osw.task_flaws) == (3, 2, 2, 1)
    assert osw.trivial_floor == {"give-up": 0.5, "done-at-once": None, "do-nothing": 0.0}
    assert osw.floor == 0.5
    game = next(b for b in audit.benchmarks if b.benchmark == "realtimegym")
    assert game.by_task == {"freeway/E/seed0": ["input-flood"], "freeway/M/seed0": ["do-nothing"]}
    assert (game.harness_flaws, game.task_flaws) == (1, 1)
    text = "\n".join(format_audit(audit))
    assert "HARNESS FLAW osworld os/a [path-shadow]" in text and "3 harness flaw(s)" in text
    summary = summarize(results, reference_policy=True)
    assert summary.audit is not None and summary.audit.harness_flaws == 3
    assert (
        summarize(
            [r.model_copy(update={"exploit": None}) for r in results], reference_policy=True
        ).audit
        is None
    )


def test_known_flaws_file_is_valid_and_a_bad_one_names_the_field(tmp_path: Path) -> None:
    for flaw in load_known_flaws():
        assert flaw.exploit in registry(), flaw
    bad = tmp_path / "flaws.json"
    bad.write_text(json.dumps({"flaws": [{"benchmark": "osworld", "case": "x/y"}]}))
    with pytest.raises(ValueError, match=r"flaws.json: field flaws.0.exploit"):
        load_known_flaws(bad)


def _pytest(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", *args, "-p", "no:randomly", "--collect-only", "-q"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_audit_is_a_parametrization_dimension_and_bad_options_are_usage_errors() -> None:
    run = _pytest("tests/synthetic", "--audit", "--audit-exploits", "give-up,path-shadow")
    ids = [line for line in run.stdout.splitlines() if "::" in line]
    assert any(i.endswith("[text_editor/synth-shopping-list/exploit-give-up]") for i in ids), (
        run.stdout[-2000:]
    )
    assert any(i.endswith("[text_editor/synth-shopping-list/exploit-path-shadow]") for i in ids)
    assert len(ids) == 2 * len(
        [p for p in (ROOT / "computer_env/synthetic/examples").iterdir() if p.suffix == ".json"]
    )
    for args, message in (
        (("--audit", "--audit-exploits", "nope"), "--audit-exploits: unknown exploit(s) nope"),
        (("--audit-exploits", "give-up"), "--audit-exploits: needs --audit"),
        (("--audit", "--base-url", "http://127.0.0.1:9/v1"), "--audit: plays the built-in"),
        (("--audit", "--check-evaluators"), "--audit: cannot be combined"),
    ):
        bad = _pytest("tests/osworld", *args)
        assert bad.returncode != 0 and message in bad.stderr + bad.stdout, (args, bad.stderr)
