"""The error boundary (``fixtures.cases.outcomes``): which exception ends a case as a skip, as unscored
infrastructure, or as a loud harness failure. Pure checks of the table, then a real child run
on a real desktop where evaluation raises ``EvaluatorUnsupported`` or hits a harness bug."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from computer_env.errors import InfraError, SetupError, VMUnreachable
from computer_env.osworld import EvaluatorUnsupported, SetupUnsupported
from fixtures.cases.outcomes import CaseSkipped, Skip, Unscored, boundary, classify
from tests.harness.helpers.suite import CHAOS, ROOT, first_smoke_tasks, run_suite, task_list_file


def _raised(make: object) -> BaseException:
    try:
        make()  # type: ignore[operator]
    except BaseException as exc:  # noqa: BLE001 - the point is to keep it
        return exc
    raise AssertionError("nothing was raised")


def test_infra_errors_are_unscored_with_their_category() -> None:
    assert boundary(SetupError("step 3 failed")) == Unscored("setup", "step 3 failed", False)
    assert classify(VMUnreachable("gone\ntraceback...")) == ("vm_unreachable", "gone")


def test_a_low_level_error_counts_only_through_an_explicit_cause() -> None:
    def wrapped() -> None:
        try:
            raise ConnectionRefusedError("refused")
        except ConnectionRefusedError as e:
            raise RuntimeError("could not reach the desktop") from e

    def bug_while_handling() -> None:
        try:
            raise ConnectionRefusedError("refused")
        except ConnectionRefusedError:
            {"present": 1}["missing"]  # noqa: B018 - a harness bug inside the handler

    found = boundary(_raised(wrapped))
    assert isinstance(found, Unscored) and found.category == "vm_unreachable"
    bug = _raised(bug_while_handling)
    assert isinstance(bug.__context__, ConnectionRefusedError)  # only implicitly chained
    assert classify(bug) is None and boundary(bug) is None  # fails loudly, never infra


def test_unsupported_at_any_time_is_a_skip_naming_what() -> None:
    for exc in (
        EvaluatorUnsupported("metric 'x'", "not in OSWorld's metrics"),
        SetupUnsupported("googledrive", "no Google Drive here"),
    ):
        found = boundary(exc)
        assert isinstance(found, Skip) and found.reason.startswith("cannot run here: ")
        assert exc.what in found.reason
    assert boundary(CaseSkipped("needs: code")) == Skip(
        "needs: code", "cannot run here: needs: code"
    )


def test_permanent_infra_is_never_rerun_and_interrupts_fail_loudly() -> None:
    class Broken(InfraError):
        category, permanent = "verifier", True

    assert boundary(Broken("crashed")) == Unscored("verifier", "crashed", True)
    assert boundary(KeyboardInterrupt()) is None
    assert boundary(ValueError("a harness bug")) is None


@pytest.mark.desktop
def test_evaluation_time_unsupported_skips_and_a_harness_bug_fails(tmp_path: Path) -> None:
    tasks = first_smoke_tasks(2, exclude_domains=("chrome",))
    ids = [i for values in tasks.values() for i in values]
    unsupported, buggy = ids[0], ids[1]
    run = run_suite(
        tmp_path,
        "bnd",
        "--task-list",
        str(task_list_file(tmp_path, tasks)),
        *CHAOS,
        "--infra-rerun-delay",
        "0",
        env={
            "PYTHONPATH": str(ROOT),
            "CHAOS_EVAL_UNSUPPORTED": unsupported,
            "CHAOS_HARNESS_BUG": buggy,
        },
    )
    assert run.rc == 1, run.output[-3000:]  # the harness bug fails the run
    results = {r["task_id"]: r for r in run.results().values()}
    skipped = results[unsupported]
    assert skipped["outcome"] == "skipped" and skipped["score"] is None
    assert "chaos_metric" in skipped["message"] and skipped["steps"] >= 1
    assert "SKIPPED" in run.output and "cannot run here: metric 'chaos_metric'" in run.output
    assert buggy not in results  # neither unscored nor a score: no result file
    (bug_dir,) = [p for p in run.run_dir.rglob(buggy) if p.is_dir()]
    assert (bug_dir / "replay.html").is_file()  # what the agent did before the bug, to look at
    assert "AttributeError" in run.output and "1 failed" in run.output
    assert "RERUN" not in run.output  # neither a skip nor a harness bug is rerun
    assert json.dumps(run.summary).count("vm_unreachable") == 0
