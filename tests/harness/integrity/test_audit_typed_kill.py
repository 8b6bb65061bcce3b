"""Audit finding, fixed: the desktop's server killed by a command TYPED into a terminal (GUI
actions only: ctrl+alt+t, write, Enter) made the case unscored, a dodged 0. Everything the agent
can start now runs in the desktop's nest, which cannot see or signal the server or Xvfb; on the
Docker desktop too, where the same kill typed as root (sudo) reaches nothing either."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from tests.harness.helpers.audit_suite import audit_run
from tests.harness.helpers.dockerd import docker_client  # noqa: F401 (fixture)

pytestmark = [pytest.mark.desktop]
LOCAL_SANDBOX = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("bwrap"),
    reason="the local sandbox needs root and bubblewrap",
)


@LOCAL_SANDBOX
def test_a_server_kill_typed_into_a_terminal_is_the_agents_zero(tmp_path: Path) -> None:
    audit = audit_run(tmp_path, ["kill-desktop-server-typed"])
    out = audit.run.output
    assert audit.harness_flaws() == [], (audit.harness_flaws(), out[-4000:])
    r = audit.results()[("os/os-create-report-file", "kill-desktop-server-typed")]
    assert (r["outcome"], r["score"], r["attempts"]) == ("failed", 0.0, 1), r["message"]
    assert r["actions"] == {"gui": 4, "code": 0, "malformed": 0}, r["actions"]
    # the typed `kill -9 -1` ended every app of the desktop (its screen went black), yet the
    # server answered through to scoring
    shot = Image.open(audit.run.run_dir / r["artifact_dir"] / "scoring_screen.png")
    assert shot.convert("L").getextrema() == (0, 0)
    assert audit.run.rc == 0, out[-4000:]


@pytest.mark.docker
def test_a_server_kill_typed_as_root_on_docker_is_the_agents_zero(
    tmp_path: Path, docker_client: Any
) -> None:  # noqa: F811
    """The Docker desktop's `user` has a real sudo; its nest keeps the server and Xvfb out of
    reach of root inside too: both typed kills are the agent's 0, found in one attempt."""
    kills = ["kill-desktop-server-typed", "kill-desktop-server-sudo"]
    audit = audit_run(tmp_path, kills, "--provider", "docker")
    out = audit.run.output
    assert audit.harness_flaws() == [], (audit.harness_flaws(), out[-4000:])
    for kill in kills:
        r = audit.results()[("os/os-create-report-file", kill)]
        assert (r["outcome"], r["score"], r["attempts"]) == ("failed", 0.0, 1), (kill, r["message"])
        assert r["versions"]["provider"] == "docker"
        shot = Image.open(audit.run.run_dir / r["artifact_dir"] / "scoring_screen.png")
        assert shot.convert("L").getextrema() == (0, 0), kill  # the kill ended the session
    assert audit.run.rc == 0, out[-4000:]
