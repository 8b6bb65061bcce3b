"""A pytest plugin for fault-injection tests of the suite (loaded with
``-p tests.harness.helpers.chaos`` in a child run). It injects REAL faults into the real system:

- ``CHAOS_KILL_SERVER=agent``: on a case's first attempt, kill the desktop's guest server
  (SIGKILL, from the host, by its host pid: nothing inside the sandbox can reach it) as soon as
  the agent's first step is recorded (its action was applied), so the next observation or the
  evaluation finds no server;
- ``CHAOS_KILL_SERVER=evaluate``: on the first attempt, kill it right before evaluation, so a
  getter cannot reach the desktop;
- ``CHAOS_KILL_X=agent``: on a case's first attempt, kill the desktop's X server (SIGKILL, from
  the host) when the agent's first step is recorded: the guest server stays up, its
  screenshots fail with HTTP 500;
- ``CHAOS_STOP_X=agent``: on a case's first attempt, stop the desktop's X server (SIGSTOP, from
  the host) when the agent's first step is recorded: a hang from outside, the environment's
  (the guest server's grab watch must not call it a grab nor kill anything);
- ``CHAOS_WRONG=<task_id,...>``: the reference solution of these tasks is replaced by an
  immediate answer (a genuine scored failure);
- ``CHAOS_UNREACHABLE=<task_id,...>``: every attempt of these tasks finds the desktop killed;
- ``CHAOS_EVAL_UNSUPPORTED=<task_id,...>``: OSWorld's evaluator of these tasks raises
  ``EvaluatorUnsupported`` at evaluation time (a metric this environment lacks);
- ``CHAOS_EVAL_ABORT=<task_id,...>``: the first evaluation of these tasks after the agent
  kills the scoring process with SIGABRT (a reader's fault in C; the control evaluation on the
  initial state then runs cleanly); ``CHAOS_EVAL_ABORT_ALWAYS=<task_id,...>``: every
  evaluation of these tasks does, the control's too;
- ``CHAOS_HARNESS_BUG=<task_id,...>``: the evaluation of these tasks hits a harness bug, an
  ``AttributeError`` raised while handling a ``ConnectionRefusedError``;
- ``CHAOS_HOLD_AGENT=<task_id,...>``: the agent of these tasks, on its first attempt, waits
  (at most :data:`HOLD_S`) before its first turn: a case that plays until the test interrupts
  the run, so "an interrupt while the second case plays and the third is set up ahead"
  (``--setup-ahead``) comes at that moment however slow the host;
- ``CHAOS_AHEAD_SETUP_FAIL=<task_id,...>``: the setup steps of these tasks fail (a
  ``SetupError``) when they run ahead, on the spare desktop (``--setup-ahead``); at the case's
  own start they succeed.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from typing import Any

import psutil
import pytest

import fixtures.benchmarks.osworld as osworld_case
import fixtures.benchmarks.osworld_setup as osworld_setup
from computer_env.desktop.client import DesktopClient
from computer_env.errors import SetupError
from computer_env.osworld import EvaluatorUnsupported
from computer_env.osworld.scoring.process import scoring_process
from holo_agent.reference import solution_key
from tests.harness.helpers.polling import wait_for

HOLD_S = 600.0
"""the longest a held agent waits (the test interrupts the run long before)"""
_done: set[str] = set()
_pools: list[Any] = []  # the worker's desktop pool, seen when a case's agent starts


def _host_kill(
    ctx: Any, wanted: Callable[[list[str]], bool], what: str, sig: int = signal.SIGKILL
) -> None:
    """``sig`` (SIGKILL), from the host, to the processes of the desktop of ``ctx`` whose
    command line ``wanted`` accepts (an infrastructure failure: the host's doing, not the
    agent's)."""
    pool = _pools[-1]
    spare = getattr(pool, "_spare", None)
    providers = [
        p
        for p in (pool.provider, getattr(spare, "provider", None))
        if p is not None and p.handle is not None and p.handle.url == ctx.handle.url
    ]
    assert providers, f"no provider of the desktop at {ctx.handle.url}"
    killed = 0
    for pid in providers[0].pids():
        try:
            if wanted(psutil.Process(pid).cmdline()):
                os.kill(pid, sig)
                killed += 1
        except (psutil.Error, ProcessLookupError):
            continue
    assert killed, f"no {what} among the desktop's processes"


def _ids(name: str) -> set[str]:
    return {x for x in os.environ.get(name, "").split(",") if x}


def _kill_server(ctx: Any) -> None:
    """SIGKILL the guest server from the host and return once it no longer answers."""
    _host_kill(ctx, lambda argv: argv[1:3] == ["-m", "computer_env.desktop.server"], "guest server")
    with DesktopClient.from_handle(ctx.handle, retries=0, timeout=2.0) as probe:
        wait_for(lambda: not probe.ping(), "the guest server to stop answering", 30, interval=0.05)


def _draws(probe: DesktopClient) -> bool:
    try:
        probe.screenshot(fmt="jpeg", quality=20)
        return True
    except Exception:  # noqa: BLE001 - any failure to draw is what is awaited
        return False


def _kill_x(ctx: Any) -> None:
    """SIGKILL the X server from the host and return once screenshots fail."""
    _host_kill(ctx, lambda argv: bool(argv) and os.path.basename(argv[0]) == "Xvfb", "Xvfb")
    with DesktopClient.from_handle(ctx.handle, retries=0, timeout=5.0) as probe:
        wait_for(lambda: not _draws(probe), "the desktop to stop drawing", 30, interval=0.05)


def _stop_x(ctx: Any) -> None:
    """SIGSTOP the X server from the host (it stays stopped until the desktop is ended)."""
    _host_kill(
        ctx, lambda argv: bool(argv) and os.path.basename(argv[0]) == "Xvfb", "Xvfb", signal.SIGSTOP
    )


def _hold() -> None:
    """Wait, at most :data:`HOLD_S`; the run's interrupt (SIGINT: KeyboardInterrupt in this,
    the main thread) ends the wait. The next case's set-up ahead, started before this agent,
    goes on meanwhile."""
    threading.Event().wait(HOLD_S)


def pytest_configure(config: pytest.Config) -> None:
    mode = os.environ.get("CHAOS_KILL_SERVER")
    unreachable = _ids("CHAOS_UNREACHABLE")
    # the benchmark module's own names, replaced below (a fault-injection plugin patches them)
    real_run_agent: Callable[..., Any] = getattr(osworld_case, "run_agent")
    real_evaluate: Callable[..., Any] = getattr(osworld_case, "evaluate")

    def run_agent(
        task: Any,
        ctx: Any,
        ws: Any,
        case_dir: Any,
        attempt: Any,
        on_step: Callable[[Any], None] | None,
    ) -> Any:
        _pools[:] = [ws.worker.pool]
        first = task.id not in _done
        kill: Callable[[Any], None] | None = None
        if (mode == "agent" and first) or task.id in unreachable:
            kill = _kill_server
        elif os.environ.get("CHAOS_KILL_X") == "agent" and first:
            kill = _kill_x
        elif os.environ.get("CHAOS_STOP_X") == "agent" and first:
            kill = _stop_x
        if task.id in _ids("CHAOS_HOLD_AGENT") and first:
            _done.add(task.id)
            _hold()
        if kill is None:
            return real_run_agent(task, ctx, ws, case_dir, attempt, on_step)
        _done.add(task.id)

        def step_then_kill(record: Any) -> None:  # after the first recorded step, once
            nonlocal kill
            if on_step is not None:
                on_step(record)
            if kill is not None:
                fault, kill = kill, None
                fault(ctx)

        return real_run_agent(task, ctx, ws, case_dir, attempt, step_then_kill)

    def evaluate(task: Any, ctx: Any) -> Any:
        if task.id in _ids("CHAOS_EVAL_UNSUPPORTED"):
            raise EvaluatorUnsupported("metric 'chaos_metric'", "not in this environment")
        if task.id in _ids("CHAOS_EVAL_ABORT_ALWAYS") or (
            task.id in _ids("CHAOS_EVAL_ABORT") and f"abort:{task.id}" not in _done
        ):
            _done.add(f"abort:{task.id}")
            scoring_process().call(
                "tests.harness.helpers.scorer_fault_jobs:abort",
                f"the evaluation of {task.case_id}",
                reads_agent_state=True,
            )
        if task.id in _ids("CHAOS_HARNESS_BUG"):
            try:
                raise ConnectionRefusedError("the desktop refused")
            except ConnectionRefusedError:
                return None.score  # type: ignore[attr-defined]  # a bug while handling it
        if mode == "evaluate" and task.id not in _done:
            _done.add(task.id)
            _kill_server(ctx)
        return real_evaluate(task, ctx)

    setattr(osworld_case, "run_agent", run_agent)
    setattr(osworld_case, "evaluate", evaluate)
    _fail_setup_ahead(_ids("CHAOS_AHEAD_SETUP_FAIL"))


def _fail_setup_ahead(ids: set[str]) -> None:
    real_run_setup: Callable[..., Any] = getattr(osworld_setup, "run_setup")

    def run_setup(config: Any, ctx: Any, **kw: Any) -> Any:
        ahead = threading.current_thread().name == "setup-ahead"
        if ahead and str(ctx.task_id or "").split("/", 1)[0] in ids:
            raise SetupError("chaos: the set-up ahead failed")
        return real_run_setup(config, ctx, **kw)

    if ids:
        setattr(osworld_setup, "run_setup", run_setup)


@pytest.fixture(autouse=True)
def _wrong_solutions(request: pytest.FixtureRequest) -> None:
    wrong = _ids("CHAOS_WRONG")
    if not wrong or "osworld_task" not in request.fixturenames:
        return
    task, _ = request.getfixturevalue("osworld_task")
    if task.id in wrong:
        ws = request.getfixturevalue("worker_state")
        give_up = [
            {
                "note": None,
                "thought": "give up at once",
                "tool_call": {"tool_name": "answer", "content": "DONE"},
            }
        ]
        ws.reference.solutions[task.instruction] = give_up
        ws.reference.solutions[solution_key(task.case_id)] = give_up  # what it matches first
