"""Longest-first ordering of benchmark cases from earlier runs' result files."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from fixtures.cases.records.results import TaskResult, Timings, task_dir, write_result
from fixtures.run.collect import order_longest_first, previous_durations


def _write(root: Path, run: str, case: str, seconds: float, minutes_ago: int) -> None:
    domain, task = case.split("/")
    result = TaskResult(
        benchmark="osworld",
        case_id=case,
        domain=domain,
        task_id=task,
        outcome="passed",
        score=1.0,
        timings=Timings(total_s=seconds),
        finished_at=datetime.now(UTC) - timedelta(minutes=minutes_ago),
    )
    folder = task_dir(root / run, "m", case)
    folder.mkdir(parents=True)
    write_result(folder, result)


def test_previous_durations_take_the_latest_attempt_of_each_case(tmp_path: Path) -> None:
    _write(tmp_path, "old", "os/a", 100.0, minutes_ago=60)
    _write(tmp_path, "new", "os/a", 10.0, minutes_ago=5)
    _write(tmp_path, "old", "chrome/b", 50.0, minutes_ago=60)
    (tmp_path / "new" / "garbage").mkdir()
    assert previous_durations(tmp_path) == {"os/a": 10.0, "chrome/b": 50.0}
    assert previous_durations(tmp_path / "missing") == {}


@dataclass
class _Spec:
    id: str


@dataclass
class _Item:
    name: str
    callspec: _Spec | None


def test_longest_first_with_unknown_cases_at_the_median() -> None:
    items = [_Item(n, _Spec(n)) for n in ("os/short", "os/new", "os/long", "os/mid")]
    order_longest_first(items, {"os/short": 1.0, "os/long": 9.0, "os/mid": 5.0})
    assert [i.name for i in items] == ["os/long", "os/new", "os/mid", "os/short"]


def test_no_history_keeps_the_collection_order() -> None:
    items = [_Item(n, _Spec(n)) for n in ("b", "a", "c")]
    order_longest_first(items, {})
    assert [i.name for i in items] == ["b", "a", "c"]
