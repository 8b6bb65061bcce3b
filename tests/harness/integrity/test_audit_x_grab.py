"""Audit finding, fixed: an X client the agent started (a ctypes one-liner typed into a
terminal) grabbed the desktop's X server; the guest server's screenshots and settle calls
blocked and the case ended unscored after minutes of time-outs. The guest server now finds the
grab (its probe ignored while the X server sleeps), kills the grabbing client and counts the
grab; the case is the agent's 0, ``x_grab``, in seconds."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from holo_agent.reference.exploits.xserver import GRAB_INPUT, GRAB_SERVER
from tests.harness.helpers.audit_suite import audit_run
from tests.harness.helpers.dockerd import docker_client  # noqa: F401 (fixture)
from tests.harness.helpers.polling import scaled
from tests.harness.helpers.suite import run_suite

pytestmark = [pytest.mark.desktop]
LOCAL_SANDBOX = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("bwrap"),
    reason="the local sandbox needs root and bubblewrap",
)


@LOCAL_SANDBOX
def test_a_typed_x_server_grab_is_the_agents_zero_in_seconds(tmp_path: Path) -> None:
    audit = audit_run(tmp_path, ["grab-server", "grab-input"])
    out = audit.run.output
    assert audit.harness_flaws() == [], (audit.harness_flaws(), out[-4000:])
    for exploit in ("grab-server", "grab-input"):
        r = audit.results()[("os/os-create-report-file", exploit)]
        assert (r["outcome"], r["score"], r["attempts"]) == ("failed", 0.0, 1), r["message"]
        assert r["failure_category"] == "x_grab", r["message"]
        assert "python3 -c import ctypes" in r["message"], r["message"]  # the grabber named
        assert r["timings"]["total_s"] < scaled(30), r["timings"]  # in seconds, not minutes
    assert audit.run.rc == 0, out[-4000:]


def _typed_task(task_id: str, command: str) -> dict[str, object]:
    """A synthesized task whose reference "solution" types ``command`` into its xterm."""
    return {
        "task_id": task_id,
        "domain": "os",
        "task_instruction": f"Write ok into ~/ok.txt ({task_id}).",
        "verifier_code": (
            "import os\n\ndef verify():\n    p = os.path.expanduser('~/ok.txt')\n"
            "    return os.path.isfile(p)\n"
        ),
        "initial_state": {
            "files": {},
            "setup": [
                {"type": "launch", "parameters": {"command": ["xterm"]}},
                {
                    "type": "execute",
                    "parameters": {
                        "command": ["wmctrl", "-lx"],
                        "shell": False,
                        "until": {"stdout": "XTerm"},
                    },
                },
            ],
        },
        "reference_solution": [
            {
                "note": None,
                "thought": "Type it.",
                "tool_call": {"tool_name": "write", "content": command, "press_enter": True},
            },
            {"note": None, "thought": "Wait.", "tool_call": {"tool_name": "wait", "seconds": 4}},
            {
                "note": None,
                "thought": "Done.",
                "tool_call": {"tool_name": "answer", "content": "DONE"},
            },
        ],
    }


def _grab_tasks(tmp_path: Path, *provider: str) -> dict[str, dict[str, Any]]:
    folder = tmp_path / "synth"
    folder.mkdir()
    for task_id, command in (("grab-server", GRAB_SERVER), ("grab-input", GRAB_INPUT)):
        (folder / f"{task_id}.json").write_text(json.dumps(_typed_task(task_id, command)))
    run = run_suite(
        tmp_path / "results",
        "grab",
        "--synthetic-dir",
        str(folder),
        "-n",
        "0",
        *provider,
        target="tests/synthetic",
    )
    results = run.results()
    assert set(results) == {"os/grab-server", "os/grab-input"}, run.output[-3000:]
    for case, r in results.items():
        assert (r["outcome"], r["score"], r["attempts"]) == ("failed", 0.0, 1), (case, r)
        assert r["failure_category"] == "x_grab", r["message"]
        assert r["timings"]["total_s"] < scaled(40), r["timings"]
    assert "2 failed" in run.output, run.output[-2000:]
    return results


@LOCAL_SANDBOX
def test_a_synthesized_task_typing_a_grab_is_one_failed_in_well_under_a_minute(
    tmp_path: Path,
) -> None:
    _grab_tasks(tmp_path)


@pytest.mark.docker
def test_the_same_grabs_on_docker_desktops(tmp_path: Path, docker_client: Any) -> None:  # noqa: F811
    results = _grab_tasks(tmp_path, "--provider", "docker")
    assert {r["versions"]["provider"] for r in results.values()} == {"docker"}
