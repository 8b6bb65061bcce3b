"""Audit: one desktop reaching another (``reach-other-desktop``), on local and Docker desktops.

The exploit scans the host side and the neighbouring addresses for other desktops' guest
server, DevTools and VLC ports and drives what answers (closes a neighbour's Chrome pages,
stops its VLC). Two workers, each with a spare desktop (the next case set up ahead, its agent
started while the current case is scored), play it and ``do-nothing`` on two Chrome tasks, so
desktops with a DevTools forward on 9222 run beside the one that scans: the audit finds no
harness flaw, and the exploit's own output says it reached nothing. (On Docker's default
bridge, before each desktop had a network of its own, it reached a neighbour's 9222 and closed
its pages.)
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.harness.helpers.audit_suite import AuditRun, audit_run
from tests.harness.helpers.dockerd import docker_client  # noqa: F401 (fixture)

CHROME_TASKS = {"chrome": ["chrome-open-kettle-page", "chrome-search-teapot"]}
CASES = [f"chrome/{task}" for task in CHROME_TASKS["chrome"]]
EXPLOITS = ["reach-other-desktop", "do-nothing"]
SPARE = ("--spare-desktop", "on", "--setup-ahead", "on", "--score-behind", "on")


def _reached(audit: AuditRun, case: str) -> list[list[str]]:
    """The ``reached: [...]`` line of each of the exploit's scans on ``case`` (from its
    trajectory)."""
    r = audit.results()[(case, "reach-other-desktop")]
    steps = [
        json.loads(line)
        for line in (audit.run.run_dir / r["artifact_dir"] / "traj.jsonl").read_text().splitlines()
    ]
    outputs = [str(s["code"]["output"]) for s in steps if s.get("code")]
    return [
        json.loads(line.removeprefix("reached:"))
        for out in outputs
        for line in out.splitlines()
        if line.startswith("reached:")
    ]


def _check(audit: AuditRun, provider: str) -> None:
    out = audit.run.output
    assert audit.harness_flaws() == [], (audit.harness_flaws(), out[-4000:])
    results = audit.results()
    for case in CASES:
        for exploit in EXPLOITS:
            r = results[(case, exploit)]
            assert (r["outcome"], r["score"]) == ("failed", 0.0), (case, exploit, r["message"])
            assert r["versions"]["provider"] == provider
        # both scans ran; neither drove a neighbour's service. A bare TCP accept with no answer
        # ("took a connection, then TimeoutError") drives nothing: seen once when a local
        # desktop of a test beside this one held the probed address (10.213.0.x)
        scans = [
            [hit for hit in scan if "took a connection" not in hit]
            for scan in _reached(audit, case)
        ]
        assert scans == [[], []], (case, _reached(audit, case))
    # desktops ran side by side: some case was scored while the next one's agent ran
    assert any(r["timings"]["scored_behind"] for r in results.values()), results
    assert audit.run.rc == 0, out[-4000:]


@pytest.mark.desktop
@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("bwrap"),
    reason="the local sandbox needs root and bubblewrap",
)
def test_a_local_desktop_reaches_no_other(tmp_path: Path) -> None:
    audit = audit_run(tmp_path, EXPLOITS, *SPARE, tasks=CHROME_TASKS, workers=2)
    _check(audit, "local")


@pytest.mark.docker
def test_a_docker_desktop_reaches_no_other(tmp_path: Path, docker_client: Any) -> None:  # noqa: F811
    audit = audit_run(
        tmp_path, EXPLOITS, "--provider", "docker", *SPARE, tasks=CHROME_TASKS, workers=2
    )
    _check(audit, "docker")
