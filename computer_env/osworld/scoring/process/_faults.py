"""How a scoring process's end is read: whose fault a job that did not answer is.

:class:`ScorerFailed` is the environment's (rerun, then unscored); a metric past its CPU budget
(SIGXCPU, :mod:`.scorer_budget`) is :class:`~computer_env.errors.EvaluatorTimedOut`, the agent's
0; a fault in C while reading the agent's state is :class:`EvaluatorAborted` (see there).
"""

from __future__ import annotations

import signal
from multiprocessing.process import BaseProcess

from computer_env.errors import EvaluatorInfraError, EvaluatorTimedOut
from computer_env.osworld.scoring.scorer_wire import death


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


C_FAULTS = frozenset({signal.SIGABRT, signal.SIGSEGV, signal.SIGBUS, signal.SIGILL,
                      signal.SIGFPE})
"""Deaths of the scoring process that are a reader's fault in C."""


def died(process: BaseProcess, what: str, reads_agent_state: bool) -> Exception:
    """The error for a scoring process that died during ``what``: a metric past its CPU
    budget (SIGXCPU, :mod:`.scorer_budget`) is the agent's 0; a fault in C while reading the
    agent's state is :class:`EvaluatorAborted`; anything else the environment's."""
    how = f"the scoring process (pid {process.pid}) {death(process)} during {what}"
    code = -(process.exitcode or 0)
    if reads_agent_state and code == signal.SIGXCPU:
        return EvaluatorTimedOut(f"{how}: a metric ran past its CPU budget on a result far "
                                 "larger than the task's expected file (it was stopped)")
    if reads_agent_state and code in C_FAULTS:
        return EvaluatorAborted(how, signal_name=signal.Signals(code).name)
    return ScorerFailed(how)


__all__ = ["C_FAULTS", "EvaluatorAborted", "ScorerFailed", "died"]
