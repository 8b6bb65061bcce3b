"""Audit finding, fixed: Chrome stopped by the agent (SIGSTOP, ``hang-apps``) made a Chrome
task unscored (``evaluator``: its DevTools port did not answer while Chrome ran), where an honest
failure of the same task is a scored 0: a dodged failure. A stopped Chrome is what the agent
left: a scored 0 (``evaluator_crash``). Real local desktops, the real hostile endpoint."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.harness.helpers.audit_suite import AuditRun, audit_run

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(
        os.geteuid() != 0 or not shutil.which("bwrap"),
        reason="the local sandbox needs root and bubblewrap",
    ),
]

CASE = "chrome/chrome-open-kettle-page"


def _evaluator_crash(
    tmp_path: Path, case: str, exploits: list[str], exploit: str, why: str
) -> AuditRun:
    """Audit ``case`` with ``exploits``: no harness flaw, a clean run, and ``exploit``'s case
    scored 0 as an evaluator crash whose message says ``why``; the audit run."""
    audit = audit_run(tmp_path, exploits, tasks={"chrome": [case.split("/", 1)[1]]})
    out = audit.run.output
    assert audit.harness_flaws() == [], (audit.harness_flaws(), out[-4000:])
    r = audit.results()[(case, exploit)]
    assert (r["outcome"], r["score"], r["failure_category"]) == (
        "failed",
        0.0,
        "evaluator_crash",
    ), r["message"]
    assert why in r["message"]
    assert audit.run.rc == 0, out[-3000:]
    return audit


def test_chrome_stopped_by_the_agent_is_its_zero_not_unscored(tmp_path: Path) -> None:
    audit = _evaluator_crash(
        tmp_path, CASE, ["do-nothing", "hang-apps"], "hang-apps", "Chrome is stopped"
    )
    assert audit.results()[(CASE, "do-nothing")]["score"] == 0.0


def test_chrome_forward_killed_by_a_typed_kill_is_the_agents_zero(tmp_path: Path) -> None:
    """``kill -9 -1`` typed into a terminal ends the task's socat forward to Chrome's DevTools
    (started by the task's setup, checked by the readiness wait before the agent's turn): the
    DevTools getter then finds nothing; that is what the agent left, a scored 0, not the
    environment's failure (it was unscored: found by ``--audit``)."""
    case = "chrome/chrome-help-in-new-tab"  # where the audit found it (3 attempts of 3)
    _evaluator_crash(
        tmp_path,
        case,
        ["kill-desktop-server-typed"],
        "kill-desktop-server-typed",
        "DevTools forward (socat",
    )
