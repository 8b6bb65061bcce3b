"""Ownership of every process this project starts (desktop providers, the guest server, the
harness's vLLM servers).

What no library does is here: :func:`spawn` starts a child in its own session (so its whole
process group can be ended) with ``PR_SET_PDEATHSIG(SIGKILL)`` (it dies with this process), and
optionally in a network namespace, a private mount namespace and cgroups, as an unprivileged uid.
``PR_SET_PDEATHSIG`` fires when the *thread* that forked the child exits, not the process; a child
forked from a short-lived thread (a ``ThreadPoolExecutor`` worker, an HTTP request thread) would
die with that thread, so every fork happens on one long-lived daemon thread.
:func:`kill_group` ends a child's whole group; :class:`ChildProcesses` owns a set of children and
ends them all (and whatever they left behind) on ``close()``. Process walks (descendants,
parents, a uid's processes, memory, identity by start time) are psutil's.
"""

from computer_env.procs._children import ChildProcesses
from computer_env.procs._ops import (
    descendants,
    kill_group,
    kill_pids,
    kill_uid,
    parent_pid,
    pids_of_uid,
    pss_kib,
    running_since,
    signal_group,
)
from computer_env.procs._spawn import become_subreaper, set_pdeathsig, spawn

__all__ = [
    "ChildProcesses",
    "become_subreaper",
    "descendants",
    "kill_group",
    "kill_pids",
    "kill_uid",
    "parent_pid",
    "pids_of_uid",
    "pss_kib",
    "running_since",
    "set_pdeathsig",
    "signal_group",
    "spawn",
]
