"""Oracle routes: every oracle says how it reaches its result (gui, terminal, config,
infeasible), the route is validated against its actions, and ``--check-evaluators`` counts
proofs per route, never an infeasible-only oracle as a proof. Pure file and model checks; the
oracles themselves run on real desktops in test_osworld_real_offline.py."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from computer_env.osworld.catalog.oracle import PROOF_ROUTES, load_oracle_file, oracle_index
from computer_env.osworld.errors import TaskLoadError
from fixtures.cases.records.result_format import Outcome
from fixtures.cases.records.results import TaskResult
from fixtures.report.summary import format_summary, summarize

MIN_PROOF_ORACLES = 25
"""Shipped oracles that solve their task through the app's GUI or a terminal."""

TASK = "030eeff7-b492-4218-b312-701ec99ee0cc"


def _write(tmp_path: Path, data: dict[str, object]) -> Path:
    path = tmp_path / f"{TASK}.json"
    path.write_text(json.dumps(data))
    return path


def test_every_shipped_oracle_declares_a_route_that_fits_its_actions() -> None:
    oracles = {case: load_oracle_file(path) for case, path in oracle_index().items()}
    routes = Counter(o.route for o in oracles.values())
    assert sum(routes[r] for r in PROOF_ROUTES) >= MIN_PROOF_ORACLES, routes
    for case, o in oracles.items():
        kinds = {a.type for a in o.actions}
        if o.route in PROOF_ROUTES:  # through the desktop as a model acts: no /execute
            assert kinds <= {"pyautogui", "wait_until"}, case
            assert "pyautogui" in kinds, case
        if o.route == "infeasible":
            assert kinds == {"infeasible"}, case
        if o.route == "terminal":  # keystrokes into a terminal the oracle opened
            assert any(
                "hotkey('ctrl', 'alt', 't')" in a.model_dump().get("code", "") for a in o.actions
            ), case


@pytest.mark.parametrize(
    "data, field",
    [
        ({"task": TASK, "note": "n", "actions": [{"type": "infeasible"}]}, "field route"),
        (
            {"task": TASK, "route": "mouse", "note": "n", "actions": [{"type": "infeasible"}]},
            "field route",
        ),
        (
            {
                "task": TASK,
                "route": "gui",
                "note": "n",
                "actions": [{"type": "execute", "command": "true"}],
            },
            "actions.0",
        ),
        (
            {
                "task": TASK,
                "route": "terminal",
                "note": "n",
                "actions": [{"type": "launch", "command": "xterm"}],
            },
            "actions.0",
        ),
        (
            {
                "task": TASK,
                "route": "infeasible",
                "note": "n",
                "actions": [{"type": "pyautogui", "code": "pyautogui.press('esc')"}],
            },
            "actions.0",
        ),
        (
            {"task": TASK, "route": "config", "note": "n", "actions": [{"type": "infeasible"}]},
            "actions.0",
        ),
    ],
)
def test_a_missing_unknown_or_unfitting_route_is_a_load_error_naming_the_file(
    tmp_path: Path, data: dict[str, object], field: str
) -> None:
    path = _write(tmp_path, data)
    with pytest.raises(TaskLoadError) as err:
        load_oracle_file(path)
    assert str(path) in str(err.value) and field in str(err.value)


def test_a_fitting_route_loads(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        {
            "task": TASK,
            "route": "gui",
            "note": "n",
            "actions": [
                {"type": "wait_until", "command": "true", "what": "w"},
                {"type": "pyautogui", "code": "pyautogui.press('esc')"},
            ],
        },
    )
    assert load_oracle_file(path).route == "gui"


def _result(case: str, route: str | None, outcome: Outcome = "passed") -> TaskResult:
    return TaskResult(
        benchmark="osworld",
        case_id=case,
        domain=case.split("/")[0],
        task_id=case.split("/")[1],
        outcome=outcome,
        score=None if outcome == "skipped" else float(outcome == "passed"),
        oracle_route=route,
    )


def test_summary_counts_proofs_per_route_and_infeasible_only_apart() -> None:
    results = [
        _result("chrome/a", "gui"),
        _result("chrome/b", "gui"),
        _result("os/c", "terminal"),
        _result("vlc/d", "config"),
        _result("os/e", "infeasible"),
        _result("os/f", "infeasible"),
        _result("vlc/g", "gui", "failed"),
        _result("vlc/h", "gui", "skipped"),
        _result("os/i", None, "skipped"),
    ]
    summary = summarize(results, reference_policy=False)
    assert summary.proofs == {"gui": 2, "terminal": 1, "config": 1, "infeasible_only": 2}
    text = format_summary(summary)
    assert "gui 2, terminal 1, config 1; infeasible-only 2" in text
    assert json.loads(summary.model_dump_json())["proofs"]["infeasible_only"] == 2
    # a run without oracles has no proofs figure
    assert summarize([_result("os/i", None, "skipped")], reference_policy=False).proofs is None
