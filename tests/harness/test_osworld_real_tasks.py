"""CI: OSWorld's real tasks that need no download and no internet, from ``shared/osworld`` beside
the checkout, run by the suite under ``--check-evaluators`` on local desktops, set up and scored
by OSWorld's own code from the installed ``desktop-env`` package.

Every case must end as: passed (setup alone scored 0 and, where an oracle exists, the oracle
scored 1), skipped with the reason (a need this machine cannot meet, no oracle: "leak check
only"), or unscored with an infrastructure category — never a score made by the environment.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from suite import run_suite

SHARED_OSWORLD = Path(os.environ.get(
    "OSWORLD_ROOT", Path(__file__).resolve().parents[3] / "shared" / "osworld"))
"""OSWorld's task files, in the ``shared/`` folder beside the checkout (as
tests/harness/test_osworld_tasks.py finds them; override with $OSWORLD_ROOT)."""

SELECTION = "not network and not download and not gdrive"
"""Real tasks whose setup downloads nothing and whose evaluator fetches nothing (no cloud_file,
no live web page), so they run offline."""

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(not (SHARED_OSWORLD / "evaluation_examples").is_dir(),
                       reason=f"OSWorld task data not present ({SHARED_OSWORLD})"),
    pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("bwrap"),
                       reason="the local sandbox needs root and bubblewrap"),
]


def test_real_tasks_without_downloads_under_check_evaluators(tmp_path: Path) -> None:
    run = run_suite(tmp_path / "results", "real-offline", "--osworld-root", str(SHARED_OSWORLD),
                    "--task-list", "test_nogdrive", "--check-evaluators", "-m", SELECTION,
                    "-n", "2", "-p", "no:cacheprovider", timeout=3600)
    results = run.results()
    assert len(results) >= 40, run.output[-3000:]
    codes = {r["versions"].get("osworld_code") for r in results.values()
             if r["outcome"] in ("passed", "failed")}
    assert codes and all(c and c.startswith("desktop-env ") and c.endswith("(package)")
                         for c in codes), codes
    summary = run.summary
    assert summary["desktops"] == ["embedded desktop"], summary["desktops"]

    failed = {cid: r["message"] for cid, r in results.items() if r["outcome"] == "failed"}
    assert not failed, "scored below 1 under --check-evaluators:\n" + "\n".join(
        f"{cid}: {msg}" for cid, msg in sorted(failed.items()))
    for cid, r in results.items():
        if r["outcome"] == "unscored":
            assert r["infra_category"] and r["infra_reason"], cid
        if r["outcome"] == "skipped":
            assert r["message"], cid
        checks = [e for e in r["evaluator"] if "setup alone" in str(e.get("check", ""))]
        for check in checks:
            assert check["score"] == 0.0, f"{cid}: reward leak: {check}"
    assert any(r["outcome"] == "passed" for r in results.values()), run.output[-3000:]
