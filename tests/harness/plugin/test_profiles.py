"""Protocol profiles (``--profile``): one flag sets task list, step limit, screenshot history and
resolution; options given explicitly win; a bad name or combination is a usage error naming the
option. Settings are built from a real pytest option parser (the suite's own options)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness.helpers.parsed_settings import settings_of as settings
from tests.harness.helpers.suite import run_suite


def test_os_helix_profile_sets_the_protocol() -> None:
    s = settings("--profile", "os-helix")
    p = s.protocols
    # the built-in set: its tasks have no Google Drive, so the task list stays
    assert (s.agent.max_steps, s.agent.image_budget, s.tasks.task_list) == (50, 8, "test_all")
    assert p.image_size == (1504, 832) and p.exclude_markers == ("gdrive",)
    assert not p.code_actions  # the code tool stays its own switch (off/on comparisons)
    root = settings("--profile", "os-helix", "--osworld-root", "/tmp")
    assert root.tasks.task_list == "test_nogdrive"
    rec = s.protocol_record()
    assert rec["profile"] == "os-helix" and rec["image_size"] == [1504, 832]


def test_explicit_options_win_over_the_profile() -> None:
    s = settings(
        "--profile",
        "os-helix",
        "--max-steps",
        "15",
        "--image-budget",
        "2",
        "--max-image-width",
        "1280",
        "--code-actions",
    )
    assert (s.agent.max_steps, s.agent.image_budget) == (15, 2)
    assert s.protocols.image_size is None and s.protocols.code_actions


@pytest.mark.parametrize("profile", ["os-helix", "holo-repro"])
def test_an_explicit_option_equal_to_the_default_still_wins(profile: str) -> None:
    """Each profile field an option can set: given explicitly (even with the built-in default's
    value) the option wins; "given" is what the parser saw, not "differs from the default"."""
    s = settings(
        "--profile",
        profile,
        "--max-steps",
        "100",
        "--image-budget",
        "3",
        "--screen",
        "1920x1080",
        "--osworld-root",
        "/tmp",
        "--task-list",
        "test_all",
        "--max-image-width",
        "1920",
    )
    assert (s.agent.max_steps, s.agent.image_budget) == (100, 3)
    assert s.desktops.screen == (1920, 1080) and s.tasks.task_list == "test_all"
    assert s.protocols.image_size is None
    other = settings(
        "--profile", profile, "--max-steps", "7", "--image-budget", "5", "--screen", "1280x720"
    )
    assert (other.agent.max_steps, other.agent.image_budget) == (7, 5)
    assert other.desktops.screen == (1280, 720)
    plain = settings()  # no profile, nothing given: the built-in defaults
    assert (plain.agent.max_steps, plain.agent.image_budget) == (100, 3)
    assert plain.desktops.screen == (1920, 1080)


def test_holo_repro_profile_and_no_profile() -> None:
    s = settings("--profile", "holo-repro")
    assert (s.agent.max_steps, s.agent.image_budget, s.protocols.image_size) == (100, 3, None)
    plain = settings()
    assert plain.protocols.profile is None and plain.protocol_record()["profile"] is None


@pytest.mark.parametrize(
    "args, message",
    [
        (["--profile", "nope"], "--profile: unknown profile 'nope'"),
        (["--judge-url", "ftp://x"], "--judge-url"),
        (["--score-by", "vibes"], "--score-by"),
        (["--code-timeout", "0"], "--code-timeout"),
        (["--synthetic-dir", "/no/such/folder"], "--synthetic-dir"),
    ],
)
def test_bad_protocol_options(args: list[str], message: str) -> None:
    with pytest.raises(pytest.UsageError, match=message):
        settings(*args)


def test_profile_in_a_collect_only_run(tmp_path: Path) -> None:
    run = run_suite(tmp_path / "results", "p", "--profile", "os-helix", "--collect-only")
    assert run.rc == 0, run.output[-2000:]
    assert "os/os-create-report-file" in run.output
