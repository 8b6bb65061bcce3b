"""Every numeric option is validated at start-up with a usage error naming it (issue 11,
item 7): a bad value stops the run before any task instead of breaking every case."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("option, value", [
    ("--endpoint-retries", "-1"), ("--endpoint-backoff", "-0.5"), ("--request-timeout", "0"),
    ("--max-image-width", "0"), ("--infra-reruns", "-1"), ("--infra-rerun-delay", "-1"),
    ("--temperature", "nan"), ("--net-wait", "inf"), ("--turn-seconds", "0"),
    ("--settle", "-2"), ("--max-steps", "0"),
])
def test_a_bad_numeric_option_is_a_usage_error_naming_it(tmp_path: Path, option: str,
                                                         value: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/osworld", "--collect-only", "-q",
         "-p", "no:cacheprovider", "--results-dir", str(tmp_path), f"{option}={value}"],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 4, proc.stdout[-1500:] + proc.stderr[-1500:]  # pytest: usage error
    assert f"ERROR: {option}:" in proc.stderr, proc.stderr[-1500:]
    assert not list(tmp_path.rglob("result.json"))


def test_valid_numeric_options_are_accepted(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/osworld", "--collect-only", "-q",
         "-p", "no:cacheprovider", "--results-dir", str(tmp_path), "--endpoint-retries=0",
         "--request-timeout=0.5", "--max-image-width=640", "--infra-reruns=0",
         "--temperature=0", "--settle=0"],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-1500:] + proc.stderr[-1500:]
