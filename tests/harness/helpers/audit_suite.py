"""Helpers for ``--audit`` tests: run the suite's audit in a child pytest process (real local
desktops, the real hostile endpoint) and read its results, keyed by (case, exploit)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.harness.helpers.suite import SuiteRun, run_suite
from tests.harness.helpers.tiers import E2E, needs

BUILTIN_TASK = {"os": ["os-create-report-file"]}
"""The built-in task an exploit's own test is played on (fast to set up)."""


@dataclass
class AuditRun:
    """An audit run: its suite run, its results by (case id, exploit) and its audit section."""

    run: SuiteRun

    @property
    def audit(self) -> dict[str, Any]:
        audit: dict[str, Any] = self.run.summary["audit"]
        return audit

    def results(self) -> dict[tuple[str, str], dict[str, Any]]:
        out = {}
        for path in self.run.run_dir.rglob("result.json"):
            data = json.loads(path.read_text())
            out[(data["case_id"], data["exploit"])] = data
        return out

    def harness_flaws(self) -> list[dict[str, Any]]:
        return [f for f in self.audit["findings"] if f["flaw"] == "harness"]


@needs(E2E)
def audit_run(
    tmp_path: Path,
    exploits: list[str] | None = None,
    *args: str,
    target: str = "tests/osworld",
    tasks: dict[str, list[str]] | None = None,
    timeout: float = 1500,
    workers: int = 1,
) -> AuditRun:
    """``pytest <target> --audit`` (on ``tasks``, default :data:`BUILTIN_TASK`, for the built-in
    OSWorld set) with ``exploits`` (default all), on ``workers`` xdist workers: one unless
    desktops side by side are what the test is about (each more is a worker process and a
    desktop, on a host the parent's workers already share)."""
    extra = list(args)
    if target == "tests/osworld" and "--osworld-root" not in extra:
        listing = tmp_path / "audit-tasks.json"
        listing.write_text(json.dumps(tasks or BUILTIN_TASK))
        extra += ["--task-list", str(listing)]
    if exploits:
        extra += ["--audit-exploits", ",".join(exploits)]
    run = run_suite(
        tmp_path / "results",
        "audit",
        "--audit",
        "-n",
        str(workers),
        *extra,
        target=target,
        timeout=timeout,
    )
    return AuditRun(run)
