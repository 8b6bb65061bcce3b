"""OSWorld's code in a scoring process of its own, so that a worker never imports OSWorld's
metrics, getters and setup controller (pandas, openpyxl, borb, playwright, Google's clients...:
about 200 MiB in every worker).

The two sides of the boundary are named apart: the worker holds a :class:`ScoringProcess` (the
client, ``_client``) and calls :func:`evaluate`, :func:`ensure_supported`, :func:`run_setup`
and :func:`explain_files`; the child (``_child``, never imported by the worker) runs
:func:`~computer_env.osworld.scoring.in_process.evaluate_in_process`,
:func:`~computer_env.osworld.scoring.in_process.ensure_supported_in_process` and
:func:`~computer_env.osworld.prepare.setup.run_setup_in_process`, whose signatures, results and
exceptions the proxies keep, on a :class:`TaskContext` rebuilt from what the worker's holds
(``_wire``: the context without its client, exceptions with their type, message, attributes and
chain, log records, which are logged again in the worker). OSWorld's code reaches the desktop
through a gateway of the scoring process's own, closed after each job.

The process is started on first use ('spawn': nothing of the worker is inherited; a script
scoring this way needs the ``if __name__ == "__main__":`` guard) and replaced after
:data:`TASKS_PER_PROCESS` jobs or past :data:`RSS_LIMIT_MIB`, the new one started at once and
importing OSWorld's code in the background (:meth:`ScoringProcess.warm`). If it dies (a crash,
the OOM killer, by hand) or a job outruns ``timeout``, the job raises :class:`ScorerFailed`, an
environment failure (rerun, then unscored), and the next job gets a fresh process; but an
evaluation that outran it busy on the CPU raises :class:`~computer_env.errors.EvaluatorTimedOut`
(the agent's 0); how a job that did not answer ended is read in ``_faults``.

Memory cap and CPU budget (``_limits``): the process caps its own private writable memory
(``RLIMIT_DATA``) at :attr:`ScoringProcess.memory_cap_mib`, :func:`memory_cap`:
:data:`MEMORY_CAP_MIB`, at most :data:`HOST_SHARE` of the host's memory (at least
:data:`MIN_CAP_MIB`); ``$HOLO_SCORER_MEMORY_MIB`` (MiB; 0: no cap) or the constructor's
``memory_cap_mib`` override it. Measured on the built-in tasks and OSWorld's real offline ones,
the process peaks at 330 MiB resident (``VmHWM``), 430 MiB ``VmData``, 1.3 GiB ``VmPeak``. A
job that overruns the cap is answered, then the process is replaced (its heap is spent): an
*evaluation* raises :class:`~computer_env.errors.EvaluatorOutOfMemory` (the result the agent
left is a bomb: scored 0 once it acted); any other job (setup, support check) raises
:class:`ScorerFailed` (the environment's, unscored). A metric on a result far larger than the
task's expected file runs under a CPU budget; past it (SIGXCPU) the evaluation is the agent's 0,
and a fault in C while reading the agent's state is :class:`EvaluatorAborted`.
"""

from computer_env.osworld.scoring.process._client import (
    RSS_LIMIT_MIB,
    SETUP_TIMEOUT_S,
    TASKS_PER_PROCESS,
    TIMEOUT_S,
    ScoringProcess,
    close_scoring_process,
    ensure_supported,
    evaluate,
    explain_files,
    run_setup,
    scoring_process,
)
from computer_env.osworld.scoring.process._faults import EvaluatorAborted, ScorerFailed
from computer_env.osworld.scoring.process._limits import (
    HOST_SHARE,
    MEMORY_CAP_ENV,
    MEMORY_CAP_MIB,
    MIN_CAP_MIB,
    memory_cap,
)

__all__ = [
    "EvaluatorAborted",
    "HOST_SHARE",
    "MEMORY_CAP_ENV",
    "MEMORY_CAP_MIB",
    "MIN_CAP_MIB",
    "RSS_LIMIT_MIB",
    "SETUP_TIMEOUT_S",
    "ScorerFailed",
    "ScoringProcess",
    "TASKS_PER_PROCESS",
    "TIMEOUT_S",
    "close_scoring_process",
    "ensure_supported",
    "evaluate",
    "explain_files",
    "memory_cap",
    "run_setup",
    "scoring_process",
]
