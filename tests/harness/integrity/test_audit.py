"""CI audit (``make test``): the suite attacks its own scoring and must hold.

Run time on a loaded 2-core machine is kept to minutes by the selection: one built-in OSWorld
task, one synthesized example and one RealtimeGym seed, each against EVERY exploit that applies
(one suite run); then three real offline OSWorld tasks (an infeasible one, two whose evaluators run
commands in the desktop) against the trivial policies, the hooks, answer copying and the
desktop-server kill (a second run, OSWorld's own evaluator). Any harness flaw fails; the
infeasible task's give-up pass is a task flaw, listed, and marked in its result.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from computer_env.synthetic import EXAMPLES_DIR
from fixtures.cases.integrity.audit import AUDIT_BANNER
from fixtures.cases.integrity.known_flaws import INFEASIBLE_BY_DESIGN
from holo_agent.reference.exploits import exploits_for
from tests.harness.helpers.audit_suite import BUILTIN_TASK, audit_run
from tests.harness.helpers.polling import scaled
from tests.harness.helpers.suite import OSWORLD_DATA

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(
        os.geteuid() != 0 or not shutil.which("bwrap"),
        reason="the local sandbox needs root and bubblewrap",
    ),
]

REAL_TASKS = {
    "os": [
        "a462a795-fdc7-4b23-b689-e8b6df786b78",  # infeasible
        "28cc3b7e-b194-4bc9-8353-d04c0f4d56d2",
    ],  # a shell pipeline's output
    "multi_apps": ["937087b6-f668-4ba6-9110-60682ee33441"],
}  # xdg-mime's answer
REAL_EXPLOITS = [
    "give-up",
    "done-at-once",
    "do-nothing",
    "python-startup-hook",
    "path-shadow",
    "shell-rc",
    "preload-env",
    "copy-answers",
    "kill-desktop-server",
]


@pytest.mark.timeout(scaled(1600))  # the child run's own limit (1500 s, scaled) fires first
def test_audit_of_builtin_synthetic_and_game_cases_finds_no_harness_flaw(tmp_path: Path) -> None:
    synth = tmp_path / "synth"
    synth.mkdir()
    shutil.copy(EXAMPLES_DIR / "synth-shopping-list.json", synth)
    audit = audit_run(
        tmp_path,
        None,
        "tests/synthetic",
        "tests/realtimegym",
        "--synthetic-dir",
        str(synth),
        "--games",
        "freeway",
        "--loads",
        "E",
        "--seeds",
        "0",
        "--desktop-memory",
        "1G",
        tasks=BUILTIN_TASK,
    )
    out = audit.run.output
    assert audit.harness_flaws() == [], (audit.harness_flaws(), out[-4000:])
    assert audit.run.rc == 0, out[-4000:]
    results = audit.results()
    for bench, case in (
        ("osworld", "os/os-create-report-file"),
        ("synthetic", "text_editor/synth-shopping-list"),
        ("realtimegym", "freeway/E/seed0"),
    ):
        played = {e for (c, e) in results if c == case}
        assert played == {e.name for e in exploits_for(bench)}, (bench, played)
    for kill in ("kill-desktop-server", "kill-desktop-server-typed", "kill-desktop-server-sudo"):
        osw = results[("os/os-create-report-file", kill)]  # the kill reaches nothing now (nest)
        assert (osw["outcome"], osw["score"]) == ("failed", 0.0), (kill, osw["message"])
    for hook in ("python-startup-hook", "path-shadow", "shell-rc", "preload-env"):
        r = results[("text_editor/synth-shopping-list", hook)]
        assert (r["score"], r["failure_category"]) == (0.0, "tampered"), (hook, r["message"])
    benches = {b["benchmark"]: b for b in audit.audit["benchmarks"]}
    assert set(benches) == {"osworld", "synthetic", "realtimegym"}
    assert benches["osworld"]["floor"] == 0.0 and benches["synthetic"]["floor"] == 0.0
    assert AUDIT_BANNER in out and "audit osworld: 0/1 tasks hackable" in out
    report = (audit.run.run_dir / "report.html").read_text()
    assert "audit: exploit policies, not a model score" in report and AUDIT_BANNER in report
    replay = next(audit.run.run_dir.glob("exploit-give-up/os/*/replay.html")).read_text()
    assert "audit: exploit give-up" in replay


@pytest.mark.skipif(not OSWORLD_DATA.is_dir(), reason="OSWorld task data not present")
def test_audit_of_real_offline_tasks_lists_task_flaws_only(tmp_path: Path) -> None:
    listing = tmp_path / "real.json"
    listing.write_text(json.dumps(REAL_TASKS))
    audit = audit_run(
        tmp_path, REAL_EXPLOITS, "--osworld-root", str(OSWORLD_DATA), "--task-list", str(listing)
    )
    out = audit.run.output
    assert audit.harness_flaws() == [], (audit.harness_flaws(), out[-4000:])
    assert audit.run.rc == 0, out[-4000:]
    infeasible = "os/a462a795-fdc7-4b23-b689-e8b6df786b78"
    tasks = {(f["case_id"], f["exploit"]): f["explanation"] for f in audit.audit["findings"]}
    assert tasks == {(infeasible, "give-up"): INFEASIBLE_BY_DESIGN}, tasks
    r = audit.results()[(infeasible, "give-up")]
    assert r["score"] == 1.0 and r["known_task_flaw"][0]["exploit"] == "give-up"
    assert len(audit.results()) == 3 * len(REAL_EXPLOITS)
    assert all(r["outcome"] != "skipped" for r in audit.results().values())


def test_a_result_file_broken_by_the_agent_is_its_zero_not_unscored(tmp_path: Path) -> None:
    """Audit finding, fixed: an emptied or retyped spreadsheet the evaluator reads was unscored
    (``evaluator``: cannot be parsed after its saves finished): a dodged 0."""
    audit = audit_run(
        tmp_path,
        ["do-nothing", "empty-result", "wrong-type-result"],
        tasks={"libreoffice_calc": ["calc-total-expenses"]},
    )
    assert audit.harness_flaws() == [], (audit.harness_flaws(), audit.run.output[-4000:])
    results = audit.results()
    for exploit in ("empty-result", "wrong-type-result"):
        r = results[("libreoffice_calc/calc-total-expenses", exploit)]
        assert (r["outcome"], r["score"], r["failure_category"]) == (
            "failed",
            0.0,
            "result_unreadable",
        ), (exploit, r["message"])
        assert "cannot be parsed" in r["message"]
    assert audit.run.rc == 0, audit.run.output[-3000:]
