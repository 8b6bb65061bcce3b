"""computer_env.procs on real processes, and the retry policy of the env's HTTP-ish calls."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import psutil
import pytest

from computer_env.procs import (
    ChildProcesses,
    descendants,
    kill_group,
    parent_pid,
    running_since,
    spawn,
)
from computer_env.retry import RetryPolicy
from tests.harness.helpers.polling import wait_for


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_spawned_child_has_its_own_group_and_dies_with_its_parent() -> None:
    """A spawned process leads its own group; its own spawned child is SIGKILLed when it dies
    (PR_SET_PDEATHSIG)."""
    code = (
        "import time; from computer_env.procs import spawn; "
        "print(spawn(['sleep', '600']).pid, flush=True); time.sleep(600)"
    )
    parent = spawn([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert os.getpgid(parent.pid) == parent.pid and os.getpgid(child) == child
        assert parent_pid(child) == parent.pid and descendants(parent.pid) == [child]
    finally:
        kill_group(parent)
    wait_for(lambda: not _alive(child), "the orphaned child to die with its parent", 10)


def test_a_child_spawned_from_a_short_lived_thread_outlives_that_thread() -> None:
    """PR_SET_PDEATHSIG fires when the forking *thread* ends: every fork happens on the module's
    long-lived thread, so a child started from a thread that has ended lives on."""
    started: list[subprocess.Popen[bytes]] = []
    thread = threading.Thread(target=lambda: started.append(spawn(["sleep", "600"])))
    thread.start()
    thread.join(timeout=10)
    tid = thread.native_id
    wait_for(lambda: not os.path.exists(f"/proc/self/task/{tid}"), "the thread to exit", 10)
    (child,) = started
    try:
        assert child.poll() is None and _alive(child.pid)
    finally:
        kill_group(child)


def test_kill_group_ends_what_outlives_the_leader() -> None:
    leader = spawn(["sh", "-c", "sleep 600 & echo $!"], stdout=subprocess.PIPE, text=True)
    assert leader.stdout is not None
    straggler = int(leader.stdout.readline())
    leader.wait(timeout=10)
    assert _alive(straggler)
    kill_group(leader)
    wait_for(lambda: not _alive(straggler), "the leader's group to be killed", 10)


def test_running_since_tells_a_reused_pid_apart() -> None:
    started = psutil.Process().create_time()
    assert running_since(os.getpid()) and running_since(os.getpid(), started)
    assert not running_since(os.getpid(), started - 60)  # "this pid" from before we started
    gone = spawn(["true"])
    gone.wait(timeout=10)
    assert not running_since(gone.pid) and parent_pid(gone.pid) is None


def test_child_processes_close_ends_owned_and_refuses_more(tmp_path: object) -> None:
    procs = ChildProcesses()
    proc = procs.popen(["sleep", "600"])
    assert procs.run(["sh", "-c", "echo hi"]).stdout == "hi\n"
    with pytest.raises(subprocess.TimeoutExpired):
        procs.run(["sleep", "600"], timeout=0.2)
    procs.close()
    assert proc.poll() is not None
    with pytest.raises(RuntimeError, match="closed"):
        procs.popen(["true"])


def test_retry_policy_delays_cap_and_call() -> None:
    assert list(RetryPolicy(attempts=4, backoff=0.5).delays()) == [0.5, 1.0, 2.0]
    assert list(RetryPolicy(attempts=5, backoff=2.0, cap=5.0).delays()) == [2.0, 4.0, 5.0, 5.0]
    assert list(RetryPolicy(attempts=1).delays()) == []
    slept: list[float] = []
    calls: list[int] = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionError("down")
        return "ok"

    policy = RetryPolicy(attempts=3, backoff=0.1)
    assert policy.call(flaky, retry_on=(ConnectionError,), sleep=slept.append) == "ok"
    assert slept == [0.1, 0.2]
    calls.clear()
    with pytest.raises(ConnectionError):  # attempts spent: the last error goes up
        RetryPolicy(attempts=2, backoff=0.1).call(
            flaky, retry_on=(ConnectionError,), sleep=slept.append
        )
    assert len(calls) == 2

    def bug() -> None:
        calls.append(1)
        raise KeyError("not retried")

    calls.clear()
    with pytest.raises(KeyError):
        policy.call(bug, retry_on=(ConnectionError,), sleep=slept.append)
    assert len(calls) == 1
