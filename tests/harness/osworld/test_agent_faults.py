"""Whose fault is it? OSWorld's own metrics crashing on what an agent left are the agent's (a
scored 0, ``evaluator_crash``); the same crash before the agent acted, an expected (gold) file
missing, or a desktop limit hit during setup stay the environment's (unscored). The metrics
are OSWorld's (the installed desktop-env package); the desktop and its pool are real."""

from __future__ import annotations

import os
import shutil
import zipfile
from pathlib import Path

import pytest
from test_osworld_evaluate import cache, make_ctx, put, task

from computer_env.desktop.client import DesktopClient
from computer_env.desktop.providers.local.provider import LocalSandboxProvider
from computer_env.errors import EvaluatorCrash, EvaluatorInfraError
from computer_env.osworld.scoring.in_process import evaluate_in_process as evaluate
from fixtures.cases.attempt import Attempt
from fixtures.cases.desktops.pool import VMPool
from fixtures.cases.integrity.integrity import (
    EVALUATOR_CRASH,
    RESOURCE_LIMIT,
    AgentTurnGuard,
    task_text,
)

ZIP_EQ = {"func": "compare_zip_files", "result": cache("out.zip"), "expected": cache("gold.zip")}


def _zip(path: Path) -> None:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("a.txt", "a")


def test_a_metric_crashing_on_the_result_is_an_evaluator_crash(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    _zip(ctx.task_cache_dir / "gold.zip")
    _zip(ctx.task_cache_dir / "out.zip")
    assert evaluate(task(ZIP_EQ), ctx).score == 1.0
    put(ctx, "out.zip", "the agent wrote text where a zip belongs")
    with pytest.raises(EvaluatorCrash, match="BadZipFile"):
        evaluate(task(ZIP_EQ), ctx)


def test_a_missing_expected_file_is_not_the_agents(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    _zip(ctx.task_cache_dir / "out.zip")
    with pytest.raises(EvaluatorInfraError) as err:
        evaluate(task(ZIP_EQ), ctx)
    assert not isinstance(err.value, EvaluatorCrash)


@pytest.mark.desktop
@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("bwrap"),
    reason="the local sandbox needs root and bubblewrap",
)
def test_guard_scores_what_the_agent_caused_only(tmp_path: Path) -> None:
    pool = VMPool(lambda: LocalSandboxProvider(width=1280, height=720))
    try:
        handle = pool.acquire()
        client = DesktopClient.from_handle(handle)
        ctx = make_ctx(tmp_path, client=client, handle=handle)
        attempt = Attempt(number=1)
        guard = AgentTurnGuard(ctx, pool, attempt, task_text("Zip the folder."))
        crash = EvaluatorCrash("metric 'compare_zip_files' failed (crash): BadZipFile")
        assert not guard.settle_failure(crash)  # before the agent: the environment's
        guard.begin()
        assert attempt.agent_started and guard.baseline is not None and guard.baseline.ok
        assert not guard.settle_failure(EvaluatorInfraError("desktop unreachable"))
        assert attempt.score is None
        assert guard.settle_failure(crash)
        assert (attempt.score, attempt.failure_category) == (0.0, EVALUATOR_CRASH)
        assert "BadZipFile" in (attempt.failure_reason or "")

        # a limit hit by the agent's processes: the agent's (here: /tmp filled to the brim)
        client.run_bash_script("dd if=/dev/zero of=/tmp/fill bs=1M count=4096; true", timeout=120)
        late = Attempt(number=1)
        late_guard = AgentTurnGuard(ctx, pool, late, task_text("Zip the folder."))
        late.mark_agent_started(late_guard)
        assert late_guard.settle_failure(EvaluatorInfraError("desktop unreachable"))
        assert late.failure_category == RESOURCE_LIMIT and "/tmp" in (late.failure_reason or "")
        client.close()
    finally:
        pool.close()
