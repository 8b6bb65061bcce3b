"""OSWorld's code in the worker's scoring process (computer_env.osworld.scoring.process): the same
scores and the same exceptions as in the worker itself, a dead or hung scoring process as an
environment failure, and a worker that never imports OSWorld's metrics, getters or setup
controller. The scoring process is real (spawned), its jobs are real code
(tests/harness/helpers/scorer_jobs.py and OSWorld's own getters and metrics on real files)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from test_osworld_evaluate import TEXT_EQ, cache, make_ctx, put, task

from computer_env.errors import EvaluatorCrash, EvaluatorInfraError, InfraError, VMUnreachable
from computer_env.osworld.errors import EvaluatorUnsupported, SetupUnsupported
from computer_env.osworld.scoring.in_process import evaluate_in_process as evaluate
from computer_env.osworld.scoring.process import ScorerFailed
from computer_env.osworld.scoring.process import ScoringProcess as Scorer
from fixtures.cases.outcomes import classify
from tests.harness.helpers.polling import scaled, wait_for

WARM_UP_S = scaled(120.0)
"""How long a scoring process may take to start (its imports: seconds on a loaded host), in the
tests whose client limit is 2 s for the jobs they time: a start is never what they time."""

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
JOBS = "tests.harness.helpers.scorer_jobs"
"""The jobs' module, as the scoring process imports it (the project root is on its path)."""


@pytest.fixture
def scorer() -> Iterator[Scorer]:
    s = Scorer(timeout=60)
    yield s
    s.close()


def _job(name: str) -> str:
    return f"{JOBS}:{name}"


@pytest.mark.parametrize(
    "job,cls,message,attrs",
    [
        (
            "unsupported",
            EvaluatorUnsupported,
            "metric 'compare_audio': needs librosa",
            {
                "what": "metric 'compare_audio'",
                "reason": "needs librosa",
                "name": "metric 'compare_audio'",
            },
        ),
        (
            "setup_unsupported",
            SetupUnsupported,
            "setup step 'googledrive': needs Google credentials",
            {"step_type": "googledrive", "reason": "needs Google credentials"},
        ),
        (
            "crash_on_refused",
            EvaluatorCrash,
            "metric 'compare_table' failed (crash): refused",
            {"detail": None},
        ),
        (
            "infra_with_detail",
            EvaluatorInfraError,
            "getter 'vm_file' failed (environment)",
            {"detail": "port 5000"},
        ),
        (
            "unreachable",
            VMUnreachable,
            "the desktop server at http://10.0.0.2:5000 does not answer",
            {},
        ),
    ],
)
def test_exceptions_cross_with_their_type_message_and_attributes(
    scorer: Scorer, job: str, cls: type[Exception], message: str, attrs: dict[str, Any]
) -> None:
    with pytest.raises(Exception) as info:
        scorer.call(_job(job), job)
    exc = info.value
    assert type(exc) is cls and str(exc) == message
    assert {k: getattr(exc, k) for k in attrs} == attrs
    assert any("scoring process" in note and job in note for note in exc.__notes__)
    if isinstance(exc, InfraError):
        assert exc.category == getattr(cls, "category") and exc.reason == message


def test_a_cause_chain_crosses_and_is_classified_as_it_was_raised(scorer: Scorer) -> None:
    with pytest.raises(EvaluatorCrash) as info:
        scorer.call(_job("crash_on_refused"), "crash")
    cause = info.value.__cause__
    assert type(cause) is ConnectionRefusedError and cause.errno == 111
    assert str(cause) == "[Errno 111] Connection refused"
    with pytest.raises(KeyError) as bug:  # a harness bug while handling a refusal: not infra
        scorer.call(_job("bug_while_refused"), "bug")
    assert bug.value.__cause__ is None and bug.value.__suppress_context__
    assert classify(bug.value) is None
    assert classify(info.value) == ("evaluator", str(info.value))


def test_an_exception_of_a_class_not_loaded_here_is_a_stand_in(scorer: Scorer) -> None:
    with pytest.raises(ValueError) as info:
        scorer.call(_job("foreign"), "foreign")
    exc = info.value
    assert (type(exc).__module__, type(exc).__qualname__) == (JOBS, "MetricBlewUp")
    assert str(exc) == "3 cells unreadable in Sheet1"
    assert (getattr(exc, "cells"), getattr(exc, "sheet")) == (3, "Sheet1")  # the stand-in's
    assert JOBS not in sys.modules  # crossing did not import the job's module here


def test_log_records_are_logged_again_here(
    scorer: Scorer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    pid = scorer.call(_job("speak"), "speak", "hello")
    assert pid != os.getpid() and pid == scorer.pid
    said = [r for r in caplog.records if r.name == "desktopenv.metric"]
    assert [r.getMessage() for r in said] == ["metric says hello"]
    assert said[0].process == pid


def test_a_killed_scoring_process_is_an_environment_failure_then_a_fresh_one_runs(
    scorer: Scorer,
) -> None:
    first = scorer.call(_job("speak"), "speak", "before")
    with pytest.raises(
        ScorerFailed,
        match=r"pid \d+\) was killed by SIGKILL .* during the "
        r"evaluation of calc/x",
    ) as info:
        scorer.call(_job("die"), "the evaluation of calc/x")
    assert isinstance(info.value, EvaluatorInfraError) and info.value.category == "scorer"
    assert classify(info.value) == ("scorer", str(info.value))
    again = scorer.call(_job("speak"), "speak", "after")
    assert again != first


def test_a_hung_job_is_stopped_at_the_timeout(scorer: Scorer) -> None:
    scorer.call(_job("speak"), "speak", "warm")
    hung = scorer.pid
    assert hung is not None
    with pytest.raises(ScorerFailed, match=r"hang did not finish within 1 s .*was stopped"):
        scorer.call(_job("hang"), "hang", timeout=1)
    assert scorer.pid is None
    assert (
        not Path(f"/proc/{hung}").exists()
        or Path(f"/proc/{hung}/status").read_text().count("zombie") == 1
    )


def test_the_scoring_process_is_replaced_after_its_jobs(scorer: Scorer) -> None:
    scorer.tasks_per_process = 2
    pids = [scorer.call(_job("speak"), "speak", str(i)) for i in range(3)]
    assert pids[0] == pids[1] != pids[2]
    assert scorer.rss_mib > 10


def test_a_replaced_scoring_process_is_started_and_warmed_at_once(scorer: Scorer) -> None:
    """The next process starts when the last is replaced, not at the next job, and imports
    OSWorld's setup controller before that job runs (the job itself imports nothing)."""
    scorer.tasks_per_process = 1
    first = scorer.call(_job("speak"), "speak", "0")
    wait_for(lambda: scorer.pid not in (None, first), "the next scoring process", timeout=60)
    assert scorer.call(_job("imported"), "imported", "desktop_env.controllers.setup") is True


def test_closing_while_a_replacement_warms_up_leaves_no_scoring_process(scorer: Scorer) -> None:
    scorer.tasks_per_process = 1
    scorer.call(_job("speak"), "speak", "0")  # replaced: the warm-up starts behind
    scorer.close()
    wait_for(
        lambda: not any(t.name == "scorer-warm" for t in threading.enumerate()),
        "the warm-up to end",
        timeout=60,
    )
    assert scorer.pid is None


# ---------------------------------------------- the same scores and exceptions as in-process


def _unreachable_vm_file() -> dict[str, Any]:
    return {
        "func": "compare_text_file",
        "result": {"type": "vm_file", "path": "/tmp/o.txt", "dest": "o.txt"},
        "expected": cache("gold.txt"),
    }


EVALUATORS: dict[str, tuple[dict[str, Any], list[str], dict[str, str]]] = {
    "equal": (TEXT_EQ, [], {"out.txt": "a\nb\n", "gold.txt": "a\nb\n"}),
    "different": (TEXT_EQ, [], {"out.txt": "a\nc\n", "gold.txt": "a\nb\n"}),
    "no result file": (TEXT_EQ, [], {"gold.txt": "a\n"}),
    "no expected file": (TEXT_EQ, [], {"out.txt": "a\n"}),
    "list, conj or": (
        {
            "func": ["compare_text_file", "compare_text_file"],
            "conj": "or",
            "result": [cache("out.txt"), cache("out.txt")],
            "expected": [cache("gold.txt"), cache("out.txt")],
        },
        [],
        {"out.txt": "x", "gold.txt": "y"},
    ),
    "infeasible answered": ({"func": "infeasible"}, ["FAIL"], {}),
    "feasible answered FAIL": (TEXT_EQ, ["FAIL"], {"out.txt": "a", "gold.txt": "a"}),
    "unknown metric": ({"func": "no_such_metric", "result": cache("out.txt")}, [], {}),
    "unknown getter": (
        {
            "func": "compare_text_file",
            "result": {"type": "no_such_getter"},
            "expected": cache("gold.txt"),
        },
        [],
        {},
    ),
    "unreachable desktop": (_unreachable_vm_file(), [], {"gold.txt": "a"}),
}


def _outcome(run: Callable[[], Any]) -> tuple[Any, ...]:
    try:
        data = run().model_dump()
    except Exception as exc:  # noqa: BLE001 - compared below
        return (
            "raised",
            type(exc),
            str(exc),
            {k: v for k, v in vars(exc).items() if k != "__notes__"},
        )
    data.pop("seconds")
    return ("scored", data)


@pytest.fixture(scope="module")
def serving_scorer() -> Iterator[Scorer]:
    """One scoring process for job after job, as a run's worker has (the tests that kill, hang
    or time a scoring process take one of their own, ``scorer``)."""
    s = Scorer(timeout=60)
    yield s
    s.close()


@pytest.mark.parametrize("name", list(EVALUATORS))
def test_the_same_score_or_exception_as_in_the_worker(
    serving_scorer: Scorer, tmp_path: Path, name: str
) -> None:
    spec, history, files = EVALUATORS[name]
    ctx = make_ctx(tmp_path, history=history)
    for file, text in files.items():
        put(ctx, file, text)
    t = task(spec)
    here = _outcome(lambda: evaluate(t, ctx))
    there = _outcome(lambda: serving_scorer.evaluate(t, ctx))
    assert there == here
    assert ctx.action_history == history  # the worker's context is left as it was


# ------------------------------------------------- the worker never imports OSWorld's code

SCRIPT = """
import json, sys
from pathlib import Path
from computer_env.osworld.scoring.process import close_scoring_process as close_scorer
from fixtures.benchmarks.osworld import ScoringWitness, explain_files, score_with_evaluator
from fixtures.cases.attempt import Attempt
from test_osworld_evaluate import make_ctx, task
tmp = Path(sys.argv[1])
ctx = make_ctx(tmp)
for name in ("out.xlsx", "gold.xlsx"):
    (ctx.task_cache_dir / name).write_bytes((tmp / name).read_bytes())
t = task({"func": "compare_table", "result": {"type": "cache_file", "path": "out.xlsx"},
          "expected": {"type": "cache_file", "path": "gold.xlsx"},
          "options": {"rules": [{"type": "sheet_data", "sheet_idx0": "RI0", "sheet_idx1": "EI0"}]}})
attempt = Attempt(number=1)
witness = ScoringWitness(ctx, tmp / "case", explain=explain_files)
witness.before()
score_with_evaluator(t, ctx, attempt)
scored = witness.after([d if isinstance(d, dict) else d.model_dump()
                        for d in attempt.evaluator])
close_scorer()
heavy = [m for m in ("pandas", "openpyxl", "docx", "desktop_env.evaluators.metrics.table",
                     "desktop_env.controllers.setup") if m in sys.modules]
print(json.dumps({"score": attempt.score, "heavy": heavy,
                  "explained": [x["lines"] for x in scored["explanations"]]}))
"""


def test_the_worker_scores_a_spreadsheet_without_importing_osworlds_code(tmp_path: Path) -> None:
    import openpyxl  # here, in the test process: the worker is a fresh process below

    for name, value in (("out.xlsx", 41), ("gold.xlsx", 42)):
        book = openpyxl.Workbook()
        book.active.append(["total", value])
        book.save(tmp_path / name)
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": f"{HERE}:{ROOT}"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["score"] == 0.0  # 41 is not 42: OSWorld's compare_table ran (in the scorer)
    assert out["heavy"] == []
    assert any("41" in line and "42" in line for lines in out["explained"] for line in lines), out


@pytest.mark.desktop
def test_a_suite_worker_plays_a_spreadsheet_task_without_osworlds_code(tmp_path: Path) -> None:
    """A real ``-n 1`` run of the built-in calc smoke task: passed, and its worker never
    imported OSWorld's setup controller, metrics or their readers (they ran in its scorer)."""
    from tests.harness.helpers.suite import builtin_smoke, run_suite, task_list_file

    calc = builtin_smoke()["libreoffice_calc"][:1]
    probe = tmp_path / "probe"
    probe.mkdir()
    run = run_suite(
        tmp_path,
        "scorer",
        "-n",
        "1",
        "-p",
        "tests.harness.helpers.scorer_probe",
        "--task-list",
        str(task_list_file(tmp_path, {"libreoffice_calc": calc})),
        env={"PYTHONPATH": f"{HERE}:{ROOT}", "SCORER_PROBE_DIR": str(probe)},
    )
    assert run.rc == 0, run.output[-3000:]
    (result,) = run.results().values()
    assert result["outcome"] == "passed" and result["score"] == 1.0
    worker = json.loads((probe / "gw0.json").read_text())
    assert worker["heavy"] == [], worker


def test_support_check_without_a_desktop_runs_in_the_scoring_process(scorer: Scorer) -> None:
    """The desktop-free part of the support check (what a case runs while its desktop resets):
    an unknown metric is refused there, with its type, and a known one imports its module there,
    never in the worker."""
    with pytest.raises(EvaluatorUnsupported, match="no_such_metric") as info:
        scorer.ensure_supported(
            task(
                {
                    "func": "no_such_metric",
                    "result": cache("out.txt"),
                    "expected": cache("gold.txt"),
                }
            )
        )
    assert any("scoring process" in note for note in info.value.__notes__)  # raised there
    scorer.ensure_supported(task(TEXT_EQ))  # compare_text_file: known, nothing raised
    assert scorer.pid is not None


def test_an_evaluation_computing_past_its_limit_is_the_agents_a_waiting_one_the_environments() -> (
    None
):
    """A job that reads what the agent left and keeps the scoring process on the CPU past its
    limit (a pure-Python parser on a result inflated to gigabytes: found by ``--audit``'s
    ``result-bomb``, which made it unscored) is an EvaluatorTimedOut, an evaluator crash the
    harness scores 0; the same job waiting (on the desktop) past the limit is the
    environment's; a job that does not read the agent's state is the environment's too."""
    from computer_env.errors import EvaluatorTimedOut

    scorer = Scorer(timeout=2)
    try:
        # each stopped job stops its process: the next starts afresh, first (its imports
        # compute, and would count as the job's computing)
        _warm_up(scorer)
        with pytest.raises(EvaluatorTimedOut, match="computed for 2 s"):
            scorer.call(_job("spin"), "the evaluation", 30.0, reads_agent_state=True)
        _warm_up(scorer)
        with pytest.raises(ScorerFailed, match="did not finish within 2 s"):
            scorer.call(_job("wait"), "the evaluation", 30.0, reads_agent_state=True)
        _warm_up(scorer)
        with pytest.raises(ScorerFailed, match="did not finish within 2 s"):
            scorer.call(_job("spin"), "the setup", 30.0)
        assert scorer.call(_job("wait"), "after", 0.0, timeout=WARM_UP_S) is None  # a fresh one
    finally:
        scorer.close()


def _warm_up(scorer: Scorer) -> None:
    """Start the scoring process (imports done) outside the limit the test times."""
    scorer.call(_job("wait"), "warm-up", 0.0, timeout=WARM_UP_S)


def test_a_computation_starved_of_cpu_by_other_load_is_still_the_agents() -> None:
    """Load tolerance by design: the scoring process shares one CPU with two busy loops, so a
    computing job gets about a third of the CPU; it still wanted the CPU the whole time
    (:func:`~computer_env.osworld.scoring.process._faults.cpu_demand_seconds`: on it, or
    waiting for it), so it is the agent's EvaluatorTimedOut, never the environment's."""
    from computer_env.errors import EvaluatorTimedOut

    cpu = {min(os.sched_getaffinity(0))}
    scorer = Scorer(timeout=2)
    loops: list[subprocess.Popen[bytes]] = []
    try:
        _warm_up(scorer)
        pid = scorer.pid
        assert pid is not None
        os.sched_setaffinity(pid, cpu)
        for _ in range(2):
            loop = subprocess.Popen([sys.executable, "-c", "while True: pass"])
            loops.append(loop)
            os.sched_setaffinity(loop.pid, cpu)
        with pytest.raises(EvaluatorTimedOut, match="computed for 2 s"):
            scorer.call(_job("spin"), "the evaluation", 30.0, reads_agent_state=True)
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
        scorer.close()
