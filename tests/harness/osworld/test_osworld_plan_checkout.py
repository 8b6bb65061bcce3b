"""``plan`` judges tasks with the OSWorld code a run would use (a checkout under
``--osworld-root`` wins over the installed package) and says which; OSWorld's modules import
in the venv as they are, without the suite's import placeholders, and quietly. The plan runs
against a real local desktop it starts; the checkout is a copy of the installed package with
one metric added."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
IMPORT_LINE = (
    "import desktop_env.controllers.setup, desktop_env.evaluators.getters, "
    "desktop_env.evaluators.metrics"
)
TASK_ID = "0c0ffee0-0000-4000-8000-000000000001"


def _fake_checkout(tmp_path: Path) -> Path:
    import importlib.util

    spec = importlib.util.find_spec("desktop_env")
    assert spec is not None and spec.origin
    checkout = tmp_path / "OSWorld"
    shutil.copytree(
        Path(spec.origin).parent,
        checkout / "desktop_env",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    metrics = checkout / "desktop_env" / "evaluators" / "metrics" / "__init__.py"
    metrics.write_text(
        metrics.read_text(encoding="utf-8")
        + "\n\ndef only_in_this_checkout(result, rules=None):\n    return 1.0\n"
    )
    examples = checkout / "evaluation_examples"
    (examples / "examples" / "os").mkdir(parents=True)
    (examples / "test_all.json").write_text(json.dumps({"os": [TASK_ID]}))
    task = {
        "id": TASK_ID,
        "snapshot": "os",
        "instruction": "nothing",
        "source": "test",
        "config": [],
        "related_apps": ["os"],
        "evaluator": {
            "func": "only_in_this_checkout",
            "result": {"type": "vm_command_line", "command": "true"},
            "expected": {"type": "rule", "rules": {"expected": ""}},
        },
    }
    (examples / "examples" / "os" / f"{TASK_ID}.json").write_text(json.dumps(task))
    return checkout


@pytest.mark.desktop
@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("bwrap"),
    reason="the local sandbox needs root and bubblewrap",
)
def test_plan_judges_with_the_checkout_and_says_so(tmp_path: Path) -> None:
    checkout = _fake_checkout(tmp_path)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "computer_env.osworld",
            "plan",
            "--osworld-root",
            str(checkout / "evaluation_examples"),
            "--offline",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.strip().splitlines()
    data = json.loads(lines[-1])
    assert data["runnable"] == 1, data  # the metric exists only in the checkout
    assert f"judged with OSWorld's setup, getters and metrics: checkout {checkout}" in lines
    assert not [line for line in proc.stderr.splitlines() if "ERROR" in line], proc.stderr
    differences = lines.index(next(ln for ln in lines if ln.startswith("embedded desktop:")))
    assert any("Chromium" in line for line in lines[differences:])
    assert any("sudo" in line for line in lines[differences:])


def test_osworld_modules_import_without_placeholders() -> None:
    """OSWorld's modules import as they are but for ``easyocr`` (it needs torch, left out on
    purpose), which ``metrics/docs.py`` imports at top level (and every module imports the
    metrics package): the exact import line fails on that module alone; through the suite's
    loader only easyocr is a placeholder, and nothing logs an ERROR."""
    exact = subprocess.run(
        [sys.executable, "-c", IMPORT_LINE], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert exact.returncode == 0 or exact.stderr.strip().endswith("No module named 'easyocr'"), (
        exact.stderr[-2000:]
    )
    through_loader = subprocess.run(
        [
            sys.executable,
            "-c",
            "import logging; logging.basicConfig(level=logging.WARNING)\n"
            "from computer_env.osworld.upstream.loader import (absent_modules, upstream_getters,\n"
            "    upstream_metrics, upstream_setup_module)\n"
            "upstream_setup_module(); upstream_getters(); upstream_metrics()\n"
            "print(absent_modules())",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert through_loader.returncode == 0, through_loader.stderr[-2000:]
    assert through_loader.stdout.strip() == "['easyocr']"
    assert "ERROR" not in through_loader.stderr, through_loader.stderr


def test_google_drive_tasks_still_skip_with_their_reason() -> None:
    from computer_env.osworld.catalog.tasks import parse_task
    from computer_env.osworld.planning.needs import task_needs

    task = parse_task(
        {
            "id": "g",
            "instruction": "x",
            "config": [
                {"type": "googledrive", "parameters": {"settings_file": "s", "operation": []}}
            ],
            "evaluator": {
                "func": "exact_match",
                "result": {"type": "googledrive_file", "path": ["x"]},
                "expected": {"type": "rule", "rules": {"expected": 1}},
            },
        },
        domain="multi_apps",
    )
    assert any("Google Drive account" in why for why in task_needs(task).unsupported)
