"""The harness tests' order (``tests/harness/helpers/order.py``): modules longest first, the
tests inside a module together and in their order, the seconds read from JUnit XML per tier;
and the shipped ``durations.json`` is one the ordering reads."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.harness.helpers import order

ROOT = Path(__file__).resolve().parents[3]


@dataclass
class _Item:
    nodeid: str
    marks: set[str] = field(default_factory=set)

    def get_closest_marker(self, name: str) -> object | None:
        return name if name in self.marks else None


def _ids(items: list[_Item]) -> list[str]:
    return [i.nodeid for i in items]


def test_long_modules_go_first_and_a_modules_tests_stay_together_in_order() -> None:
    items = [
        _Item("a.py::t1", {"e2e"}),
        _Item("b.py::t1", {"e2e"}),
        _Item("a.py::t2", {"e2e"}),
        _Item("c.py::t1", {"e2e"}),
        _Item("new.py::t1", {"e2e"}),
        _Item("b.py::t2", {"e2e"}),
        _Item("d.py::t1", {"e2e"}),
    ]
    durations = {"e2e": {"a.py": 10.0, "b.py": 300.0, "c.py": 40.0, "d.py": 40.0}}
    assert _ids(order.longest_first(items, durations)) == [
        "b.py::t1",
        "b.py::t2",
        "c.py::t1",  # c and d tie: collection order
        "d.py::t1",
        "a.py::t1",
        "a.py::t2",
        "new.py::t1",  # not measured yet: after the measured ones
    ]


def test_a_module_is_weighed_by_the_tier_its_tests_run_in() -> None:
    durations = {"e2e": {"a.py": 500.0, "b.py": 20.0}, "desktop": {"a.py": 2.0, "b.py": 30.0}}
    desktop = [_Item("a.py::t", {"desktop"}), _Item("b.py::t", {"desktop"})]
    e2e = [_Item("a.py::u", {"e2e"}), _Item("b.py::u", {"e2e"})]
    assert _ids(order.longest_first(desktop, durations)) == ["b.py::t", "a.py::t"]
    assert _ids(order.longest_first(e2e, durations)) == ["a.py::u", "b.py::u"]
    fast = [_Item("b.py::v"), _Item("a.py::v")]
    assert _ids(order.longest_first(fast, durations)) == ["b.py::v", "a.py::v"]  # unmeasured


def test_junit_reports_sum_each_modules_seconds_per_tier(tmp_path: Path) -> None:
    (tmp_path / "tests" / "x").mkdir(parents=True)
    (tmp_path / "tests" / "x" / "test_y.py").write_text("")
    (tmp_path / "tests" / "x" / "test_z.py").write_text("")
    report = tmp_path / "e2e.xml"
    report.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="tests.x.test_y" name="test_a" time="1.25"/>'
        '<testcase classname="tests.x.test_y.TestGroup" name="test_b" time="2.5"/>'
        '<testcase classname="tests.x.test_z" name="test_c[p]" time="0.05"/>'
        '<testcase classname="tests.x.gone" name="test_d" time="9"/>'
        "</testsuite></testsuites>"
    )
    assert order.from_junit([report], tmp_path) == {
        "e2e": {"tests/x/test_y.py": 3.8, "tests/x/test_z.py": 0.1}
    }


def test_a_malformed_durations_file_names_itself(tmp_path: Path) -> None:
    bad = tmp_path / "durations.json"
    bad.write_text(json.dumps({"tests/x/test_y.py": 3.0}))  # no tier
    with pytest.raises(ValueError, match=str(bad)):
        order.load(bad)
    assert order.load(tmp_path / "absent.json") == {}


def test_the_shipped_durations_name_existing_modules_of_each_tier() -> None:
    durations = order.load()
    assert set(durations) <= {"fast", "desktop", "e2e"} and durations.get("e2e")
    for modules in durations.values():
        gone = [m for m in modules if not (ROOT / m).is_file()]
        assert not gone, f"{order.DURATIONS} names modules that no longer exist: {gone}"


def test_the_refresh_script_refuses_a_report_not_named_after_its_tier(tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    report.write_text("<testsuites/>")
    out = tmp_path / "out.json"
    res = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "test_durations.py"),
            str(report),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert res.returncode == 2 and "named after its tier" in res.stderr and not out.exists()
