"""The report plugin end to end: a tiny synthetic suite run by ``pytester`` (in-process and with
``-n 2``), its HTML report opened in a real headless Chromium.

The inner suite's conftest plays the part of the suite's main plugin: it writes each case's
``result.json`` and ``replay.html`` and attaches the TaskResult to ``report.user_properties``.
"""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from fixtures.cases.records.results import load_results
from fixtures.report.summary import REFERENCE_BANNER, Summary, summarize
from tests.harness.helpers.inner_suite import report_conftest

pytest_plugins = ["pytester"]

SECRET = "sk-test-9f8e7d6c5b4a39281706"
CHROMIUM = "/usr/bin/chromium"

TESTS = r"""
import pytest

SPECS = [
    dict(case_id="chrome/aa11", outcome="passed", score=1.0, steps=4),
    dict(case_id="chrome/bb22", outcome="failed", score=0.0, steps=15,
         message="wrong tab <b>open</b>", instruction="<img src=x onerror=alert(1)>"),
    dict(case_id="libreoffice_calc/cc33", outcome="passed", score=1.0, steps=9),
    dict(case_id="os/dd44", outcome="unscored", score=None, infra="network",
         reason="proxy down <script>alert(1)</script>"),
    dict(case_id="text_editor/ee55", outcome="failed", score=0.5, steps=20),
]


@pytest.mark.parametrize("spec", SPECS, ids=[s["case_id"] for s in SPECS])
def test_case(spec):
    print("endpoint key was __SECRET_TEXT__")
    if spec["outcome"] == "unscored":
        pytest.xfail(f"unscored [{spec['infra']}] {spec['reason']}")
    assert spec["outcome"] == "passed", spec.get("message")


def test_plain():
    pass
"""


def make_suite(pytester: pytest.Pytester) -> Path:
    run_dir = pytester.path / "results" / "run1"
    pytester.makeconftest(
        report_conftest(
            run_dir,
            model="Org/Model-1",
            reference_policy=True,
            secrets=(SECRET,),
            replay="<title>replay {task_id}</title><h1>{task_id}</h1>",
        )
    )
    pytester.makepyfile(test_suite=TESTS.replace("__SECRET_TEXT__", SECRET))
    return run_dir


def report_rows(report: Path) -> dict[str, list[str]]:
    """testId -> the table cells pytest-html stored for that row (from its JSON data blob)."""
    text = report.read_text()
    blob = re.search(r'data-jsonblob="([^"]*)"', text)
    assert blob, "no data blob in the report"
    data = json.loads(html.unescape(blob.group(1)))
    rows: dict[str, list[str]] = {}
    for tests in data["tests"].values():
        for test in tests:
            cells = test["resultsTableRow"]
            test_id = re.sub(r"<[^>]+>", "", cells[1])
            rows[test_id] = cells
    return rows


def check_run(pytester: pytest.Pytester, run_dir: Path, *args: str) -> Path:
    report = pytester.path / "out" / "report.html"
    result = pytester.runpytest("--html", str(report), "-p", "no:cacheprovider", *args)
    result.assert_outcomes(passed=3, failed=2, xfailed=1)
    result.stdout.fnmatch_lines(
        ["*benchmark summary*", f"*{REFERENCE_BANNER}*", "*mean score 62.5%*"]
    )
    # summary.json is exactly what the result files on disk give
    on_disk = summarize(load_results(run_dir), reference_policy=True)
    assert Summary.model_validate_json((run_dir / "summary.json").read_text()) == on_disk
    assert (
        on_disk.total == 5 and on_disk.unscored == 1 and on_disk.by_infra_category == {"network": 1}
    )
    rows = report_rows(report)
    cells = {k.split("[")[-1].rstrip("]"): v for k, v in rows.items() if "[" in k}
    assert len(cells) == 5, "user_properties did not reach the controller for every case"
    assert ">1.000<" in cells["chrome/aa11"][2] and ">4<" in cells["chrome/aa11"][3]
    assert ">unscored<" in cells["os/dd44"][2]
    assert "&lt;script&gt;" in cells["os/dd44"][4] and "<script>" not in cells["os/dd44"][4]
    assert 'href="../results/run1/Org_Model-1/chrome/aa11/replay.html"' in cells["chrome/aa11"][5]
    plain = next(v for k, v in rows.items() if k.endswith("test_plain"))
    assert len(plain) == len(cells["chrome/aa11"])
    text = report.read_text()
    for path in [report, *run_dir.rglob("*")]:
        if path.is_file():
            assert SECRET not in path.read_text(errors="replace"), path
    assert "<img src=x" not in text
    return report


def test_report_in_process_and_browser(pytester: pytest.Pytester, tmp_path: Path) -> None:
    run_dir = make_suite(pytester)
    report = check_run(pytester, run_dir)
    shot = tmp_path / "report.png"
    look_in_browser(report, shot)
    assert shot.stat().st_size > 10_000


def test_report_with_xdist(pytester: pytest.Pytester) -> None:
    run_dir = make_suite(pytester)
    check_run(pytester, run_dir, "-n", "2")


def look_in_browser(report: Path, shot: Path) -> None:
    """Open the report in headless Chromium: summary, chart, columns, replay links."""
    if not Path(CHROMIUM).exists() or shutil.which("chromium") is None:
        pytest.skip("Chromium is not installed")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1600})
            page.goto(report.as_uri())
            page.wait_for_selector(
                "#results-table tbody.results-table-row td.col-score", timeout=15_000
            )
            assert REFERENCE_BANNER in page.inner_text(".bench-banner")
            assert "Mean score" in page.inner_text(".bench-headline")
            assert page.locator("svg.score-chart").count() == 2
            assert page.locator("svg.score-chart rect.bar").count() >= 4
            headers = page.locator("#results-table-head th").all_inner_texts()
            for name in ("Score", "Steps", "Infra reason", "Replay"):
                assert name in headers
            hrefs = page.eval_on_selector_all(".col-replay a", "els => els.map(e => e.href)")
            assert len(hrefs) == 5
            for href in hrefs:
                assert Path(unquote(urlparse(href).path)).is_file(), href
            page.screenshot(path=str(shot), full_page=True)
            page.goto(hrefs[0])
            assert page.title().startswith("replay ")
        finally:
            browser.close()


def test_task_result_property_is_redacted_and_round_trips() -> None:
    from fixtures.cases.records.redact import register_secret
    from fixtures.cases.records.results import TaskResult
    from fixtures.report.report import task_result_of, task_result_property

    key = "tok-" + "5a6b7c8d9e0f1a2b"
    register_secret(key)
    result = TaskResult(
        benchmark="osworld",
        case_id="os/x",
        domain="os",
        task_id="x",
        outcome="failed",
        score=0.0,
        message=f"401 for {key}",
    )
    name, value = task_result_property(result)
    assert name == "task_result" and key not in value

    class FakeReport:  # the attribute pytest's TestReport has; nothing else is read
        user_properties = [("other", "1"), (name, value)]

    got = task_result_of(FakeReport())
    assert got is not None and got.case_id == "os/x" and "[REDACTED]" in got.message


def test_svg_chart_escapes_and_is_well_formed() -> None:
    import xml.etree.ElementTree as ET

    from fixtures.report.svgchart import Bar, bar_chart

    svg = bar_chart(
        [
            Bar("<script>x</script>", 0.5, (0.2, 0.9), "1/2 & more"),
            Bar("os", None),
            Bar("big", 1.7),
        ],
        title='a "title" <b>',
    )
    root = ET.fromstring(svg)  # raises if anything broke the markup
    assert root.tag.endswith("svg") and "<script>" not in svg
    texts = [t.text for t in root.iter() if t.tag.endswith("text")]
    assert "<script>x</script>" in texts and 'a "title" <b>' in texts
    widths = [float(r.get("width")) for r in root.iter() if r.get("class") == "bar"]
    assert len(widths) == 2 and widths[1] == 2 * widths[0], "values are clipped to 100%"
