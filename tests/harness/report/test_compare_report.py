"""``--compare-to`` end to end: a tiny synthetic suite run by ``pytester`` against a baseline
of each kind (run folder, OSWorld results tree, per-task CSV); the terminal summary, the report's
link and the comparison page (opened in a real headless Chromium, replay links followed).

The inner conftest plays the suite's main plugin, as in ``test_report.py``; the real option's
parsing and its errors are checked on a real pytest process.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from fixtures.cases.records.results import TaskResult, Versions, task_dir, write_result
from tests.harness.helpers.inner_suite import report_conftest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[3]
CHROMIUM = "/usr/bin/chromium"

TESTS = r"""
import pytest

SPECS = [
    dict(case_id="chrome/aa11", outcome="passed", score=1.0),
    dict(case_id="chrome/bb22", outcome="failed", score=0.0),
    dict(case_id="libreoffice_calc/cc33", outcome="passed", score=1.0),
    dict(case_id="os/dd44", outcome="unscored", score=None),
    dict(case_id="text_editor/ee55", outcome="failed", score=0.5),
]


@pytest.mark.parametrize("spec", SPECS, ids=[s["case_id"] for s in SPECS])
def test_case(spec):
    if spec["outcome"] == "unscored":
        pytest.xfail("infra: network: proxy down")
    assert spec["outcome"] == "passed"
"""

# the baseline A: (case, score); B above: aa11 fail->pass, bb22 pass->fail, dd44 scored on A
# only (B could not score it), gimp/ff66 only A attempted. Paired: aa11 bb22 cc33 ee55:
# A = 2/4, B = (1 + 0 + 1 + 0.5)/4: 12.5 points higher; McNemar b = c = 1: p = 1.
BASELINE = [
    ("chrome/aa11", 0.0),
    ("chrome/bb22", 1.0),
    ("libreoffice_calc/cc33", 1.0),
    ("os/dd44", 1.0),
    ("text_editor/ee55", 0.0),
    ("gimp/ff66", 1.0),
]


def write_baseline(kind: str, where: Path) -> tuple[Path, str]:
    """The baseline on disk in one of the three formats, and its label."""
    if kind == "run":
        run = where / "base"
        for case, score in BASELINE:
            domain, task_id = case.split("/")
            result = TaskResult(
                benchmark="osworld",
                case_id=case,
                domain=domain,
                task_id=task_id,
                outcome="passed" if score == 1 else "failed",
                score=score,
                versions=Versions(model="Org/Model-1"),
            )
            folder = task_dir(run, "Org/Model-1", case)
            write_result(folder, result)
            (folder / "replay.html").write_text(f"<title>replay A {task_id}</title><h1>A</h1>")
        return run, "base"
    if kind == "osworld":
        tree = where / "osworld-results"
        for case, score in BASELINE:
            folder = tree / "pyautogui" / "screenshot" / "base-model" / case
            folder.mkdir(parents=True)
            (folder / "traj.jsonl").write_text('{"step_num": 1}\n')
            (folder / "result.txt").write_text(f"{score}\n")
        return tree, "base-model"
    where.mkdir(parents=True, exist_ok=True)
    sheet = where / "published.csv"
    sheet.write_text(
        "domain,task_id,score\n"
        + "".join(f"{c.split('/')[0]},{c.split('/')[1]},{s}\n" for c, s in BASELINE)
    )
    return sheet, "published"


def run_suite(pytester: pytest.Pytester, kind: str) -> tuple[Path, Path, str]:
    baseline, label = write_baseline(kind, pytester.path / "baselines")
    run_dir = pytester.path / "results" / "run1"
    pytester.makeconftest(
        report_conftest(
            run_dir,
            model="Org/Model-2",
            reference_policy=False,
            compare_to=baseline,
            replay="<title>replay B {task_id}</title><h1>B</h1>",
        )
    )
    pytester.makepyfile(test_suite=TESTS)
    report = pytester.path / "out" / "report.html"
    result = pytester.runpytest("--html", str(report), "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=2, xfailed=1)
    result.stdout.fnmatch_lines(
        [
            f"*comparison with {label}*",
            f"Comparability unknown: * — run1 is 12.5 points higher than {label}, 95 % CI *, "
            "p = 1.000, 2 tasks flipped "
            "(1 fail->pass, 1 pass->fail) over 4 tasks scored on both",
            "pass->fail (1):",
            "  chrome/bb22  1 -> 0",
            "fail->pass (1):",
            "  chrome/aa11  0 -> 1",
            f"scored on {label} only (1):",
            "  os/dd44  1 -> unscored",
            f"only {label} attempted (1): gimp/ff66",
            "comparison page: *compare.html",
        ]
    )
    assert (run_dir / "compare.html").is_file() and (run_dir / "compare.json").is_file()
    text = report.read_text()
    assert "points higher than" in text and 'href="../results/run1/compare.html"' in text
    return report, run_dir, label


@pytest.mark.parametrize("kind", ["osworld", "csv"])
def test_compare_to_osworld_tree_and_csv(pytester: pytest.Pytester, kind: str) -> None:
    _, run_dir, _ = run_suite(pytester, kind)
    page = (run_dir / "compare.html").read_text()
    if kind == "osworld":  # A's replay column links the OSWorld task folder's trajectory
        assert re.search(r'class="replay-a" href="[^"]*base-model/chrome/bb22/traj.jsonl"', page)


def test_compare_to_run_folder_in_browser(pytester: pytest.Pytester, tmp_path: Path) -> None:
    report, run_dir, label = run_suite(pytester, "run")
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
            page = browser.new_page(viewport={"width": 1280, "height": 1400})
            page.goto(report.as_uri())
            page.wait_for_selector(".bench-verdict", timeout=15_000)
            assert "12.5 points higher than base" in page.inner_text(".bench-verdict")
            page.goto(page.eval_on_selector("a.compare-link", "e => e.href"))
            page.wait_for_selector("svg.compare-chart", timeout=15_000)
            assert "12.5 points higher" in page.inner_text(".verdict")
            assert page.locator("svg.compare-chart").count() == 2  # domains, categories
            # paired: 3 domains (chrome, libreoffice_calc, text_editor) and 2 categories
            # (Daily, Office): one bar per side each
            assert page.locator("svg.compare-chart rect.side-0").count() == 5
            assert page.locator("svg.compare-chart rect.side-1").count() == 5
            rows = page.locator("table.flips tr.flip").all_inner_texts()
            assert [r.split("\t")[:2] for r in rows] == [
                ["chrome/bb22", "pass→fail"],
                ["chrome/aa11", "fail→pass"],
                ["os/dd44", f"scored on {label} only"],
            ]
            for cls, side in (("replay-a", "A"), ("replay-b", "B")):
                hrefs = page.eval_on_selector_all(f"a.{cls}", "els => els.map(e => e.href)")
                assert len(hrefs) == 3  # B's unscored case has its replay too
                for href in hrefs:
                    path = Path(unquote(urlparse(href).path))
                    assert path.is_file() and f"replay {side}" in path.read_text(), href
            page.locator("table.flips a.open-both").first.click()
            page.wait_for_function("document.querySelectorAll('iframe').length >= 2")
            shot = tmp_path / "compare.png"
            page.screenshot(path=str(shot), full_page=True)
            assert shot.stat().st_size > 10_000
        finally:
            browser.close()


def _pytest(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=180,
        start_new_session=True,
    )


def test_compare_to_option_errors_name_the_input(tmp_path: Path) -> None:
    probe = tmp_path / "test_probe.py"
    probe.write_text("def test_nothing():\n    pass\n")
    common = (
        "-p",
        "fixtures.run.plugin",
        "-q",
        "--rootdir",
        str(tmp_path),
        str(probe),
        "--results-dir",
        str(tmp_path / "results"),
    )
    proc = _pytest(*common, "--compare-to", "no-such-run", cwd=tmp_path)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert (
        "--compare-to: no-such-run: no such file or folder, and no run 'no-such-run'" in proc.stderr
    )
    bad = tmp_path / "sheet.csv"
    bad.write_text("domain,id,result\nos,x,1\n")
    proc = _pytest(*common, "--compare-to", str(bad), cwd=tmp_path)
    assert (
        proc.returncode == 4
        and f"--compare-to: {bad}: header: missing column(s) score" in proc.stderr
    ), proc.stderr
    # a run name inside --results-dir is found there
    (tmp_path / "results" / "old").mkdir(parents=True)
    bad.rename(tmp_path / "results" / "old" / "x.csv")
    proc = _pytest(*common, "--compare-to", "old", cwd=tmp_path)
    assert proc.returncode == 4 and "old: neither a run folder" in proc.stderr, proc.stderr
