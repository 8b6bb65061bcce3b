"""Audit findings, fixed: the desktop's trust boundary. A token read inside the desktop let a
one-liner typed into a terminal call ``/verify`` and queue a forged pass (PASSED, score 1.0); a
sleeper outside the nest killed the server after the tamper audit (unscored); one byte that is
not UTF-8 made a code action unscored. Each exploit now ends as the agent's scored 0, on an
OSWorld task (OSWorld's evaluator) and a synthesized one (the verifier runner)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from computer_env.synthetic import EXAMPLES_DIR
from tests.harness.helpers.audit_suite import BUILTIN_TASK, audit_run

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(
        os.geteuid() != 0 or not shutil.which("bwrap"),
        reason="the local sandbox needs root and bubblewrap",
    ),
]

BOUNDARY = ["steal-token-typed", "impersonate-server", "sleeper-after-audit", "non-utf8-output"]


def test_boundary_exploits_are_the_agents_zero(tmp_path: Path) -> None:
    synth = tmp_path / "synth"
    synth.mkdir()
    shutil.copy(EXAMPLES_DIR / "synth-shopping-list.json", synth)
    audit = audit_run(
        tmp_path, BOUNDARY, "tests/synthetic", "--synthetic-dir", str(synth), tasks=BUILTIN_TASK
    )
    out = audit.run.output
    assert audit.harness_flaws() == [], (audit.harness_flaws(), out[-4000:])
    results = audit.results()
    for case in ("os/os-create-report-file", "text_editor/synth-shopping-list"):
        for exploit in BOUNDARY:
            r = results[(case, exploit)]
            assert (r["outcome"], r["score"]) == ("failed", 0.0), (case, exploit, r["message"])
            assert r["attempts"] == 1, (case, exploit, r["message"])
    typed = results[("text_editor/synth-shopping-list", "steal-token-typed")]
    assert typed["actions"]["code"] == 0  # GUI actions only: the agent typed it
    assert audit.run.rc == 0, out[-4000:]
