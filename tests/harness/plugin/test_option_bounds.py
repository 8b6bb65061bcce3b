"""Every numeric option is validated at start-up with a usage error naming it (issue 11,
item 7): a bad value stops the run before any task instead of breaking every case. The ranges
are the constraints of the ``Settings`` model (``fixtures.run.config.settings``); a violation names the
option, not the field."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.run.config.options import OPTIONS
from fixtures.run.config.settings import SECTIONS
from tests.harness.helpers.parsed_settings import settings_of as _settings

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    "option, value",
    [
        ("--endpoint-retries", "-1"),
        ("--endpoint-backoff", "-0.5"),
        ("--request-timeout", "0"),
        ("--max-image-width", "0"),
        ("--infra-reruns", "-1"),
        ("--infra-rerun-delay", "-1"),
        ("--temperature", "nan"),
        ("--net-wait", "inf"),
        ("--turn-seconds", "0"),
        ("--watch-port", "70000"),
        ("--max-steps", "0"),
        ("--samples", "0"),
        ("--pass-threshold", "1.5"),
        ("--game-pass-threshold", "-0.1"),
        ("--settle", "-2"),
        ("--code-timeout", "0"),
        ("--judge-timeout", "-1"),
        ("--verifier-timeout", "0"),
    ],
)
def test_out_of_range_values_are_usage_errors_naming_the_option(option: str, value: str) -> None:
    with pytest.raises(pytest.UsageError, match=f"^{option}: must be"):
        _settings(f"{option}={value}")


def test_defaults_and_edge_values_pass() -> None:
    s = _settings()
    assert (s.endpoints.retries, s.run.infra_reruns, s.agent.max_steps) == (4, 2, 100)
    edge = _settings(
        "--endpoint-retries",
        "0",
        "--infra-reruns",
        "0",
        "--max-image-width",
        "640",
        "--temperature",
        "0",
        "--request-timeout",
        "0.5",
    )
    assert edge.endpoints.request_timeout == 0.5 and edge.agent.temperature == 0.0


def test_screen_is_bounded_with_a_usage_error_naming_it() -> None:
    for value in ("100000x100000", "7681x4320", "7680x4321", "319x200", "320x199", "1x1"):
        with pytest.raises(
            pytest.UsageError,
            match=r"^--screen: must be between 320x200 and "
            r"7680x4320 \(width x height\), got",
        ):
            _settings("--screen", value)
    assert _settings("--screen", "320x200").desktops.screen == (320, 200)
    assert _settings("--screen", "7680X4320").desktops.screen == (7680, 4320)
    for profile in ("os-helix", "holo-repro"):  # a profile's screen is checked the same way
        assert _settings("--profile", profile).desktops.screen == (1920, 1080)


def test_choices_are_literals_named_by_option() -> None:
    with pytest.raises(
        pytest.UsageError, match="^--pacing: expected 'turn', 'realtime' or 'wallclock', got 'fast'"
    ):
        _settings("--pacing", "fast")
    with pytest.raises(pytest.UsageError, match="^--order: expected"):
        _settings("--order", "random")
    with pytest.raises(pytest.UsageError, match="^--games: expected"):
        _settings("--games", "pong")


def test_every_option_lands_in_one_field_of_the_model() -> None:
    fields = {(section, name) for section, model in SECTIONS.items() for name in model.model_fields}
    assert {(d.section, d.field) for d in OPTIONS} <= fields
    flags = [d.flag for d in OPTIONS]
    assert len(set(flags)) == len(flags) == len(OPTIONS)  # no option declared twice


def _collect(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "tests/osworld",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "--results-dir",
            str(tmp_path),
            *args,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )


@pytest.mark.parametrize(
    "option, value",
    [
        ("--endpoint-retries", "-1"),
        ("--request-timeout", "0"),
        ("--settle", "-2"),
        ("--screen", "100000x100000"),
    ],
)
def test_the_run_stops_at_start_up_with_the_usage_error(
    tmp_path: Path, option: str, value: str
) -> None:
    proc = _collect(tmp_path, f"{option}={value}")
    assert proc.returncode == 4, proc.stdout[-1500:] + proc.stderr[-1500:]  # pytest: usage error
    assert f"ERROR: {option}:" in proc.stderr, proc.stderr[-1500:]
    assert not list(tmp_path.rglob("result.json"))
