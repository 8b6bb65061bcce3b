"""The harness tests' own tiers (``tests/harness/helpers/tiers.py``) and time scale
(``helpers/polling.py``): what marks a test gets from what it uses, what a test may start in its
tier, and how ``HOLO_TEST_TIME_SCALE`` stretches waits. Pure checks, plus one inner pytest run
(``pytester``, in-process) that collects a few tests through the real harness conftest."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.helpers import tiers
from tests.harness.helpers.polling import TIME_SCALE_ENV, scaled, time_scale, wait_for
from tests.harness.helpers.tiers import DESKTOP, E2E, marks_from, needs, reach, spawn_needs

pytest_plugins = ["pytester"]

HARNESS = Path(__file__).resolve().parents[1]


# -- what a process a test starts needs ------------------------------------------------------
@pytest.mark.parametrize(
    ("argv", "need"),
    [
        (["Xvfb", "-displayfd", "3"], DESKTOP),
        (["/usr/bin/bwrap", "--unshare-all"], DESKTOP),
        (["ip", "netns", "add", "x"], DESKTOP),
        (["useradd", "--system", "u"], DESKTOP),
        ([sys.executable, "-m", "computer_env.desktop.server", "--port", "0"], DESKTOP),
        ([sys.executable, "-m", "computer_env.desktop", "run"], DESKTOP),
        (["docker", "run", "img"], E2E),
        (["/work/x/.venv-vllm/bin/python", "-m", "holo_agent.tiny_model", "out"], E2E),
        ([sys.executable, "-m", "vllm.entrypoints.openai.api_server"], E2E),
        ([sys.executable, "-m", "pytest", "tests/osworld", "--collect-only"], E2E),
        ([sys.executable, "-mpytest", "--basetemp=x"], E2E),
        (["/venv/bin/pytest", "tests/harness"], E2E),
        (["/venv/bin/ray", "start", "--head"], E2E),
        ([sys.executable, "-m", "ray.util.client.server"], E2E),
    ],
)
def test_a_process_outside_the_fast_tier_names_the_mark_it_needs(
    argv: list[str], need: str
) -> None:
    found = spawn_needs(argv)
    assert found is not None and found[0] == need, found


@pytest.mark.parametrize(
    "argv",
    [
        [sys.executable, "-c", "import pytest; print(1)"],  # -c's program is its own
        [sys.executable, "-m", "computer_env.desktop.bench", "--runs", "1"],
        [sys.executable, "-m", "fixtures.report.compare", "a", "b"],
        [sys.executable, "script.py", "-m", "pytest"],  # the script's own arguments
        ["tinyproxy", "-d"],
        ["wmctrl", "-m"],
        ["git", "rev-parse", "HEAD"],
        [],
    ],
)
def test_fast_tier_work_needs_no_mark(argv: list[str]) -> None:
    assert spawn_needs(argv) is None


# -- what a test reaches ---------------------------------------------------------------------
def _uses_a_desktop() -> None:
    from tests.harness.helpers.localdesk import local_desktop  # noqa: F401 - named, not run


def _starts_a_child_suite() -> list[str]:
    return [sys.executable, "-m", "pytest", "tests/osworld"]


class _Spare:
    """A helper class whose method starts an X server."""

    def start(self) -> list[str]:
        return ["Xvfb", "-displayfd", "3"]


def test_names_and_strings_a_test_reaches_give_its_marks() -> None:
    def desktop_test() -> None:
        _uses_a_desktop()

    def suite_test() -> None:
        _starts_a_child_suite()

    def x_test() -> None:
        _Spare().start()

    def pure_test() -> None:
        assert sorted([2, 1]) == [1, 2]

    assert marks_from(reach(desktop_test)) == {DESKTOP}
    assert marks_from(reach(suite_test)) == {E2E}
    assert marks_from(reach(x_test)) == {DESKTOP}
    assert marks_from(reach(pure_test)) == set()


@needs(E2E)
def _heavy_helper() -> None:
    """A helper that starts something big, and says so."""


def test_a_helper_declares_its_tier_and_docker_vllm_ray_are_e2e() -> None:
    def uses_it() -> None:
        _heavy_helper()

    assert marks_from(reach(_heavy_helper)) == {E2E}
    assert marks_from(reach(uses_it)) == {E2E}
    assert marks_from({"docker_client"}) == {E2E, "docker"}
    assert marks_from({"tier:vllm"}) == {E2E, "vllm"}  # a test marked vllm by hand


def test_the_tiers_are_exclusive_and_every_mark_is_registered(pytestconfig: pytest.Config) -> None:
    registered = {line.split(":")[0].strip() for line in pytestconfig.getini("markers")}
    every = {m for marks in tiers.USES.values() for m in marks}
    every |= {m for marks in tiers.PROGRAMS.values() for m in marks} | tiers.IMPLY_E2E
    assert every | {DESKTOP, E2E} <= registered
    assert set(tiers.TIMEOUTS) == {"fast", DESKTOP, E2E}


INNER = """
import subprocess, sys
import pytest
from tests.harness.helpers.localdesk import local_desktop
from tests.harness.helpers.suite import run_suite


@pytest.fixture
def desk():
    with local_desktop() as d:
        yield d


def test_pure():
    assert True


def test_takes_a_desktop(desk):
    pass


def test_runs_a_suite(tmp_path):
    run_suite(tmp_path, "x")


def test_starts_a_child_pytest_unmarked():
    # the module's name is made at run time: reading the test cannot see it, the check does
    subprocess.run([sys.executable, "-m", "".join(["py", "test"]), "--version"],
                   capture_output=True)
"""


@pytest.fixture
def inner(pytester: pytest.Pytester) -> Iterator[pytest.Pytester]:
    """An inner test tree below ``tests/harness`` in shape: the harness conftest and the
    project's marks, one file."""
    pytester.makeconftest((HARNESS / "conftest.py").read_text())
    pytester.makefile(".ini", pytest=(HARNESS.parents[1] / "pytest.ini").read_text())
    pytester.makepyfile(test_inner=INNER)
    yield pytester


def test_collection_marks_each_test_by_what_it_uses(inner: pytest.Pytester) -> None:
    fast = inner.runpytest(
        "--collect-only",
        "-q",
        "-m",
        "not desktop and not e2e",
        "-p",
        "no:cacheprovider",
        "--strict-markers",
    )
    names = {line.split("::")[-1] for line in fast.outlines if "::" in line}
    assert names == {"test_pure", "test_starts_a_child_pytest_unmarked"}, fast.outlines
    desktop = inner.runpytest("--collect-only", "-q", "-m", "desktop", "-p", "no:cacheprovider")
    assert any(line.endswith("::test_takes_a_desktop") for line in desktop.outlines)
    e2e = inner.runpytest("--collect-only", "-q", "-m", "e2e", "-p", "no:cacheprovider")
    assert any(line.endswith("::test_runs_a_suite") for line in e2e.outlines)


def test_a_test_that_starts_what_its_tier_does_not_allow_fails(inner: pytest.Pytester) -> None:
    result = inner.runpytest("-k", "child_pytest or pure", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*a child pytest*needs mark 'e2e'*"])


# -- the time scale ----------------------------------------------------------------------------
def test_the_time_scale_stretches_waits_and_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TIME_SCALE_ENV, raising=False)
    assert time_scale() == 1.0 and scaled(2.0) == 2.0
    monkeypatch.setenv(TIME_SCALE_ENV, "2.5")
    assert scaled(2.0) == 5.0
    with pytest.raises(AssertionError, match=r"after 0\.125 s waiting for nothing"):
        wait_for(lambda: False, "nothing", 0.05, interval=0.01)
    for bad in ("0", "-1", "fast"):
        monkeypatch.setenv(TIME_SCALE_ENV, bad)
        with pytest.raises(ValueError, match=TIME_SCALE_ENV):
            time_scale()


def test_wait_for_returns_the_first_truthy_value_without_waiting_longer() -> None:
    calls: list[float] = []

    def third_time() -> int:
        calls.append(time.monotonic())
        return 7 if len(calls) == 3 else 0

    assert wait_for(third_time, "the third call", 5, interval=0.01) == 7 and len(calls) == 3
