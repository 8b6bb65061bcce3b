"""Summary maths against hand-computed values, and the summary files against the result files."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import pytest

from fixtures.cases.records.results import (
    TaskResult,
    Timings,
    Tokens,
    Versions,
    load_results,
    task_dir,
    write_result,
)
from fixtures.report.summary import (
    REFERENCE_BANNER,
    Summary,
    format_summary,
    summarize,
    write_summary,
)
from fixtures.report.tables.stats import ci95, pass_at_k, t_quantile, wilson_interval


def case(
    case_id: str,
    outcome: str,
    score: float | None,
    *,
    sample: int | None = None,
    benchmark: str = "osworld",
    group: str | None = None,
    infra: str | None = None,
    model: str = "m",
    steps: int = 3,
) -> TaskResult:
    domain, _, rest = case_id.partition("/")
    return TaskResult(
        benchmark=benchmark,  # type: ignore[arg-type]
        case_id=case_id,
        domain=domain,
        group=group,
        task_id=rest.rsplit("/", 1)[-1],
        sample=sample,
        outcome=outcome,  # type: ignore[arg-type]
        score=score,
        threshold=1.0,
        infra_category=infra,
        infra_reason="boom" if infra else None,
        steps=steps,
        timings=Timings(agent_s=10.0, total_s=12.5),
        tokens=Tokens(prompt=100, completion=10, reasoning=1),
        versions=Versions(model=model),
    )


def osworld_set() -> list[TaskResult]:
    return [
        case("chrome/a", "passed", 1.0),
        case("chrome/b", "failed", 0.0),
        case("chrome/c", "unscored", None, infra="network"),
        case("vlc/d", "passed", 1.0),
        case("libreoffice_calc/e", "failed", 0.0),
        case("libreoffice_writer/f", "passed", 1.0),
        case("os/g", "passed", 1.0),
        case("os/h", "unscored", None, infra="vm_start"),
        case("os/i", "unscored", None, infra="network"),
        case("multi_apps/j", "skipped", None),
        case("text_editor/k", "failed", 0.0),
    ]


def test_overall_and_wilson() -> None:
    s = summarize(osworld_set(), reference_policy=False)
    assert (s.total, s.scored, s.passed, s.unscored, s.skipped) == (11, 7, 4, 3, 1)
    assert s.mean_score == pytest.approx(4 / 7)
    assert s.pass_rate == pytest.approx(4 / 7)
    # Wilson, p = 4/7, n = 7, z = 1.96: centre (p + z²/2n)/(1 + z²/n), half-width by hand
    z = 1.959963984540054
    p, n = 4 / 7, 7
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    assert s.ci95 == pytest.approx((centre - half, centre + half))
    assert s.ci95 == pytest.approx((0.2505, 0.8418), abs=1e-4)
    assert s.ci_method == "wilson"
    assert s.by_infra_category == {"network": 2, "vm_start": 1}
    assert s.totals.steps == 33 and s.totals.agent_s == pytest.approx(110.0)
    assert s.totals.prompt_tokens == 1100 and s.totals.reasoning_tokens == 11
    assert s.samples == 1 and s.pass_at_k is None and s.mean_at_k is None


def test_by_domain_and_category() -> None:
    s = summarize(osworld_set(), reference_policy=False)
    chrome = s.by_domain["chrome"]
    assert (chrome.n, chrome.scored, chrome.passed, chrome.unscored) == (3, 2, 1, 1)
    assert chrome.mean_score == pytest.approx(0.5)
    assert s.by_domain["multi_apps"].mean_score is None and s.by_domain["multi_apps"].skipped == 1
    cats = s.by_category
    assert set(cats) == {"Daily", "Office", "OS", "Workflow"}
    # Daily = chrome a,b,(c) + vlc d + text_editor k -> scored 4, passed 2
    assert (cats["Daily"].scored, cats["Daily"].passed, cats["Daily"].n) == (4, 2, 5)
    assert cats["Office"].mean_score == pytest.approx(0.5)
    assert cats["OS"].mean_score == pytest.approx(1.0) and cats["OS"].unscored == 2
    assert s.by_group == {}


def test_fractional_scores_use_t_interval() -> None:
    rs = [case(f"chrome/{i}", "failed", v) for i, v in enumerate([0.2, 0.4, 0.6, 0.8])]
    s = summarize(rs, reference_policy=False)
    # mean 0.5, sd = sqrt(0.2/3), t(0.975, 3) = 3.182446
    half = 3.182446 * math.sqrt(0.2 / 3) / 2
    assert s.mean_score == pytest.approx(0.5)
    assert s.ci95 == pytest.approx((0.5 - half, 0.5 + half), abs=1e-5)
    assert s.ci_method == "t"


@pytest.mark.parametrize("df,expected", [(1, 12.7062), (2, 4.3027), (9, 2.2622), (30, 2.0423)])
def test_t_quantile_matches_tables(df: int, expected: float) -> None:
    assert t_quantile(0.975, df) == pytest.approx(expected, abs=1e-4)


def test_ci_edge_cases() -> None:
    assert ci95([]) is None
    assert ci95([0.5]) is None
    assert ci95([1.0]) == pytest.approx(wilson_interval(1, 1))
    lo, hi = ci95([0.0] * 10)  # type: ignore[misc]
    assert lo == 0.0 and 0.25 < hi < 0.35
    empty = summarize([], reference_policy=True)
    assert empty.mean_score is None and empty.ci95 is None and empty.pass_rate is None


def test_pass_at_k_estimator() -> None:
    assert pass_at_k(5, 2, 3) == pytest.approx(1 - 1 / 10)  # 1 - C(3,3)/C(5,3)
    assert pass_at_k(4, 1, 2) == pytest.approx(0.5)  # 1 - C(3,2)/C(4,2)
    assert pass_at_k(4, 0, 2) == 0.0 and pass_at_k(4, 3, 2) == 1.0
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)


def test_samples_pass_at_k_and_mean_at_k() -> None:
    rs = [
        case("chrome/a", "passed", 1.0, sample=0),
        case("chrome/a", "failed", 0.0, sample=1),
        case("chrome/a", "failed", 0.0, sample=2),
        case("chrome/b", "failed", 0.0, sample=0),
        case("chrome/b", "failed", 0.0, sample=1),
        case("chrome/b", "failed", 0.0, sample=2),
        case("os/c", "passed", 1.0, sample=0),
        case("os/c", "failed", 0.0, sample=1),
        case("os/c", "unscored", None, sample=2, infra="network"),
        case("os/d", "unscored", None, sample=0, infra="network"),
    ]
    s = summarize(rs, reference_policy=False)
    assert s.samples == 3 and s.cases == 4
    # a: pass@3(n=3,c=1)=1; b: 0; c: n=2 < k -> pass@2(n=2,c=1)=1; d: no scored sample, left out
    assert s.pass_at_k == pytest.approx(2 / 3)
    assert s.mean_at_k == pytest.approx((1 / 3 + 0 + 1 / 2) / 3)
    assert s.mean_score == pytest.approx(2 / 8)


def test_games_group_and_category() -> None:
    rs = [
        case("freeway/H/seed0", "passed", 0.9, benchmark="realtimegym", group="freeway/H"),
        case("freeway/H/seed1", "failed", 0.3, benchmark="realtimegym", group="freeway/H"),
        case("snake/L/seed0", "failed", 0.5, benchmark="realtimegym", group="snake/L"),
    ]
    s = summarize(rs, reference_policy=False)
    assert set(s.by_category) == {"Games"}
    assert s.by_group["freeway/H"].mean_score == pytest.approx(0.6)
    assert s.by_group["snake/L"].n == 1
    assert s.by_domain["freeway"].n == 2


def test_written_summary_equals_recomputation_from_disk(tmp_path: Path) -> None:
    for r in osworld_set():
        write_result(task_dir(tmp_path, r.versions.model or "m", r.case_id, r.sample), r)
    (tmp_path / "m" / "chrome" / "zz").mkdir()
    (tmp_path / "m" / "chrome" / "zz" / "result.json").write_text("not json")
    from fixtures.cases.records.results import scan_results

    scan = scan_results(tmp_path)
    summary = summarize(
        scan.results, reference_policy=True, corrupt_files=[str(c.path) for c in scan.corrupt]
    )
    json_path, csv_path = write_summary(tmp_path, summary)
    again = summarize(
        load_results(tmp_path),
        reference_policy=True,
        corrupt_files=[str(c.path) for c in scan.corrupt],
    )
    assert Summary.model_validate_json(json_path.read_text()) == again
    assert again == summarize(
        osworld_set(), reference_policy=True, corrupt_files=again.corrupt_files
    )
    assert len(again.corrupt_files) == 1
    rows = list(csv.DictReader(io.StringIO(csv_path.read_text())))
    assert rows[0]["level"] == "overall" and int(rows[0]["scored"]) == 7
    assert float(rows[0]["mean_score"]) == pytest.approx(4 / 7)
    domains = {r["name"]: r for r in rows if r["level"] == "domain"}
    assert set(domains) == set(again.by_domain)
    assert domains["multi_apps"]["mean_score"] == ""
    assert int(domains["os"]["unscored"]) == 2


def test_format_summary() -> None:
    ref = format_summary(summarize(osworld_set(), reference_policy=True))
    assert REFERENCE_BANNER in ref
    for word in ("chrome", "libreoffice_calc", "Daily", "network: 2", "vm_start: 1", "57.1%"):
        assert word in ref
    assert REFERENCE_BANNER not in format_summary(summarize(osworld_set(), reference_policy=False))
