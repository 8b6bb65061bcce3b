"""The worker's side of the boundary: :class:`ScoringProcess`, the client that starts the
scoring process, sends it jobs by name and reads how they ended, and the proxies a worker calls
(one process per worker process, started on first use)."""

from __future__ import annotations

import logging
import multiprocessing
import multiprocessing.connection
import os
import threading
import time
from collections.abc import Sequence
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from computer_env.errors import EvaluatorOutOfMemory, EvaluatorTimedOut
from computer_env.osworld.catalog.tasks import SetupStep, Task
from computer_env.osworld.context import TaskContext
from computer_env.osworld.prepare.setup import SetupReport
from computer_env.osworld.scoring.process._faults import ScorerFailed, cpu_demand_seconds, died
from computer_env.osworld.scoring.process._limits import memory_cap
from computer_env.osworld.scoring.process._wire import (
    ContextSpec,
    RemoteError,
    rebuild,
    replay_logs,
    run_named,
)
from computer_env.osworld.scoring.result import EvalResult

log = logging.getLogger(__name__)

_CHILD = "computer_env.osworld.scoring.process._child"
"""The child's side, named: imported in the scoring process only."""

TIMEOUT_S = 1200.0
"""The longest one evaluation may take (OSWorld's postconfig may sleep and download)."""
CPU_BOUND_SHARE = 0.5
"""An evaluation past its time limit that kept the scoring process on the CPU (or ready for it:
a loaded host gives it less CPU, not less demand) this share of the time computed on what the
agent left (:class:`EvaluatorTimedOut`, its 0); one that
mostly waited (on the desktop, the network) is the environment's (:class:`ScorerFailed`)."""
SETUP_TIMEOUT_S = 4000.0
"""The longest one setup may take (its steps have deadlines of their own; OSWorld's
``open_file`` may wait 1800 s)."""
TASKS_PER_PROCESS = 40
"""Jobs before the scoring process is replaced (what a metric leaves behind goes with it)."""
RSS_LIMIT_MIB = 1500.0
"""A scoring process this large after a job is replaced."""


class ScoringProcess:
    """One worker's scoring process (started on first use)."""

    def __init__(
        self,
        *,
        timeout: float = TIMEOUT_S,
        tasks_per_process: int = TASKS_PER_PROCESS,
        rss_limit_mib: float = RSS_LIMIT_MIB,
        memory_cap_mib: int | None = None,
    ) -> None:
        self.timeout = timeout
        self.memory_cap_mib = memory_cap(memory_cap_mib)
        """The scoring process's memory cap in MiB (0: none; see :func:`memory_cap`)."""
        self.tasks_per_process = tasks_per_process
        self.rss_limit_mib = rss_limit_mib
        self.rss_mib = 0.0
        """The scoring process's resident memory after its last job."""
        self._process: BaseProcess | None = None
        self._conn: multiprocessing.connection.Connection | None = None
        self._jobs = 0
        self._lock = threading.RLock()  # a warm-up holds it across its own call()
        self._generation = 0  # close() makes a warm-up still waiting for the lock moot

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def _start(self) -> tuple[BaseProcess, multiprocessing.connection.Connection]:
        mp = multiprocessing.get_context("spawn")
        mine, theirs = mp.Pipe()
        process = mp.Process(
            target=run_named,
            args=(f"{_CHILD}:serve", theirs, os.getpid(), self.memory_cap_mib),
            daemon=True,
            name="osworld-scorer",
        )
        process.start()
        theirs.close()
        self._process, self._conn, self._jobs = process, mine, 0
        log.debug("scoring process %s started", process.pid)
        return process, mine

    def _stop(self, *, kill: bool = False) -> None:
        process, conn, self._process, self._conn = self._process, self._conn, None, None
        if process is None or conn is None:
            return
        if not kill and process.is_alive():
            try:
                conn.send(None)
            except OSError:
                pass
            process.join(5.0)
        if process.is_alive():
            process.kill()
            process.join(5.0)
        conn.close()

    def close(self) -> None:
        """Stop the scoring process (a later job starts another)."""
        with self._lock:
            self._generation += 1
            self._stop()

    def call(
        self,
        target: str,
        what: str,
        *args: Any,
        timeout: float | None = None,
        reads_agent_state: bool = False,
        warm_up: bool = False,
        **kwargs: Any,
    ) -> Any:
        """``target(*args, **kwargs)`` (``"module:function"``; arguments and value plain data or
        the project's own types) in the scoring process, for ``what`` (named in errors), within
        ``timeout`` seconds (default: the client's): its value, or its exception raised here.
        ``warm_up``: a job that does not count toward :attr:`tasks_per_process`."""
        timeout = self.timeout if timeout is None else timeout
        with self._lock:
            process, conn = (
                (self._process, self._conn)
                if self._process is not None and self._conn is not None and self._process.is_alive()
                else self._start()
            )
            try:
                cpu0, t0 = cpu_demand_seconds(process.pid or 0), time.monotonic()
                conn.send((target, logging.getLogger().getEffectiveLevel(), args, kwargs))
                if not multiprocessing.connection.wait([conn, process.sentinel], timeout):
                    busy = cpu_demand_seconds(process.pid or 0) - cpu0
                    if reads_agent_state and busy >= CPU_BOUND_SHARE * (time.monotonic() - t0):
                        raise EvaluatorTimedOut(
                            f"{what} computed for {timeout:g} s on the state the agent left "
                            f"(on or waiting for the CPU {busy:.0f} s: not waiting for the "
                            "desktop) and was stopped"
                        )
                    raise ScorerFailed(
                        f"{what} did not finish within {timeout:g} s (the "
                        f"scoring process, pid {process.pid}, was stopped)"
                    )
                try:
                    kind, value, records, self.rss_mib, overrun = conn.recv()
                except (EOFError, OSError) as exc:
                    process.join(5.0)
                    raise died(process, what, reads_agent_state) from exc
            except BaseException:
                self._stop(kill=True)
                raise
            self._jobs += 0 if warm_up else 1  # a warm-up leaves nothing behind
            if overrun or self._jobs >= self.tasks_per_process or self.rss_mib > self.rss_limit_mib:
                self._stop()  # past its cap its heap is spent: the next job gets another one
                self.warm()  # ... started and importing OSWorld's code from now on
        replay_logs(records)
        error: BaseException | None = None
        if kind == "raise":
            assert isinstance(value, RemoteError)
            error = rebuild(value)
        if overrun and not isinstance(error, EvaluatorOutOfMemory):
            raise ScorerFailed(
                f"the scoring process (pid {process.pid}) {overrun} during {what} (it was replaced)"
            ) from error
        if error is not None:
            raise error
        return value

    def warm(self) -> None:
        """Start the scoring process and import OSWorld's code there in the background (~1.5 s
        a job would wait for otherwise); the next job waits for that to end."""
        threading.Thread(
            target=self._warm, args=(self._generation,), daemon=True, name="scorer-warm"
        ).start()

    def _warm(self, generation: int) -> None:
        with self._lock:
            if generation != self._generation:
                return  # closed meanwhile: no process to leave behind
            try:
                self.call(f"{_CHILD}:warm_job", "warming up", warm_up=True)
            except Exception as exc:  # noqa: BLE001 - the next job meets the same failure
                log.debug("warming the scoring process up failed: %s", exc)

    def evaluate(self, task: Task, ctx: TaskContext) -> EvalResult:
        """:func:`~computer_env.osworld.scoring.in_process.evaluate_in_process` in the scoring
        process."""
        if ctx.task_id is None:
            ctx.task_id = task.id
        data = self.call(
            f"{_CHILD}:evaluate_job",
            f"the evaluation of {task.case_id}",
            task,
            ContextSpec.of(ctx),
            reads_agent_state=True,
        )
        return EvalResult.model_validate(data)

    def ensure_supported(self, task: Task, ctx: TaskContext | None = None) -> None:
        """:func:`~computer_env.osworld.scoring.in_process.ensure_supported_in_process` in the
        scoring process (without ``ctx``: what needs no desktop, which imports the task's
        getters and metrics there; a caller may run it while the desktop is being reset)."""
        self.call(
            f"{_CHILD}:supported_job",
            f"the support check of {task.case_id}",
            task,
            ContextSpec.of(ctx) if ctx is not None else None,
        )

    def run_setup(
        self,
        steps: Sequence[SetupStep | dict[str, Any]],
        ctx: TaskContext,
        *,
        phase: str = "config",
        strict: bool | None = None,
    ) -> SetupReport:
        """:func:`~computer_env.osworld.prepare.setup.run_setup_in_process` in the scoring
        process."""
        data = self.call(
            f"{_CHILD}:setup_job",
            f"the {phase} setup of {ctx.task_id}",
            list(steps),
            ContextSpec.of(ctx),
            phase,
            strict,
            timeout=SETUP_TIMEOUT_S,
        )
        return SetupReport.model_validate(data)

    def explain_files(
        self,
        result: Path | str,
        expected: Path | str,
        *,
        func: str = "",
        options: dict[str, Any] | None = None,
    ) -> list[str]:
        """:func:`computer_env.osworld.scoring.explain.explain_files` in the scoring process (its
        readers of spreadsheets and documents stay out of the worker); never raises."""
        try:
            lines = self.call(
                "computer_env.osworld.scoring.explain:explain_files",
                f"explaining {Path(result).name}",
                Path(result),
                Path(expected),
                func=func,
                options=options,
            )
        except Exception as exc:  # noqa: BLE001 - an explanation must never break scoring
            return [
                f"could not compare {Path(result).name} with {Path(expected).name}: "
                f"{type(exc).__name__}: {exc}"
            ]
        return list(lines)


_process: ScoringProcess | None = None
_process_lock = threading.Lock()


def scoring_process() -> ScoringProcess:
    """This process's scoring process (its client made on first use)."""
    global _process
    with _process_lock:
        if _process is None:
            _process = ScoringProcess()
        return _process


def close_scoring_process() -> None:
    """Stop this process's scoring process, if any."""
    with _process_lock:
        if _process is not None:
            _process.close()


def evaluate(task: Task, ctx: TaskContext) -> EvalResult:
    """Score ``task`` on ``ctx``'s desktop with OSWorld's evaluator, in the scoring process."""
    return scoring_process().evaluate(task, ctx)


def ensure_supported(task: Task, ctx: TaskContext | None = None) -> None:
    """Raise ``Unsupported`` now if the task cannot be set up or scored here (checked in the
    scoring process, which imports the task's getters and metrics; without ``ctx``, only what
    needs no desktop)."""
    scoring_process().ensure_supported(task, ctx)


def run_setup(
    steps: Sequence[SetupStep | dict[str, Any]],
    ctx: TaskContext,
    *,
    phase: str = "config",
    strict: bool | None = None,
) -> SetupReport:
    """Run a task's setup steps with OSWorld's ``SetupController``, in the scoring process."""
    return scoring_process().run_setup(steps, ctx, phase=phase, strict=strict)


def explain_files(
    result: Path | str,
    expected: Path | str,
    *,
    func: str = "",
    options: dict[str, Any] | None = None,
) -> list[str]:
    """Where ``result`` differs from ``expected``, worked out in the scoring process."""
    return scoring_process().explain_files(result, expected, func=func, options=options)


__all__ = [
    "CPU_BOUND_SHARE",
    "RSS_LIMIT_MIB",
    "SETUP_TIMEOUT_S",
    "ScoringProcess",
    "TASKS_PER_PROCESS",
    "TIMEOUT_S",
    "close_scoring_process",
    "ensure_supported",
    "evaluate",
    "explain_files",
    "run_setup",
    "scoring_process",
]
