"""Comparing result sets (``fixtures.report.compare``) and the sample statistics (``fixtures.report.tables.stats``):
hand-computed tables, textbook values, and scipy's output for the McNemar test and paired CIs.

One small hand-made comparison is written in all four input formats (our run folder, an OSWorld
results tree, a CSV and a JSONL table); each must give the same numbers.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.cases.records.result_format import Outcome
from fixtures.cases.records.results import TaskResult, Versions, task_dir, write_result
from fixtures.report.compare import CompareInputError, compare, format_comparison, load_side
from fixtures.report.compare.__main__ import main
from fixtures.report.compare.analysis import side_info
from fixtures.report.compare.model import Sample, Side
from fixtures.report.summary import format_summary, summarize
from fixtures.report.tables.stats import (
    flake_rate,
    mcnemar_exact,
    paired_interval,
    pass_at_k,
    pass_hat_k,
)
from tests.harness.helpers.cli import run_main

ROOT = Path(__file__).resolve().parents[3]

# -- statistics ----------------------------------------------------------------------------


def test_mcnemar_exact_hand_computed_and_scipy() -> None:
    from scipy.stats import binomtest

    assert mcnemar_exact(0, 0) == 1.0  # no discordant pair: no evidence
    assert mcnemar_exact(1, 0) == 1.0  # 2 * P(X <= 0), n=1: 2 * 1/2
    assert mcnemar_exact(0, 5) == pytest.approx(2 / 32)  # 2 * (1/2)^5
    assert mcnemar_exact(2, 10) == pytest.approx(2 * (1 + 12 + 66) / 4096)  # 0.0386
    assert mcnemar_exact(7, 7) == 1.0
    # Agresti, Categorical Data Analysis: presidential approval, b=150, c=86 (z = -4.17)
    assert mcnemar_exact(150, 86) < 0.001
    for b, c in [(150, 86), (3, 11), (12, 4), (27, 30), (0, 9), (40, 1), (500, 560)]:
        assert mcnemar_exact(b, c) == pytest.approx(binomtest(b, b + c, 0.5).pvalue, rel=1e-9)


def test_paired_interval_hand_computed_and_scipy() -> None:
    from scipy.stats import ttest_rel

    # diffs 0.1, 0.3, 0.2: mean 0.2, s = 0.1, t(0.975, 2) = 4.303 (t table)
    lo, hi = paired_interval([0.1, 0.3, 0.2])
    assert (lo, hi) == pytest.approx(
        (0.2 - 4.302653 * 0.1 / math.sqrt(3), 0.2 + 4.302653 * 0.1 / math.sqrt(3)), abs=1e-5
    )
    assert paired_interval([1.0]) is None
    assert paired_interval([0.0, 0.0, 0.0]) == (0.0, 0.0)
    a = [1, 1, 0, 0, 1, 0, 1, 1, 0, 1, 0.5, 0.25]
    b = [1, 0, 1, 0, 1, 1, 1, 1, 1, 1, 0.75, 0.25]
    ci = ttest_rel(b, a).confidence_interval(0.95)
    assert paired_interval([y - x for x, y in zip(a, b)]) == pytest.approx(
        (ci.low, ci.high), abs=1e-9
    )


def test_pass_hat_k_and_flake_rate() -> None:
    assert pass_hat_k(5, 3, 2) == pytest.approx(3 / 10)  # C(3,2) / C(5,2)
    assert pass_hat_k(4, 4, 4) == 1.0 and pass_hat_k(4, 3, 4) == 0.0
    assert pass_at_k(4, 1, 4) == 1.0
    assert flake_rate(4, 1) == pytest.approx(0.5)  # 2*1*3 / (4*3)
    assert flake_rate(4, 2) == pytest.approx(2 / 3)
    assert flake_rate(3, 0) == 0.0 and flake_rate(3, 3) == 0.0
    with pytest.raises(ValueError):
        flake_rate(1, 1)
    with pytest.raises(ValueError):
        pass_hat_k(2, 1, 3)


# -- the hand-made comparison, in every input format ----------------------------------------
# (domain, task_id, score on A, score on B); None: attempted, unscored; "-": not attempted
TABLE = [
    ("chrome", "t1", 1.0, 1.0),
    ("chrome", "t2", 1.0, 0.0),  # pass -> fail
    ("chrome", "t3", 0.0, 1.0),  # fail -> pass
    ("chrome", "t4", 0.0, 0.0),
    ("os", "t5", 1.0, 1.0),
    ("os", "t6", 0.0, 1.0),  # fail -> pass
    ("os", "t7", None, 0.0),  # scored on B only: A's unscored case is no failure
    ("os", "t8", 1.0, None),  # scored on A only
    ("gimp", "t9", 1.0, "-"),  # only A attempted
    ("vs_code", "t10", "-", 1.0),  # only B attempted
]


def write_run(run_dir: Path, column: int, model: str = "Org/Model-1") -> Path:
    for row in TABLE:
        domain, task_id, score = row[0], row[1], row[column]
        if score == "-":
            continue
        assert score is None or isinstance(score, float)
        outcome: Outcome = "unscored" if score is None else ("passed" if score >= 1.0 else "failed")
        result = TaskResult(
            benchmark="osworld",
            case_id=f"{domain}/{task_id}",
            domain=domain,
            task_id=task_id,
            outcome=outcome,
            score=score,
            versions=Versions(model=model),
        )
        folder = task_dir(run_dir, model, result.case_id)
        write_result(folder, result)
        (folder / "replay.html").write_text(f"<title>replay {task_id}</title>")
    return run_dir


def write_osworld_tree(root: Path, column: int) -> Path:
    base = root / "pyautogui" / "screenshot" / "holo"
    for row in TABLE:
        if row[column] == "-":
            continue
        folder = base / row[0] / row[1]
        folder.mkdir(parents=True)
        (folder / "traj.jsonl").write_text("{}\n")
        if row[column] is not None:  # OSWorld writes result.txt only once scored
            (folder / "result.txt").write_text(f"{row[column]}\n")
    return root


def write_csv(path: Path, column: int) -> Path:
    lines = ["domain,task_id,score"]
    lines += [
        f"{r[0]},{r[1]},{'' if r[column] is None else r[column]}" for r in TABLE if r[column] != "-"
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def write_jsonl(path: Path, column: int) -> Path:
    path.write_text(
        "".join(
            json.dumps({"domain": r[0], "example_id": r[1], "score": r[column]}) + "\n"
            for r in TABLE
            if r[column] != "-"
        )
    )
    return path


def check_hand_computed(sides: list[Side]) -> None:
    c = compare(sides)
    pair = c.pairs[0]
    o = pair.overall
    # paired tasks t1..t6: A = 3/6, B = 4/6; diffs 0,-1,+1,0,0,+1
    assert o.n == 6 and o.a_mean == pytest.approx(0.5) and o.b_mean == pytest.approx(4 / 6)
    assert o.delta == pytest.approx(1 / 6)
    assert (o.pass_to_fail, o.fail_to_pass) == (1, 2)
    assert o.p_value == pytest.approx(1.0)  # 2 * P(X <= 1 | n=3) = 2 * 4/8
    # s^2 = (3*(1/6)^2 + (7/6)^2 + 2*(5/6)^2) / 5 = 0.56667; t(0.975, 5) = 2.570582
    half = 2.570582 * math.sqrt(102 / 36 / 5 / 6)
    assert o.ci95 == pytest.approx((1 / 6 - half, 1 / 6 + half), abs=1e-5)
    kinds = {f.key: f.kind for f in pair.flips}
    assert kinds == {
        "chrome/t2": "pass->fail",
        "chrome/t3": "fail->pass",
        "os/t6": "fail->pass",
        "os/t7": "scored on B only",
        "os/t8": "scored on A only",
    }
    assert pair.only_a == ["gimp/t9"] and pair.only_b == ["vs_code/t10"]
    chrome, os_ = pair.by_domain["chrome"], pair.by_domain["os"]
    assert (chrome.n, chrome.delta, chrome.pass_to_fail, chrome.fail_to_pass) == (4, 0.0, 1, 1)
    assert (os_.n, os_.a_mean, os_.b_mean, os_.fail_to_pass) == (2, 0.5, 1.0, 1)
    assert set(pair.by_category) == {"Daily", "OS"}
    assert pair.by_category["OS"].delta == pytest.approx(0.5)
    # no side has a harness card: the verdict says so before the numbers
    assert pair.cards.comparable is None
    assert pair.verdict == (
        f"{pair.cards.statement} — "
        f"{pair.b} is 16.7 points higher than {pair.a}, 95 % CI "
        f"[{100 * o.ci95[0]:.1f}, {100 * o.ci95[1]:.1f}], p = 1.000, 3 tasks flipped "
        "(2 fail->pass, 1 pass->fail) over 6 tasks scored on both"
    )
    assert pair.cards.statement.startswith(
        f"Comparability unknown: {pair.a} and {pair.b} have no harness card"
    )
    # unscored never counts as a failure: A's mean is over its 8 scored tasks (t1 t2 t5 t8 t9)
    a_info = c.sides[0]
    assert a_info.scored_tasks == 8 and a_info.unscored_tasks == 1
    assert a_info.mean_score == pytest.approx(5 / 8)


@pytest.mark.parametrize("fmt", ["run", "osworld", "csv", "jsonl"])
def test_hand_computed_comparison_in_every_format(tmp_path: Path, fmt: str) -> None:
    paths = []
    for column, name in ((2, "A"), (3, "B")):
        if fmt == "run":
            paths.append(write_run(tmp_path / name, column))
        elif fmt == "osworld":
            paths.append(write_osworld_tree(tmp_path / name, column))
        elif fmt == "csv":
            paths.append(write_csv(tmp_path / f"{name}.csv", column))
        else:
            paths.append(write_jsonl(tmp_path / f"{name}.jsonl", column))
    sides = [load_side(p) for p in paths]
    assert [s.kind for s in sides] == [{"csv": "table", "jsonl": "table"}.get(fmt, fmt)] * 2
    check_hand_computed(sides)
    if fmt == "osworld":
        assert sides[0].model == "holo" and sides[0].label == "holo"
        flip = next(f for f in compare(sides).pairs[0].flips if f.key == "chrome/t2")
        assert flip.a.replay and flip.a.replay.endswith("chrome/t2/traj.jsonl")


def test_mixed_kinds_and_deeper_osworld_path(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", 2)
    tree = write_osworld_tree(tmp_path / "tree", 3)
    # the model folder itself (what show_result.py's target_dir is) works too
    sides = [load_side(run), load_side(tree / "pyautogui" / "screenshot" / "holo")]
    check_hand_computed(sides)
    sides = [load_side(run), load_side(f"{tree}#holo")]
    check_hand_computed(sides)


def test_threshold_for_tables(tmp_path: Path) -> None:
    a = tmp_path / "a.csv"
    a.write_text("domain,task_id,score\nos,x,0.5\nos,y,1\n")
    assert [s.outcome for s in load_side(a).samples] == ["failed", "passed"]
    assert [s.outcome for s in load_side(a, threshold=0.5).samples] == ["passed", "passed"]


@pytest.mark.parametrize(
    "content, message",
    [
        ("domain,score\nos,1\n", "missing column(s) task_id"),
        ("domain,task_id,score\nos,x,high\n", ":2: column 'score': not a score: 'high'"),
        ("domain,task_id,score\n,x,1\n", ":2: column 'domain' is empty"),
        ("domain,task_id,score\nos,x,1\nos,x,0\n", "task os/x appears twice"),
        ("domain,task_id,score,sample\nos,x,1,first\n", "column 'sample': not an integer"),
        (
            "domain,task_id,score\nos,x,1\nos,y,75\n",
            ":3: column 'score': score 75 is outside [0, 1]",
        ),
    ],
)
def test_bad_tables_name_the_file_line_and_column(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(CompareInputError) as exc:
        load_side(path)
    assert str(path) in str(exc.value) and message in str(exc.value)


def test_bad_inputs_are_named(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"domain": "os", "task_id": "x", "score": 1}\nnot json\n')
    with pytest.raises(CompareInputError, match=r"bad.jsonl:2: not JSON"):
        load_side(bad)
    with pytest.raises(CompareInputError, match="no such file"):
        load_side(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CompareInputError, match="neither a run folder"):
        load_side(tmp_path / "empty")
    txt = tmp_path / "x.txt"
    txt.write_text("1")
    with pytest.raises(CompareInputError, match=r"\.csv or \.jsonl"):
        load_side(txt)
    tree = write_osworld_tree(tmp_path / "tree", 2)
    bad_score = tree / "pyautogui" / "screenshot" / "holo" / "os" / "t5" / "result.txt"
    bad_score.write_text("oops\n")
    with pytest.raises(CompareInputError, match=r"t5/result.txt: not a score: 'oops'"):
        load_side(tree)
    bad_score.write_text("True\n")  # show_result.py's eval() fallback
    assert load_side(tree).samples  # readable again
    write_osworld_tree(tmp_path / "tree2", 2)
    other = tmp_path / "tree2" / "pyautogui" / "a11y_tree" / "holo" / "os" / "t1"
    other.mkdir(parents=True)
    (other / "result.txt").write_text("1.0\n")
    with pytest.raises(CompareInputError, match="2 configurations"):
        load_side(tmp_path / "tree2")
    assert load_side(f"{tmp_path / 'tree2'}#a11y_tree/holo").samples[0].key == "os/t1"
    run = write_run(tmp_path / "run", 2)
    write_run(run, 3, model="Other/Model")
    with pytest.raises(CompareInputError, match="2 models"):
        load_side(run)
    assert len(load_side(f"{run}#Other/Model").samples) == 9


def side(label: str, rows: list[tuple[str, int | None, Outcome]]) -> Side:
    """A side from (task key, sample, outcome) rows; passed scores 1, failed 0."""
    samples = [
        Sample(
            key=k,
            domain=k.split("/")[0],
            task_id=k.split("/")[1],
            category="OS",
            sample=i,
            outcome=o,
            score=None if o == "unscored" else float(o == "passed"),
        )
        for k, i, o in rows
    ]
    return Side(label=label, path=label, kind="table", samples=samples)


def test_samples_pass_hat_k_flaky_and_mcnemar_on_stable_tasks() -> None:
    a = side(
        "A",
        [
            ("os/x", 0, "passed"),
            ("os/x", 1, "failed"),
            ("os/x", 2, "passed"),
            ("os/x", 3, "failed"),
            ("os/y", 0, "passed"),
            ("os/y", 1, "passed"),
            ("os/y", 2, "passed"),
            ("os/y", 3, "passed"),
        ],
    )
    info = side_info(a)
    assert info.samples == 4 and info.pass_at_k == 1.0
    assert info.pass_hat_k == pytest.approx(0.5)  # x: C(2,4)=0; y: 1
    assert info.flake_rate == pytest.approx(0.5)  # one of two tasks flips
    assert [(f.key, round(f.flake_rate, 4)) for f in info.flaky] == [("os/x", 0.6667)]
    b = side("B", [("os/x", 0, "passed"), ("os/y", 0, "failed")])
    pair = compare([a, b]).pairs[0]
    assert {f.key: f.kind for f in pair.flips} == {"os/x": "flaky", "os/y": "pass->fail"}
    assert pair.stable_pairs == 1 and pair.overall.n == 2
    assert pair.overall.delta == pytest.approx(((1 - 0.5) + (0 - 1)) / 2)
    assert "1 tasks with one outcome" in format_comparison(compare([a, b]))


def test_three_sides_name_tasks_that_flip_across_runs() -> None:
    a = side("run1", [("os/x", None, "passed"), ("os/y", None, "passed"), ("os/z", None, "failed")])
    b = side("run2", [("os/x", None, "failed"), ("os/y", None, "passed"), ("os/z", None, "failed")])
    c = side(
        "run2", [("os/x", None, "passed"), ("os/y", None, "passed"), ("os/z", None, "unscored")]
    )
    comparison = compare([a, b, c])
    assert [s.label for s in comparison.sides] == ["run1", "run2", "run2#2"]
    assert len(comparison.pairs) == 2
    assert [(f.key, f.n, f.passed) for f in comparison.across] == [("os/x", 3, 2)]
    assert comparison.pairs[1].flips[0].kind == "scored on A only"  # z: unscored, not failed
    text = format_comparison(comparison)
    assert "outcome differs across the 3 sides (1)" in text and "os/x  2/3 passed" in text


def test_nothing_in_common_and_identical_runs() -> None:
    a = side("A", [("os/x", None, "passed")])
    b = side("B", [("os/y", None, "passed")])
    assert "nothing to compare" in compare([a, b]).pairs[0].verdict
    same = compare([a, side("B", [("os/x", None, "passed")])]).pairs[0]
    assert same.verdict.partition(" — ")[2].startswith(
        "B is level with A (0.0 points), 95 % CI —, p = 1.000, 0 tasks"
    )
    with pytest.raises(ValueError):
        compare([a])


def test_summary_reports_pass_hat_k_and_flaky_cases() -> None:
    results = []
    for task, outcomes in (("x", "PFPF"), ("y", "PPPP"), ("z", "FFFF")):
        for i, o in enumerate(outcomes):
            results.append(
                TaskResult(
                    benchmark="osworld",
                    case_id=f"os/{task}",
                    domain="os",
                    task_id=task,
                    sample=i,
                    outcome="passed" if o == "P" else "failed",
                    score=float(o == "P"),
                    versions=Versions(model="m"),
                )
            )
    s = summarize(results, reference_policy=False)
    assert s.samples == 4 and s.pass_at_k == pytest.approx(2 / 3)
    assert s.pass_hat_k == pytest.approx(1 / 3)
    assert s.flake_rate == pytest.approx(1 / 3) and s.flaky == {"os/x": pytest.approx(2 / 3)}
    text = format_summary(s)
    assert "pass^4 33.3%" in text and "os/x  flake rate 0.67" in text


def test_cli_prints_verdict_and_writes_page_and_json(tmp_path: Path) -> None:
    a, b = write_run(tmp_path / "runA", 2), write_csv(tmp_path / "sheet.csv", 3)
    out_html, out_json = tmp_path / "cmp.html", tmp_path / "cmp.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "fixtures.report.compare",
            str(a),
            str(b),
            "--html",
            str(out_html),
            "--json",
            str(out_json),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "sheet is 16.7 points higher than runA" in proc.stdout
    assert "pass->fail (1):\n  chrome/t2  1 -> 0" in proc.stdout
    assert "only runA attempted (1): gimp/t9" in proc.stdout
    from fixtures.report.compare import Comparison

    saved = Comparison.model_validate_json(out_json.read_text())
    assert saved.pairs[0].overall.n == 6
    page = out_html.read_text()
    assert 'href="runA/Org_Model-1/chrome/t2/replay.html"' in page
    bad = run_main(main, a, tmp_path / "no")  # in process: the exit status and the line
    assert bad.returncode == 2 and "no such file or folder" in bad.stderr


def test_page_escapes_everything(tmp_path: Path) -> None:
    from fixtures.report.compare import comparison_html

    evil = "<script>alert(1)</script>"
    a = side(evil, [(f"os/{evil}", None, "passed")])
    b = side("B", [(f"os/{evil}", None, "failed")])
    page = comparison_html(compare([a, b]), base_dir=tmp_path)
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_cases_skipped_before_any_model_belong_to_the_run(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", 2)
    skipped = TaskResult(
        benchmark="osworld",
        case_id="chrome/t11",
        domain="chrome",
        task_id="t11",
        outcome="skipped",
        message="needs the internet",
    )
    write_result(task_dir(run, "unknown", skipped.case_id), skipped)
    side = load_side(run)
    assert side.model == "Org/Model-1" and len(side.samples) == 10
    assert len(load_side(f"{run}#Org/Model-1").samples) == 10
    info = side_info(side)
    assert info.unscored_tasks == 2 and info.mean_score == pytest.approx(5 / 8)
