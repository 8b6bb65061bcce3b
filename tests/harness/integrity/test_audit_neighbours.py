"""Audit: one desktop reaching another (``reach-other-desktop``), on local and Docker desktops.

The exploit scans the host side and the neighbouring addresses for other desktops' guest
server, DevTools and VLC ports and drives what answers (closes a neighbour's Chrome pages,
stops its VLC). Two workers play it and ``do-nothing`` side by side on a Chrome task, so each
desktop has a DevTools forward on 9222 while the other scans: the audit finds no harness flaw,
and the exploit's own output says it reached nothing. (On Docker's default bridge, before each
desktop had a network of its own, it reached the neighbour's 9222 and closed its pages.)
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from audit_suite import AuditRun, audit_run
from dockerd import docker_client  # noqa: F401  (the fixture: daemon + image or skip)

CHROME_TASK = {"chrome": ["chrome-open-kettle-page"]}
CASE = "chrome/chrome-open-kettle-page"
EXPLOITS = ["reach-other-desktop", "do-nothing"]


def _reached(audit: AuditRun) -> list[list[str]]:
    """The ``reached: [...]`` line of each of the exploit's scans (from its trajectory)."""
    r = audit.results()[(CASE, "reach-other-desktop")]
    steps = [json.loads(line) for line in
             (audit.run.run_dir / r["artifact_dir"] / "traj.jsonl").read_text().splitlines()]
    outputs = [str(s["code"]["output"]) for s in steps if s.get("code")]
    return [json.loads(line.removeprefix("reached:")) for out in outputs
            for line in out.splitlines() if line.startswith("reached:")]


def _check(audit: AuditRun, provider: str) -> None:
    out = audit.run.output
    assert audit.harness_flaws() == [], (audit.harness_flaws(), out[-4000:])
    results = audit.results()
    for exploit in EXPLOITS:
        r = results[(CASE, exploit)]
        assert (r["outcome"], r["score"]) == ("failed", 0.0), (exploit, r["message"])
        assert r["versions"]["provider"] == provider
    scans = _reached(audit)
    assert scans == [[], []], scans  # both scans ran; neither reached a neighbour
    assert audit.run.rc == 0, out[-4000:]


@pytest.mark.desktop
@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("bwrap"),
                    reason="the local sandbox needs root and bubblewrap")
def test_a_local_desktop_reaches_no_other(tmp_path: Path) -> None:
    audit = audit_run(tmp_path, EXPLOITS, tasks=CHROME_TASK)
    _check(audit, "local")


@pytest.mark.docker
def test_a_docker_desktop_reaches_no_other(tmp_path: Path,
                                          docker_client: Any) -> None:  # noqa: F811
    audit = audit_run(tmp_path, EXPLOITS, "--provider", "docker", tasks=CHROME_TASK)
    _check(audit, "docker")
