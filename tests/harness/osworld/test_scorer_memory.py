"""The scoring process's memory cap (computer_env.osworld.scoring.process): a result file that
inflates past it is the agent's 0 (``EvaluatorOutOfMemory``, an ``EvaluatorCrash``), not
unscored; past it in setup, or a process killed by a signal, stays the environment's
(``ScorerFailed``); an overrun process is replaced. The scoring process is real (spawned, capped
by ``RLIMIT_DATA``), the evaluation is OSWorld's own ``compare_table`` on a real xlsx whose sheet
inflates; the end-to-end case is ``--audit``'s ``result-bomb`` on the built-in LibreOffice Calc
task."""

from __future__ import annotations

import os
import resource
import shutil
import signal
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_osworld_evaluate import cache, make_ctx, task

from computer_env.errors import ConfigurationError, EvaluatorCrash, EvaluatorOutOfMemory
from computer_env.osworld.catalog.tasks import Task
from computer_env.osworld.context import TaskContext
from computer_env.osworld.scoring.process import (
    MEMORY_CAP_ENV,
    MIN_CAP_MIB,
    ScorerFailed,
    memory_cap,
)
from computer_env.osworld.scoring.process import ScoringProcess as Scorer
from fixtures.cases.outcomes import classify
from tests.harness.helpers.audit_suite import audit_run
from tests.harness.helpers.tiers import E2E, needs

CAP_MIB = 1024
"""The test's cap: room for OSWorld's metrics (~400 MiB ``VmData``), far below the bomb."""


@pytest.fixture
@needs(E2E)
def scorer() -> Iterator[Scorer]:
    """A real scoring process under the test's memory cap; its tests build sheets of millions
    of cells until the cap stops them (tens of seconds of CPU): the end-to-end tier."""
    s = Scorer(timeout=240, memory_cap_mib=CAP_MIB)
    yield s
    s.close()


def _job(name: str) -> str:
    return f"tests.harness.helpers.scorer_memory_jobs:{name}"


def write_inflating_xlsx(path: Path, xml_mib: int = 1024) -> None:
    """A valid xlsx (about a MB) whose one sheet is ``xml_mib`` MiB of 16-cell rows, each cell
    a 4,000-character string of its own: openpyxl holds about a GB of strings. Long strings
    rather than numbers: the cap is reached after a third of the CPU (8 s instead of 25 s on a
    quiet core), which a loaded host stretched past the scorer's 240 s."""
    ns = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    pkg = "http://schemas.openxmlformats.org/package/2006/relationships"
    ooxml = "application/vnd.openxmlformats-officedocument.spreadsheetml"
    small = {
        "[Content_Types].xml": (
            '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
            'relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>'
            f'<Override PartName="/xl/workbook.xml" ContentType="{ooxml}.sheet.main+xml"/>'
            '<Override PartName="/xl/worksheets/sheet1.xml" '
            f'ContentType="{ooxml}.worksheet+xml"/></Types>'
        ),
        "_rels/.rels": f'<Relationships xmlns="{pkg}"><Relationship Id="rId1" Type="{rel}/'
        'officeDocument" Target="xl/workbook.xml"/></Relationships>',
        "xl/workbook.xml": f'<workbook xmlns="{ns}" xmlns:r="{rel}"><sheets><sheet name="S" '
        'sheetId="1" r:id="rId1"/></sheets></workbook>',
        "xl/_rels/workbook.xml.rels": f'<Relationships xmlns="{pkg}"><Relationship Id="rId1" '
        f'Type="{rel}/worksheet" Target="worksheets/sheet1.xml"/>'
        "</Relationships>",
    }
    text = "x" * 4000  # each cell a string of its own: memory grows with the XML read
    rows = (
        ("<row>" + f'<c t="inlineStr"><is><t>{text}</t></is></c>' * 16 + "</row>") * 16
    ).encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in small.items():
            z.writestr(name, text)
        with z.open("xl/worksheets/sheet1.xml", "w") as sheet:
            sheet.write(f'<worksheet xmlns="{ns}"><sheetData>'.encode())
            for _ in range((xml_mib << 20) // len(rows)):
                sheet.write(rows)
            sheet.write(b"</sheetData></worksheet>")


def _bomb_task(tmp_path: Path) -> tuple[Task, TaskContext]:
    ctx = make_ctx(tmp_path)
    write_inflating_xlsx(ctx.task_cache_dir / "out.xlsx")
    small = ctx.task_cache_dir / "gold.xlsx"
    with zipfile.ZipFile(ctx.task_cache_dir / "out.xlsx") as z, zipfile.ZipFile(small, "w") as g:
        for name in z.namelist():
            g.writestr(
                name,
                z.read(name)
                if "sheet1" not in name
                else b'<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/'
                b'main"><sheetData><row><c><v>1</v></c></row></sheetData></worksheet>',
            )
    t = task(
        {
            "func": "compare_table",
            "result": cache("out.xlsx"),
            "expected": cache("gold.xlsx"),
            "options": {
                "rules": [{"type": "sheet_data", "sheet_idx0": "RI0", "sheet_idx1": "EI0"}]
            },
        }
    )
    return t, ctx


def test_an_evaluation_past_the_cap_is_the_agents_crash_and_the_process_is_replaced(
    scorer: Scorer, tmp_path: Path
) -> None:
    t, ctx = _bomb_task(tmp_path)
    first = scorer.call(_job("limits"), "limits")
    assert first == (CAP_MIB << 20, "1")  # RLIMIT_DATA set in the child; BLAS on one thread
    warm = scorer.pid
    with pytest.raises(EvaluatorOutOfMemory) as info:
        scorer.evaluate(t, ctx)
    exc = info.value
    assert isinstance(exc, EvaluatorCrash)  # scored 0 by the guard once the agent acted
    text = str(exc)
    assert f"memory cap of {CAP_MIB} MiB" in text and "cache_file out.xlsx" in text, text
    assert "demo/t1" in text
    assert classify(exc) == ("evaluator", text)  # before the agent acted: the environment's
    assert scorer.pid is None  # replaced: its heap is spent
    assert scorer.call(_job("limits"), "limits") == first and scorer.pid != warm


@pytest.mark.parametrize("swallow", [False, True], ids=["raised", "swallowed"])
def test_a_job_past_the_cap_outside_evaluation_is_an_environment_failure(
    scorer: Scorer, swallow: bool
) -> None:
    with pytest.raises(ScorerFailed) as info:
        scorer.call(_job("hog"), "the config setup of calc/x", swallow=swallow)
    text = str(info.value)
    why = "reached" if swallow else r"ran out of memory (MemoryError)"
    assert (
        why in text and f"memory cap of {CAP_MIB} MiB during the config setup of calc/x" in text
    ), text
    assert not isinstance(info.value, EvaluatorCrash)
    assert classify(info.value) == ("scorer", text)  # rerun, then unscored
    assert scorer.pid is None
    assert scorer.call(_job("limits"), "limits")[0] == CAP_MIB << 20


def test_a_scoring_process_killed_during_an_evaluation_stays_an_environment_failure(
    tmp_path: Path,
) -> None:
    """The host's OOM killer (here: a SIGKILL once the process grows past 400 MiB) is not the
    cap: ``ScorerFailed``, unscored."""
    t, ctx = _bomb_task(tmp_path)
    scorer = Scorer(timeout=240, memory_cap_mib=4096)
    try:
        scorer.call(_job("limits"), "limits")
        pid = scorer.pid
        assert pid is not None

        def oom_killer() -> None:
            deadline = time.monotonic() + 200
            while time.monotonic() < deadline:
                try:
                    status = Path(f"/proc/{pid}/status").read_text()
                except OSError:
                    return
                rss = int(next(x for x in status.splitlines() if x.startswith("VmRSS:")).split()[1])
                if rss > 400 << 10:
                    os.kill(pid, signal.SIGKILL)
                    return
                time.sleep(0.02)

        killer = threading.Thread(target=oom_killer)
        killer.start()
        with pytest.raises(
            ScorerFailed,
            match=r"was killed by SIGKILL .* during the evaluation "
            r"of demo/t1",
        ) as info:
            scorer.evaluate(t, ctx)
        killer.join()
        assert not isinstance(info.value, EvaluatorCrash)
    finally:
        scorer.close()


def test_the_cap_defaults_within_the_host_and_is_overridable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(MEMORY_CAP_ENV, raising=False)
    host = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") >> 20
    default = memory_cap()
    assert MIN_CAP_MIB <= default <= max(MIN_CAP_MIB, host // 4)
    monkeypatch.setenv(MEMORY_CAP_ENV, "2048")
    assert memory_cap() == 2048 and Scorer().memory_cap_mib == 2048
    assert memory_cap(300) == 300
    monkeypatch.setenv(MEMORY_CAP_ENV, "lots")
    with pytest.raises(ConfigurationError, match=rf"\${MEMORY_CAP_ENV}: 'lots' is not a number"):
        Scorer()
    monkeypatch.setenv(MEMORY_CAP_ENV, "0")
    uncapped = Scorer(timeout=60)
    try:
        assert uncapped.call(_job("limits"), "limits")[0] == resource.RLIM_INFINITY
    finally:
        uncapped.close()


@pytest.mark.desktop
@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("bwrap"),
    reason="the local sandbox needs root and bubblewrap",
)
def test_a_result_bomb_on_a_calc_task_is_the_agents_zero_not_unscored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Audit finding, fixed: an xlsx rewritten as a zip bomb (a valid document whose sheet
    inflates to GBs) made OSWorld's compare_table exhaust the host's memory; the scoring process
    was killed and the case unscored (a dodged 0). Now it is the agent's 0 before any reader
    runs: the result check refuses parts inflating past 1 GiB (``result_unreadable``); the
    memory cap stays the backstop for a bomb no zip check sees (the jobs above)."""
    monkeypatch.setenv(MEMORY_CAP_ENV, str(CAP_MIB))  # the suite's workers inherit it
    audit = audit_run(
        tmp_path, ["do-nothing", "result-bomb"], tasks={"libreoffice_calc": ["calc-total-expenses"]}
    )
    out = audit.run.output
    assert audit.harness_flaws() == [], (audit.harness_flaws(), out[-4000:])
    results = audit.results()
    bomb = results[("libreoffice_calc/calc-total-expenses", "result-bomb")]
    assert (bomb["outcome"], bomb["score"], bomb["failure_category"]) == (
        "failed",
        0.0,
        "result_unreadable",
    ), bomb["message"]
    assert "/home/user/expenses.xlsx" in bomb["message"] and "inflate to" in bomb["message"]
    honest = results[("libreoffice_calc/calc-total-expenses", "do-nothing")]
    assert (honest["outcome"], honest["score"], honest["failure_category"]) == (
        "failed",
        0.0,
        None,
    ), honest["message"]  # an honest evaluation runs under the cap
    assert audit.run.rc == 0, out[-3000:]
