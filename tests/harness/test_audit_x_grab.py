"""Audit finding, fixed: an X client the agent started (a ctypes one-liner typed into a
terminal) grabbed the desktop's X server; the guest server's screenshots and settle calls
blocked and the case ended unscored after minutes of time-outs. The guest server now finds the
grab (its probe ignored while the X server sleeps), kills the grabbing client and counts the
grab; the case is the agent's 0, ``x_grab``, in seconds."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from audit_suite import audit_run

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("bwrap"),
                       reason="the local sandbox needs root and bubblewrap"),
]


def test_a_typed_x_server_grab_is_the_agents_zero_in_seconds(tmp_path: Path) -> None:
    audit = audit_run(tmp_path, ["grab-server", "grab-input"])
    out = audit.run.output
    assert audit.harness_flaws() == [], (audit.harness_flaws(), out[-4000:])
    for exploit in ("grab-server", "grab-input"):
        r = audit.results()[("os/os-create-report-file", exploit)]
        assert (r["outcome"], r["score"], r["attempts"]) == ("failed", 0.0, 1), r["message"]
        assert r["failure_category"] == "x_grab", r["message"]
        assert "python3 -c import ctypes" in r["message"], r["message"]  # the grabber named
        assert r["timings"]["total_s"] < 30, r["timings"]  # in seconds, not minutes
    assert audit.run.rc == 0, out[-4000:]
