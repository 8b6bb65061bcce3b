"""Synthesized tasks with executable verifiers (EvoCUA): the task-file format (a bad file names
the file and the field, at load and as a collection error), and a real ``tests/synthetic`` run
on local desktops with shipped examples next to a leaking task, a crashing verifier and a
verifier that runs out of time (verifiers run inside the desktop)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from computer_env.synthetic import EXAMPLES_DIR, SyntheticTaskError, load_synthetic_file
from tests.harness.helpers.suite import run_suite

GOOD = {
    "task_instruction": "do it",
    "verifier_code": "def verify():\n    return False\n",
    "initial_state": {"files": {"~/a.txt": "a"}},
}


def _write(folder: Path, name: str, data: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(
    "change, field",
    [
        ({"task_instruction": None}, "task_instruction"),
        ({"verifier_code": "x = 1"}, "verifier_code"),
        ({"verifier_code": "def verify(:"}, "verifier_code"),
        ({"initial_state": {"files": {}, "apps": []}}, "initial_state.apps"),
        ({"initial_state": {"setup": [{"parameters": {}}]}}, "initial_state.setup.0.type"),
        ({"task_id": "a/b"}, "task_id"),
        (
            {
                "initial_state": {
                    "setup": [
                        {"type": "launch", "parameters": {"command": ["xterm"]}},
                        {
                            "type": "download",
                            "parameters": {
                                "files": [{"url": "http://127.0.0.1:8000/secret", "path": "~/s"}]
                            },
                        },
                    ]
                }
            },
            "initial_state.setup.1: parameters.files[0].url: 'http://127.0.0.1:8000/secret': a "
            "host-local",
        ),
        (
            {
                "initial_state": {
                    "setup": [
                        {
                            "type": "download",
                            "parameters": {"files": [{"url": "http://localhost/x", "path": "~/x"}]},
                        }
                    ]
                }
            },
            "initial_state.setup.0: parameters.files[0].url",
        ),
        (
            {
                "initial_state": {
                    "setup": [
                        {
                            "type": "download",
                            "parameters": {"files": [{"url": "file:///etc/passwd", "path": "~/x"}]},
                        }
                    ]
                }
            },
            "initial_state.setup.0: parameters.files[0].url: 'file:///etc/passwd': only http(s)",
        ),
        (
            {
                "initial_state": {
                    "setup": [
                        {
                            "type": "upload_file",
                            "parameters": {"files": [{"local_path": "/etc/passwd", "path": "~/p"}]},
                        }
                    ]
                }
            },
            "initial_state.setup.0: "
            "parameters.files[0].local_path: '/etc/passwd': an absolute path",
        ),
        (
            {
                "initial_state": {
                    "setup": [
                        {
                            "type": "upload_file",
                            "parameters": {
                                "files": [{"local_path": "../../root/.ssh/id_rsa", "path": "~/k"}]
                            },
                        }
                    ]
                }
            },
            "initial_state.setup.0: parameters.files[0].local_path",
        ),
        (
            {
                "reference_solution": [
                    {"note": None, "thought": "t", "tool_call": {"tool_name": "teleport"}}
                ]
            },
            "reference_solution[0]",
        ),
    ],
)
def test_bad_task_file_names_file_and_field(tmp_path: Path, change: dict, field: str) -> None:
    data = {**GOOD, **change}
    data = {k: v for k, v in data.items() if v is not None}
    path = _write(tmp_path, "bad-task", data)
    with pytest.raises(SyntheticTaskError) as err:
        load_synthetic_file(path)
    assert str(path) in str(err.value) and field in str(err.value)


def test_initial_state_becomes_setup_steps(tmp_path: Path) -> None:
    task = load_synthetic_file(
        _write(
            tmp_path,
            "t1",
            {
                **GOOD,
                "initial_state": {
                    "files": {"~/a.txt": "é"},
                    "setup": [{"type": "launch", "parameters": {"command": ["xterm"]}}],
                },
            },
        )
    )
    steps = task.initial_state.setup_steps()
    assert task.task_id == "t1" and [s["type"] for s in steps] == ["execute", "launch"]
    assert steps[0]["parameters"]["command"][3] == "~/a.txt"


def test_malformed_file_is_a_collection_error(tmp_path: Path) -> None:
    _write(tmp_path / "tasks", "broken", {**GOOD, "verifier_code": "print(1)"})
    run = run_suite(
        tmp_path / "results",
        "c",
        "--synthetic-dir",
        str(tmp_path / "tasks"),
        "--collect-only",
        target="tests/synthetic",
    )
    assert run.rc != 0
    assert "broken.json" in run.output and "field verifier_code" in run.output


def test_setup_reaching_the_host_is_a_collection_error(tmp_path: Path) -> None:
    """Refused when the file is loaded, by the run's own rule (before: FAILED at run time);
    a public download, an asset-server placeholder and a file of the task's folder still load."""
    allowed = load_synthetic_file(
        _write(
            tmp_path / "tasks",
            "fine",
            {
                **GOOD,
                "initial_state": {
                    "setup": [
                        {
                            "type": "download",
                            "parameters": {
                                "files": [
                                    {"url": "https://example.com/a.xlsx", "path": "~/a.xlsx"},
                                    {"url": "{ASSET_URL}/b.txt", "path": "~/b.txt"},
                                ]
                            },
                        },
                        {
                            "type": "upload_file",
                            "parameters": {
                                "files": [{"local_path": "data/c.txt", "path": "~/c.txt"}]
                            },
                        },
                    ]
                },
            },
        )
    )
    assert [s["type"] for s in allowed.initial_state.setup_steps()] == ["download", "upload_file"]
    _write(
        tmp_path / "tasks",
        "reach",
        {
            **GOOD,
            "initial_state": {
                "setup": [
                    {
                        "type": "upload_file",
                        "parameters": {"files": [{"local_path": "/etc/shadow", "path": "~/s"}]},
                    }
                ]
            },
        },
    )
    run = run_suite(
        tmp_path / "results",
        "c",
        "--synthetic-dir",
        str(tmp_path / "tasks"),
        "--collect-only",
        target="tests/synthetic",
    )
    assert run.rc != 0
    assert "reach.json" in run.output
    assert (
        "field initial_state.setup.0: parameters.files[0].local_path: '/etc/shadow'" in run.output
    )
    assert "Traceback" not in run.output


LEAK = {
    "task_instruction": "Create ~/leak.txt.",
    "initial_state": {"files": {"~/leak.txt": "x"}},
    "verifier_code": "import os\ndef verify():\n    return os.path.exists("
    "os.path.expanduser('~/leak.txt'))\n",
}
CRASH = {
    "task_instruction": "Anything.",
    "initial_state": {},
    "verifier_code": "def verify():\n    return 1 / 0\n",
}
SLOW = {
    "task_instruction": "Anything, slowly.",
    "initial_state": {},
    "verifier_code": "import time\ndef verify():\n    time.sleep(60)\n    return False\n",
}


@pytest.mark.desktop
@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("bwrap"),
    reason="the local sandbox needs root and bubblewrap",
)
def test_synthetic_suite_run(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    for name in ("synth-greeting-file", "synth-shopping-list"):  # shipped, with solutions
        shutil.copy(EXAMPLES_DIR / f"{name}.json", tasks)
    _write(tasks, "leaky", LEAK)
    _write(tasks, "crashy", CRASH)
    _write(tasks, "slowy", SLOW)
    run = run_suite(
        tmp_path / "results",
        "syn",
        "-n",
        "1",
        "--synthetic-dir",
        str(tasks),
        "--verifier-timeout",
        "4",
        "--judge-url",
        "reference",
        target="tests/synthetic",
    )
    out = run.output
    assert "2 passed" in out and "1 skipped" in out and "2 xfailed" in out, out[-3000:]
    results = run.results()
    assert results["os/synth-greeting-file"]["score"] == 1.0
    assert results["text_editor/synth-shopping-list"]["outcome"] == "passed"
    assert results["synthetic/leaky"]["outcome"] == "skipped"
    assert "leaking task" in out and "verifier scores 1" in results["synthetic/leaky"]["message"]
    for case in ("synthetic/crashy", "synthetic/slowy"):
        r = results[case]
        assert r["outcome"] == "unscored" and r["score"] is None
        assert r["infra_category"] == "verifier" and r["attempts"] == 1  # never rerun
    assert "ZeroDivisionError" in results["synthetic/crashy"]["infra_reason"]
    assert "out of time (4 s)" in results["synthetic/slowy"]["infra_reason"]
    lines = [json.loads(x) for x in (run.run_dir / "synthetic.jsonl").read_text().splitlines()]
    by_id = {x["task_id"]: x for x in lines}
    assert len(lines) == 5 and set(by_id) == {
        "synth-greeting-file",
        "synth-shopping-list",
        "leaky",
        "crashy",
        "slowy",
    }
    good = by_id["synth-shopping-list"]
    assert good["verifier_pass"] is True and good["agent_success"] is True
    assert good["steps"] == 4 and good["failure_branch"] is None
    assert good["synthesized_at"].startswith("2026-11-02")
    assert good["screen_resolution"] == "1920x1080"
    assert "mousepad" in good["application_versions"]
    assert good["environment_version"]["provider"] == "local"
    assert by_id["leaky"]["failure_branch"] == "leak" and not by_id["leaky"]["verifier_pass"]
    assert by_id["crashy"]["failure_branch"] == "infra:verifier"
    assert by_id["slowy"]["failure_branch"] == "infra:verifier"
    assert results["os/synth-greeting-file"]["synthetic"]["agent_success"] is True
    syn = run.summary["protocols"]["synthetic"]
    assert syn == {
        "tasks": 5,
        "verifier_pass": 2,
        "leaking": 1,
        "verifier_unscored": 2,
        "agent_success": 2,
    }
    assert run.summary["by_infra_category"] == {"verifier": 2}
    assert "synthesized tasks: 5" in out
