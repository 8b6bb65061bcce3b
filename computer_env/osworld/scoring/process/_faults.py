"""How a scoring process's job that did not answer is read: whose fault it is.

:class:`ScorerFailed` is the environment's (rerun, then unscored); an evaluation that outran its
time wanting the CPU (:func:`cpu_demand_seconds`) or a metric past its CPU budget (SIGXCPU,
:func:`~._limits.cpu_budget`) is :class:`~computer_env.errors.EvaluatorTimedOut`, the agent's 0;
a fault in C while reading the agent's state is :class:`EvaluatorAborted` (see there).
"""

from __future__ import annotations

import os
import signal
from multiprocessing.process import BaseProcess

from computer_env.errors import EvaluatorInfraError, EvaluatorTimedOut


class ScorerFailed(EvaluatorInfraError):
    """The scoring process died or outran its time during a job (the environment's failure:
    rerun, then unscored)."""

    category = "scorer"


class EvaluatorAborted(ScorerFailed):
    """The scoring process died of a fault in C (SIGABRT, SIGSEGV, SIGBUS, SIGILL, SIGFPE) while
    an evaluation read what the agent left. Unscored by itself (a reader may be broken on any
    input); the harness makes it the agent's 0 (``evaluator_crash``) once the same evaluation
    ran cleanly on the task's initial state (``fixtures.cases.integrity.integrity``)."""

    def __init__(self, message: str, *, signal_name: str = "") -> None:
        super().__init__(message)
        self.signal_name = signal_name


C_FAULTS = frozenset({signal.SIGABRT, signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE})
"""Deaths of the scoring process that are a reader's fault in C."""


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) process ``pid`` has used so far; 0 where it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def cpu_demand_seconds(pid: int) -> float:
    """The time process ``pid``'s threads have spent on the CPU or ready for it, waiting in the
    run queue (``/proc/<pid>/task/*/schedstat``), so far: a computation's demand whatever else
    the host runs (on a loaded host it gets less CPU, never less demand), none for a process
    that sleeps on a socket or a pipe. Its CPU time (:func:`cpu_seconds`) where the kernel
    keeps no such record."""
    total, found = 0, False
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        tasks = []
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat", encoding="ascii") as f:
                on_cpu, waiting, _slices = f.read().split()
            total += int(on_cpu) + int(waiting)
            found = True
        except (OSError, ValueError):
            continue
    return total / 1e9 if found else cpu_seconds(pid)


def death(process: BaseProcess) -> str:
    """How ``process`` ended, in words: killed by which signal, or its exit status."""
    code = process.exitcode
    if code is not None and code < 0:
        name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
        hint = " (out of memory, or killed by hand)" if -code == signal.SIGKILL else ""
        return f"was killed by {name}{hint}"
    return f"exited with status {code}"


def died(process: BaseProcess, what: str, reads_agent_state: bool) -> Exception:
    """The error for a scoring process that died during ``what``: a metric past its CPU
    budget (SIGXCPU) is the agent's 0; a fault in C while reading the agent's state is
    :class:`EvaluatorAborted`; anything else the environment's."""
    how = f"the scoring process (pid {process.pid}) {death(process)} during {what}"
    code = -(process.exitcode or 0)
    if reads_agent_state and code == signal.SIGXCPU:
        return EvaluatorTimedOut(
            f"{how}: a metric ran past its CPU budget on a result far "
            "larger than the task's expected file (it was stopped)"
        )
    if reads_agent_state and code in C_FAULTS:
        return EvaluatorAborted(how, signal_name=signal.Signals(code).name)
    return ScorerFailed(how)


__all__ = [
    "C_FAULTS",
    "EvaluatorAborted",
    "ScorerFailed",
    "cpu_demand_seconds",
    "cpu_seconds",
    "death",
    "died",
]
