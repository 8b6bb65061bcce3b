"""Every numeric option is validated at start-up with a usage error naming it (issue 11,
item 7): a bad value stops the run before any task instead of breaking every case."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.options import NUMERIC_BOUNDS, check_numeric_options

ROOT = Path(__file__).resolve().parents[2]
DEFAULTS = {"endpoint_retries": 4, "endpoint_backoff": 1.0, "request_timeout": 300.0,
            "net_wait": 600.0, "temperature": 0.8, "max_image_width": None, "infra_reruns": 2,
            "infra_rerun_delay": 2.0, "turn_seconds": 1.0, "watch_port": 0}


def _get(**changed: object):
    values = {**DEFAULTS, **changed}
    return lambda dest: values[dest]


@pytest.mark.parametrize("dest, value", [
    ("endpoint_retries", -1), ("endpoint_backoff", -0.5), ("request_timeout", 0.0),
    ("max_image_width", 0), ("infra_reruns", -1), ("infra_rerun_delay", -1.0),
    ("temperature", float("nan")), ("net_wait", float("inf")), ("turn_seconds", 0.0),
    ("watch_port", 70000),
])
def test_out_of_range_values_are_usage_errors_naming_the_option(dest: str, value: float) -> None:
    with pytest.raises(pytest.UsageError, match=f"^--{dest.replace('_', '-')}: must be"):
        check_numeric_options(_get(**{dest: value}))


def test_every_numeric_option_has_a_bound_and_defaults_pass() -> None:
    check_numeric_options(_get())
    check_numeric_options(_get(endpoint_retries=0, infra_reruns=0, max_image_width=640,
                               temperature=0.0, request_timeout=0.5))
    assert {d for d, *_ in NUMERIC_BOUNDS} == set(DEFAULTS)


def _collect(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "tests/osworld", "--collect-only", "-q",
         "-p", "no:cacheprovider", "--results-dir", str(tmp_path), *args],
        cwd=ROOT, capture_output=True, text=True, timeout=180)


@pytest.mark.parametrize("option, value", [("--endpoint-retries", "-1"),
                                           ("--request-timeout", "0"), ("--settle", "-2")])
def test_the_run_stops_at_start_up_with_the_usage_error(tmp_path: Path, option: str,
                                                        value: str) -> None:
    proc = _collect(tmp_path, f"{option}={value}")
    assert proc.returncode == 4, proc.stdout[-1500:] + proc.stderr[-1500:]  # pytest: usage error
    assert f"ERROR: {option}:" in proc.stderr, proc.stderr[-1500:]
    assert not list(tmp_path.rglob("result.json"))
