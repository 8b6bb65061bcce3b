"""Pass markers stay on one line: the progress plugin breaks pytest's line of "." only when it
has a line of its own to print (a real inner pytest run through ``pytester``)."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

CONFTEST = """
from pathlib import Path
from fixtures.report.progress import ProgressPlugin

def pytest_configure(config):
    config.pluginmanager.register(ProgressPlugin(
        config, run_name="markers", durations={}, live=False, check_evaluators=False,
        run_dir=Path(str(config.rootpath)) / "run"), "holo-progress")
"""

TESTS = """
import pytest

@pytest.mark.parametrize("task", [f"os/case-{i}" for i in range(8)])
def test_task(task):
    assert task
"""


def test_pass_markers_share_one_line(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_cases=TESTS)
    result = pytester.runpytest(
        "-q", "-p", "no:randomly", "-p", "no:xdist", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=8)
    lines = result.outlines
    dots = [line for line in lines if line and set(line) == {"."}]
    assert sum(len(line) for line in dots) == 8, lines
    # the first case's progress line follows its "."; the next seven share one line
    assert max(len(line) for line in dots) == 7, lines
    assert any("[progress 8/8]" in line for line in lines), lines
