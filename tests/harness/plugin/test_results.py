"""Result files: round trip, layout, atomic writes, result.txt rules, secret redaction."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import ValidationError

from computer_env.atomic import atomic_write_json
from computer_env.procs import set_pdeathsig
from fixtures.cases.records.redact import REDACTED, redact, register_secret
from fixtures.cases.records.results import (
    NetCheck,
    TaskResult,
    Timings,
    Tokens,
    Versions,
    harness_commit,
    load_results,
    read_result,
    scan_results,
    task_dir,
    write_result,
)


def make_result(**overrides: object) -> TaskResult:
    base: dict[str, object] = dict(
        benchmark="osworld",
        case_id="chrome/0d8b7de3-e8de-4d86-b9fd-dd2dce58a217",
        domain="chrome",
        task_id="0d8b7de3-e8de-4d86-b9fd-dd2dce58a217",
        instruction="Open the settings page",
        outcome="passed",
        score=1.0,
        threshold=1.0,
        evaluator=[{"func": "exact_match", "score": 1.0, "result": "a", "expected": "a"}],
        timings=Timings(setup_s=1.5, settle_s=0.5, agent_s=20.0, eval_s=2.0, total_s=24.0),
        steps=7,
        agent_end="answered",
        tokens=Tokens(prompt=1000, completion=200, reasoning=50),
        net_checks=[
            NetCheck(
                when="before",
                ok=True,
                detail="200 OK",
                at=datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC),
            )
        ],
        versions=Versions(
            harness_commit="abc123",
            model="Hcompany/Holo3.1-7B",
            endpoint="http://127.0.0.1:8000/v1",
            provider="local",
            image="local",
            prompt="v1",
        ),
        started_at=datetime(2025, 1, 2, 3, 4, 0, tzinfo=UTC),
        finished_at=datetime(2025, 1, 2, 3, 4, 30, tzinfo=UTC),
    )
    base.update(overrides)
    return TaskResult.model_validate(base)


def test_round_trip(tmp_path: Path) -> None:
    result = make_result(sample=2, raw_score=17.0, group="g")
    folder = task_dir(tmp_path, "m", result.case_id, 2)
    write_result(folder, result)
    assert read_result(folder) == result
    assert load_results(tmp_path) == [result]
    assert json.loads((folder / "result.json").read_text())["net_checks"][0]["at"].startswith(
        "2025-01-02T03:04:05"
    )


def test_read_result_missing_is_none(tmp_path: Path) -> None:
    assert read_result(tmp_path / "nothing") is None
    assert load_results(tmp_path / "nothing") == []


def test_task_dir_layout(tmp_path: Path) -> None:
    assert task_dir(tmp_path, "Hcompany/Holo3.1-7B", "chrome/abc") == (
        tmp_path / "Hcompany_Holo3.1-7B" / "chrome" / "abc"
    )
    assert task_dir(tmp_path, "m", "freeway/H/seed3", 0) == (
        tmp_path / "m" / "freeway" / "H" / "seed3" / "sample-0"
    )


@pytest.mark.parametrize(
    "model,case_id", [("../..", "../../etc/passwd"), ("m", "/abs/..//x"), (".", "a\\..\\b/..")]
)
def test_task_dir_never_escapes(tmp_path: Path, model: str, case_id: str) -> None:
    path = task_dir(tmp_path, model, case_id)
    assert path.resolve().is_relative_to(tmp_path.resolve())
    assert all(part not in ("", ".", "..") for part in path.relative_to(tmp_path).parts)


def test_outcome_and_score_must_agree() -> None:
    with pytest.raises(ValidationError):
        make_result(outcome="passed", score=None)
    with pytest.raises(ValidationError):
        make_result(outcome="unscored", score=0.0)
    with pytest.raises(ValidationError):
        make_result(unknown_field=1)


def test_result_txt_only_when_scored(tmp_path: Path) -> None:
    write_result(tmp_path, make_result(outcome="failed", score=0.25))
    assert (tmp_path / "result.txt").read_text().strip() == "0.25"
    write_result(
        tmp_path,
        make_result(
            outcome="unscored",
            score=None,
            infra_category="network",
            infra_reason="proxy unreachable",
        ),
    )
    assert not (tmp_path / "result.txt").exists(), "a stale score would be read as a 0/1"
    assert read_result(tmp_path).outcome == "unscored"
    write_result(tmp_path, make_result(outcome="skipped", score=None, message="gdrive"))
    assert not (tmp_path / "result.txt").exists()


def test_corrupt_file_is_reported_not_fatal(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    good = make_result()
    write_result(task_dir(tmp_path, "m", "chrome/good"), good)
    bad = task_dir(tmp_path, "m", "chrome/bad") / "result.json"
    bad.parent.mkdir(parents=True)
    bad.write_text('{"benchmark": "osworld", "case_')
    invalid = task_dir(tmp_path, "m", "chrome/invalid") / "result.json"
    invalid.parent.mkdir(parents=True)
    invalid.write_text(json.dumps({"benchmark": "osworld"}))
    scan = scan_results(tmp_path)
    assert scan.results == [good]
    assert sorted(c.path for c in scan.corrupt) == sorted([bad, invalid])
    assert str(bad) in caplog.text and str(invalid) in caplog.text


def test_temp_files_are_never_read(tmp_path: Path) -> None:
    folder = task_dir(tmp_path, "m", "chrome/x")
    write_result(folder, make_result())
    (folder / ".result.json.abc.tmp").write_text("{half")
    assert len(load_results(tmp_path)) == 1
    assert not scan_results(tmp_path).corrupt


WRITER = r"""
import sys
from computer_env.atomic import atomic_write_json
path = sys.argv[1]
payloads = [{"n": i, "blob": str(i) * 400_000} for i in range(2)]
print("ready", flush=True)
i = 0
while True:
    atomic_write_json(path, payloads[i % 2])
    i += 1
"""


def test_killed_writer_never_leaves_half_a_file(tmp_path: Path) -> None:
    """SIGKILL a process that rewrites a 400 kB JSON file in a loop, at varying moments."""
    target = tmp_path / "result.json"
    for attempt in range(12):
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(target)],
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
            preexec_fn=set_pdeathsig,
        )
        try:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "ready"
            time.sleep(0.01 + 0.017 * attempt)  # vary where in the write cycle the kill lands
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        if target.exists():
            data = json.loads(target.read_text())
            assert len(data["blob"]) == 400_000 * len(str(data["n"]))
    assert target.exists(), "the writer never completed a single write"
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != "result.json"]
    assert all(name.startswith(".result.json.") and name.endswith(".tmp") for name in leftovers)


def test_atomic_write_json_replaces(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "x.json"
    atomic_write_json(path, {"a": 1})
    atomic_write_json(path, {"a": 2})
    assert json.loads(path.read_text()) == {"a": 2}
    assert [p.name for p in path.parent.iterdir()] == ["x.json"]


def test_one_atomic_writer_for_agent_and_harness(tmp_path: Path) -> None:
    """The recorder's and the result files' writes are the same code (computer_env.atomic)."""
    import computer_env.atomic as atomic
    import fixtures.cases.records.results
    import holo_agent.recorder

    assert getattr(fixtures.cases.records.results, "atomic_write_json") is atomic.atomic_write_json
    assert holo_agent.recorder.atomic_write is atomic.atomic_write
    text = atomic.atomic_write(tmp_path / "new" / "a.txt", "é")
    raw = atomic.atomic_write(tmp_path / "b.bin", b"\x00\xff")
    assert text.read_bytes() == "é".encode() and raw.read_bytes() == b"\x00\xff"
    assert {p.stat().st_mode & 0o777 for p in (text, raw)} == {atomic.FILE_MODE}
    assert text.parent.stat().st_mode & 0o777 == atomic.DIR_MODE


def test_registered_secret_never_written(tmp_path: Path) -> None:
    key = "sk-" + secrets.token_hex(16)
    token = secrets.token_urlsafe(24)
    register_secret(key)
    register_secret(token)
    result = make_result(
        instruction=f"use {key}",
        message=f"endpoint said: invalid key {key}",
        evaluator=[{"func": "m", "detail": {"headers": [f"Bearer {key}"], key: token}}],
        infra_reason=f"GET http://x/?token={token} failed",
        versions=Versions(model="m", endpoint=f"http://127.0.0.1:8000/v1?key={key}"),
    )
    folder = task_dir(tmp_path, "m", result.case_id)
    write_result(folder, result)
    for path in folder.rglob("*"):
        text = path.read_text()
        assert key not in text and token not in text, path
    stored = read_result(folder)
    assert stored is not None and REDACTED in stored.message
    assert stored.evaluator[0]["detail"][REDACTED] == REDACTED


def test_redact_prefers_longest_and_ignores_short() -> None:
    assert redact("a secret123 b", ["secret", "secret123"]) == f"a {REDACTED} b"
    register_secret("ab")  # too short to be safely redacted everywhere; refused
    assert redact("ab cd") == "ab cd"


def test_harness_commit(tmp_path: Path) -> None:
    assert harness_commit(tmp_path) == "unknown"
    here = harness_commit()
    git = subprocess.run(
        ["git", "-C", str(Path(__file__).parent), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    if git.returncode == 0:
        assert here != "unknown" and git.stdout.strip()[:7] in here
