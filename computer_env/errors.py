"""Errors that are the environment's fault, never the model's.

Everything derived from :class:`InfraError` is rerun by the harness and, if it persists,
reported as *unscored* with its ``category`` — never as a score of 0.
"""

from __future__ import annotations


class InfraError(Exception):
    """Root of all infrastructure failures (environment, network, endpoint)."""

    category: str = "infra"
    permanent: bool = False
    """True for a failure a rerun cannot mend (reported unscored at once, never rerun)."""

    def __init__(self, message: str, *, detail: str | None = None) -> None:
        super().__init__(message)
        self.detail = detail

    @property
    def reason(self) -> str:
        """One line for reports: the message without the traceback."""
        return str(self).splitlines()[0] if str(self) else type(self).__name__


class VMStartError(InfraError):
    """The desktop / VM could not be started or did not become ready in time."""

    category = "vm_start"


class VMUnreachable(InfraError):
    """The desktop / VM server stopped answering."""

    category = "vm_unreachable"


class DesktopNodeLost(VMUnreachable):
    """The desktop's host went away under it: its Ray actor or the actor's node died
    (``RayActorError``, node death). The environment's failure: the case is rerun on a fresh
    desktop (another node when that one is gone), then unscored, never a 0."""

    category = "desktop_node_lost"


class SetupError(InfraError):
    """A task's setup step failed (download, launch, open, command...)."""

    category = "setup"


class NetworkError(InfraError):
    """The outside network (through the proxy, if any) is down."""

    category = "network"


class EvaluatorInfraError(InfraError):
    """A getter could not fetch what it needed (connection refused, CDP down, download failed)."""

    category = "evaluator"


class EvaluatorCrash(EvaluatorInfraError):
    """A result getter or metric raised on the state the agent left (the desktop answered):
    once the agent has acted, the harness scores this 0 (``evaluator_crash``), never unscored:
    an agent must not dodge a failure by breaking what the evaluator reads."""


class EvaluatorOutOfMemory(EvaluatorCrash):
    """The evaluator ran past the scoring process's memory cap on the state the agent left (a
    result file that inflates beyond any task's need, e.g. a decompression bomb): like any
    :class:`EvaluatorCrash`, the agent's 0 once it acted, never unscored."""


class EvaluatorTimedOut(EvaluatorCrash):
    """The evaluator computed past its time limit on the state the agent left, busy on the CPU
    the whole time (not waiting for the desktop): e.g. a pure-Python parser walking a result
    file inflated to gigabytes. The agent's 0 once it acted, never unscored."""


class ModelEndpointError(InfraError):
    """The model endpoint is unreachable or keeps failing (5xx, 429, timeouts).

    Defined here, in the contract, so that the env side and the harness can catch it without
    importing ``holo_agent``; the agent raises it.
    """

    category = "model_endpoint"


class ResourceLimitError(InfraError):
    """The desktop hit one of its limits (memory, process count, /tmp size): what ran there
    was cut short by the sandbox, so the case is not scored."""

    category = "resource_limit"


class ConfigurationError(Exception):
    """A bad option, missing image or missing dependency: fails the run before any task.

    Deliberately *not* an :class:`InfraError`: it is never rerun and never unscored.
    """
