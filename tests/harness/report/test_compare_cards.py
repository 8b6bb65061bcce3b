"""Comparisons that name what differs: two run folders, each with its results and the harness
card built from the suite's real settings (its own option parser), compared by the library and
by the CLI's ``main`` (in process; ``test_compare.py`` runs it as a real child process): the
verdict says whether the runs are comparable before any number, both cards are shown side by side with each difference
marked, ``--strict`` refuses, and a published sheet is checked against the protocol it is
assumed to follow. Fast tier: no desktop."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fixtures.cases.records.results import TaskResult, Versions, task_dir, write_result
from fixtures.report.card import RunInputs, build_card, compare_cards, write_card
from fixtures.report.compare import compare, comparison_html, format_comparison, load_side
from fixtures.report.compare.__main__ import main
from tests.harness.helpers.cli import CliRun, run_main
from tests.harness.helpers.parsed_settings import settings_of

# (case, score on A, score on B)
CASES = [
    ("os/t1", 1.0, 1.0),
    ("os/t2", 1.0, 0.0),
    ("os/t3", 0.0, 1.0),
    ("os/t4", 0.0, 0.0),
    ("os/t5", 1.0, 1.0),
]


def osworld_root(folder: Path, changed: str | None = None) -> Path:
    """An evaluation_examples folder holding the cases' task files (``changed``: one task whose
    file says something else)."""
    for case, _, _ in CASES:
        path = folder / "examples" / f"{case}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        task = {
            "id": case.split("/")[1],
            "instruction": f"Do {case}.",
            "config": [],
            "evaluator": {"func": "infeasible"},
        }
        if case == changed:
            task["instruction"] += " And more."
        path.write_text(json.dumps(task))
    return folder


def write_run(
    run_dir: Path,
    column: int,
    root: Path,
    *args: str,
    model: str = "holo",
    desktop: str = "OSWorld VM",
) -> Path:
    """A run folder: a result per case and the card of a run given ``args``."""
    results = []
    for case, *scores in CASES:
        domain, task_id = case.split("/")
        score = scores[column - 1]
        r = TaskResult(
            benchmark="osworld",
            case_id=case,
            domain=domain,
            task_id=task_id,
            outcome="passed" if score else "failed",
            score=score,
            versions=Versions(model=model, desktop=desktop),
        )
        write_result(task_dir(run_dir, model, case), r)
        results.append(r)
    s = settings_of("--osworld-root", str(root), "--base-url", "http://gpu:8000/v1", *args)
    write_card(run_dir, build_card(RunInputs(s, run_dir.name), results, complete=True))
    return run_dir


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return osworld_root(tmp_path / "osworld")


def pair_of(a: Path, b: Path, **kw: Any) -> Any:
    return compare([load_side(a, **kw), load_side(b, **kw)]).pairs[0]


def cli(*args: str | Path) -> CliRun:
    return run_main(main, *args)


def test_identical_protocols_are_comparable(tmp_path: Path, root: Path) -> None:
    a = write_run(tmp_path / "A", 1, root)
    b = write_run(tmp_path / "B", 2, root, model="holo-2")  # another model: what is compared
    pair = pair_of(a, b)
    assert pair.cards.comparable is True, pair.cards.statement
    assert pair.verdict.startswith(
        "Comparable: same task content, desktop kind, step budget, "
        "sampling and prompt — B is level with A"
    )
    assert [d.field for d in pair.cards.differences if d.impact != "info"] == []
    assert "model" in [d.label for d in pair.cards.differences]  # shown, never marked


@pytest.mark.parametrize(
    ("option", "a_value", "b_value", "named"),
    [
        ("--temperature", "0.8", "0", "temperature (A 0.8, B 0)"),
        ("--max-steps", "50", "100", "step budget (A 50, B 100)"),
    ],
)
def test_a_sampling_or_budget_difference_is_named_in_the_verdict(
    tmp_path: Path, root: Path, option: str, a_value: str, b_value: str, named: str
) -> None:
    a = write_run(tmp_path / "A", 1, root, option, a_value)
    b = write_run(tmp_path / "B", 2, root, option, b_value)
    pair = pair_of(a, b)
    assert pair.cards.comparable is False
    assert pair.verdict.startswith(f"NOT COMPARABLE: B and A differ in {named} — B is "), (
        pair.verdict
    )
    (diff,) = pair.cards.blocking
    assert diff.impact == "comparability"
    text = format_comparison(compare([load_side(a), load_side(b)]))
    row = next(line for line in text.splitlines() if line.startswith("!!"))
    assert diff.label in row and a_value in row and b_value in row  # side by side, marked
    assert "  task content" in text and "  desktop kind" in text  # key rows, the same


def test_other_task_files_make_runs_not_comparable_before_any_p_value(
    tmp_path: Path, root: Path
) -> None:
    other = osworld_root(tmp_path / "osworld-edited", changed="os/t3")
    a = write_run(tmp_path / "A", 1, root)
    b = write_run(tmp_path / "B", 2, other, "--temperature", "0.5")
    pair = pair_of(a, b)
    assert pair.cards.comparable is False
    statement, _, numbers = pair.verdict.partition(" — ")
    assert statement.startswith(
        "NOT COMPARABLE: B and A differ in task content "
        "(A 5 shared task(s), B 1 of them with other task files (os/t3))"
    )
    assert statement.index("task content") < statement.index("temperature")  # content first
    assert "p = " in numbers and "p = " not in statement


def test_a_subset_of_the_same_task_files_stays_comparable(tmp_path: Path, root: Path) -> None:
    a = write_run(tmp_path / "A", 1, root)
    b = write_run(tmp_path / "B", 2, root)
    card_b = json.loads((b / "card.json").read_text())
    card_b["tasks"]["files"].pop("os/t5")  # B ran four of A's five tasks
    card_b["tasks"]["content_sha256"] = "0" * 64
    (b / "card.json").write_text(json.dumps(card_b))
    pair = pair_of(a, b)
    assert pair.cards.comparable is True, pair.cards.statement


def test_other_desktop_kinds_are_not_comparable(tmp_path: Path, root: Path) -> None:
    a = write_run(tmp_path / "A", 1, root)
    b = write_run(tmp_path / "B", 2, root, desktop="embedded desktop")
    pair = pair_of(a, b)
    assert pair.cards.comparable is False
    assert "desktop kind (A OSWorld VM (5), B embedded desktop (5))" in pair.cards.statement


def test_a_score_moving_difference_is_named_and_the_runs_stay_comparable(
    tmp_path: Path, root: Path
) -> None:
    a = write_run(tmp_path / "A", 1, root, "--infra-reruns", "0")
    b = write_run(tmp_path / "B", 2, root)
    card_b = json.loads((b / "card.json").read_text())
    card_b["tasks"]["osworld_code"] = "checkout /opt/OSWorld"
    (b / "card.json").write_text(json.dumps(card_b))
    cards = compare_cards(load_side(a).card, load_side(b).card)  # type: ignore[arg-type]
    assert cards.comparable is True
    assert cards.statement.startswith(
        "Comparable: same task content, desktop kind, step budget, sampling and prompt; but "
        "differences that can move a score: "
    )
    assert "infra reruns (A 0, B 2)" in cards.statement
    assert "OSWorld code (A desktop-env" in cards.statement
    assert {d.impact for d in cards.score_moving} == {"score"}


def test_strict_refuses_what_is_not_comparable(tmp_path: Path, root: Path) -> None:
    same_a = write_run(tmp_path / "A", 1, root)
    same_b = write_run(tmp_path / "B", 2, root)
    hot = write_run(tmp_path / "hot", 2, root, "--temperature", "1.2")
    edited = write_run(tmp_path / "edited", 2, osworld_root(tmp_path / "o2", changed="os/t1"))
    ok = cli(same_a, same_b, "--strict")
    assert ok.returncode == 0, ok.stderr
    assert "Comparable: same task content" in ok.stdout
    for other, words in ((hot, "temperature (A 0.8, hot 1.2)"), (edited, "task content")):
        refused = cli(same_a, other, "--strict")
        assert refused.returncode == 3, (refused.stdout, refused.stderr)
        assert "--strict: refused" in refused.stderr and words in refused.stderr
        assert "points" not in refused.stdout + refused.stderr  # no number is given
        plain = cli(same_a, other)  # without --strict: compared, the difference named first
        assert plain.returncode == 0 and "NOT COMPARABLE" in plain.stdout and words in plain.stdout


def test_a_sheet_is_checked_against_the_published_protocol_it_assumes(tmp_path: Path) -> None:
    """A per-task sheet has no card: with --assume-protocol osworld-verified-50 a built-in run
    on the embedded desktop with the reference endpoint and 100 steps is named not comparable,
    for each reason; without it the comparability is unknown; --strict refuses both."""
    run = tmp_path / "run"
    s = settings_of()
    results = []
    for case, score, _ in CASES:
        domain, task_id = case.split("/")
        r = TaskResult(
            benchmark="osworld",
            case_id=case,
            domain=domain,
            task_id=task_id,
            outcome="passed" if score else "failed",
            score=score,
            versions=Versions(model="reference-policy", desktop="embedded desktop"),
        )
        write_result(task_dir(run, "reference-policy", case), r)
        results.append(r)
    write_card(run, build_card(RunInputs(s, "run"), results, complete=True))
    sheet = tmp_path / "published.csv"
    sheet.write_text(
        "domain,task_id,score\n"
        + "".join(f"{c.split('/')[0]},{c.split('/')[1]},{b}\n" for c, _, b in CASES)
    )
    assumed = cli(sheet, run, "--assume-protocol", "osworld-verified-50")
    assert assumed.returncode == 0, assumed.stderr
    verdict = next(line for line in assumed.stdout.splitlines() if "NOT COMPARABLE" in line)
    assert "published is assumed made under the published protocol osworld-verified-50" in verdict
    for words in (
        "step budget 100, published 50",
        "embedded desktop",
        "reference endpoint played",
        "built-in tasks",
    ):
        assert words in verdict, words
    unknown = cli(sheet, run)
    assert "Comparability unknown: published has no harness card" in unknown.stdout
    assert "--assume-protocol" in unknown.stdout
    for args in (("--assume-protocol", "osworld-verified-50"), ()):
        assert cli(sheet, run, "--strict", *args).returncode == 3


def test_a_run_without_a_card_is_of_unknown_comparability(tmp_path: Path, root: Path) -> None:
    a = write_run(tmp_path / "A", 1, root)
    b = write_run(tmp_path / "B", 2, root)
    (b / "card.json").unlink()  # a run of an older harness
    pair = pair_of(a, b)
    assert pair.cards.comparable is None
    assert pair.verdict.startswith("Comparability unknown: B has no harness card")


def test_the_page_shows_both_cards_and_escapes_them(tmp_path: Path, root: Path) -> None:
    evil = "<script>alert(1)</script>"
    a = write_run(tmp_path / "A", 1, root, "--prompt", "default-v1")
    b = write_run(tmp_path / "B", 2, root, "--reasoning-effort", evil)
    page = comparison_html(compare([load_side(a), load_side(b)]), base_dir=tmp_path)
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert '<tr class="card-block"><td>reasoning effort</td><td>medium</td>' in page
    assert '<tr class="card-same"><td>step budget</td><td>100</td><td>100</td>' in page
    assert 'class="verdict not-comparable"' in page
