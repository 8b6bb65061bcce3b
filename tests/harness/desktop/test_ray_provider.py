"""``--provider ray`` on a real two-node Ray cluster on this host (:mod:`raycluster`): the
built-in smoke suite runs with ``-n 2``, each desktop a Ray actor running a real local sandboxed
desktop on its node; a node whose raylet is killed during a case costs a rerun (or an unscored
case), never a 0; too few ``desktop`` resources stop the run before any task; nothing of the run
is left on either node (processes, actors, network namespaces, cgroups)."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import psutil
import pytest

from computer_env.desktop.providers.local import netns
from computer_env.desktop.providers.local.cgroups import session_cgroups
from computer_env.desktop.providers.ray.door import NodeDoor
from tests.harness.helpers.localdesk import own_run
from tests.harness.helpers.polling import wait_for
from tests.harness.helpers.raycluster import NODE_IP, TwoNodeCluster, one_cluster_at_a_time
from tests.harness.helpers.suite import ROOT, SuiteRun, kill_group, run_suite, start_suite

try:
    import ray  # noqa: F401

    HAVE_RAY = True
except ImportError:
    HAVE_RAY = False
ON_RAY = (
    pytest.mark.desktop,
    pytest.mark.skipif(not HAVE_RAY, reason="ray is not installed (pip install -e .[ray])"),
    pytest.mark.skipif(os.geteuid() != 0, reason="local desktops need root"),
)
F = TypeVar("F", bound=Callable[..., None])


def on_ray(test: F) -> F:
    """A test on the real Ray cluster with real local desktops (skipped without either)."""
    for mark in ON_RAY:
        test = mark(test)
    return test


DESKTOP_PROCS = re.compile(
    r"bwrap|Xvfb|openbox|computer_env\.desktop|DesktopActor|mousepad|"
    r"soffice|chromium|xterm"
)
APP_NAMES = re.compile(r"^(mousepad|soffice\.bin|chromium|chrome|xterm)$")
"""a task's app (by process name: a sandbox's command line names Chromium's folder too)"""


@pytest.fixture
def cluster() -> Iterator[TwoNodeCluster]:
    """A fresh two-node cluster; one at a time on this host (two clusters and two suites at
    once would double the load of a 2-core host, whichever xdist worker runs them)."""
    with one_cluster_at_a_time():
        c = TwoNodeCluster(desktops=2).start()
        try:
            yield c
        finally:
            c.close()


def ray_args(c: TwoNodeCluster, *more: str) -> list[str]:
    return ["-m", "smoke", "--provider", "ray", "--ray-address", c.address, *more]


def desktop_processes(c: TwoNodeCluster) -> list[str]:
    """Desktop processes (the actors, their sandboxes, apps) still alive under either node."""
    out = []
    for proc in c.descendants():
        try:
            cmd = " ".join(proc.cmdline())[:160]
        except psutil.Error:
            continue
        if DESKTOP_PROCS.search(cmd):
            out.append(f"{proc.pid}: {cmd}")
    return out


def leftovers(c: TwoNodeCluster, run: str) -> list[str]:
    """What ``run`` left: its named actors, desktop processes under either node, network
    namespaces and session cgroups owned by any Ray worker either node ran."""
    workers = c.worker_pids()
    assert workers, "no Ray worker logs found: the leftover check would check nothing"
    return (
        [f"actor {a}" for a in c.named_actors() if f"-{run}-" in a]
        + desktop_processes(c)
        + [f"netns of {p}" for p in netns.owner_pids() if p in workers]
        + [f"cgroup {d}" for p in workers for d in session_cgroups(p)]
    )


def assert_nothing_left(c: TwoNodeCluster, run: str, timeout: float = 30) -> None:
    """Nothing of ``run`` is left (at once after a clean end; a killed actor's process may take
    a moment to go)."""
    try:
        wait_for(
            lambda: not leftovers(c, run), f"nothing of run {run} to be left", timeout, interval=1.0
        )
    except AssertionError:
        raise AssertionError(f"left behind: {leftovers(c, run)}") from None


def app_running(node: psutil.Process) -> bool:
    """A task's app runs on a desktop of the node whose raylet is ``node``."""
    for child in node.children(recursive=True):
        try:
            if APP_NAMES.match(child.name()):
                return True
        except psutil.Error:
            continue
    return False


def no_zero(results: dict[str, dict[str, Any]]) -> None:
    for case, r in results.items():
        assert r["outcome"] in ("passed", "unscored"), (case, r["outcome"], r.get("message"))


def test_embedded_default_never_imports_ray() -> None:
    """The plugin, the settings and the local provider load without Ray (its import is the ray
    provider's alone)."""
    code = (
        "import sys, fixtures.run.plugin, fixtures.cases.worker\n"
        "from computer_env.desktop.providers.registry import provider_class\n"
        "provider_class('local')\n"
        "print(sorted(m for m in sys.modules if m == 'ray' or m.startswith('ray.')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]", out.stdout


def test_node_door_lets_in_only_its_worker() -> None:
    """The door forwards bytes for its worker's address and closes on anyone else."""
    with socket.socket() as target:
        target.bind(("127.0.0.1", 0))
        target.listen()
        door = NodeDoor("127.0.0.1", "127.0.0.1", {"server": target.getsockname()})
        other = NodeDoor("127.0.0.1", "203.0.113.9", {"server": target.getsockname()})
        try:
            with socket.create_connection(("127.0.0.1", door.ports["server"]), timeout=5) as c:
                c.sendall(b"ping")
                conn, _ = target.accept()
                with conn:
                    assert conn.recv(4) == b"ping"
            with socket.create_connection(("127.0.0.1", other.ports["server"]), timeout=5) as c:
                c.settimeout(5)
                assert c.recv(1) == b""  # refused: closed without a byte
        finally:
            door.close()
            other.close()


@on_ray
def test_smoke_suite_on_two_nodes_then_too_few_resources_then_sigterm(
    tmp_path: Path, cluster: TwoNodeCluster
) -> None:
    """Each worker with a spare desktop (a second actor): 4 desktops on the cluster's 4."""
    run = run_suite(
        tmp_path, "rayrun", *ray_args(cluster, "-n", "2", "--spare-desktop", "on"), timeout=600
    )
    assert run.rc == 0, run.output[-4000:]
    results = run.results()
    assert len(results) == 5, sorted(results)
    assert all(r["outcome"] == "passed" for r in results.values()), results
    assert {r["versions"]["provider"] for r in results.values()} == {"ray:local"}
    nodes = {r["versions"]["node"].split()[0] for r in results.values()}
    assert len(nodes) == 2 and NODE_IP in nodes, nodes  # spread over both nodes
    assert run.summary["scored"] == 5 and run.summary["unscored"] == 0
    assert_nothing_left(cluster, "rayrun")

    # 2 workers x 3 'desktop' each = 6 > the cluster's 4: one line, before any task
    short = run_suite(
        tmp_path,
        "rayshort",
        *ray_args(cluster, "-n", "2", "--ray-resource-amount", "3"),
        timeout=300,
    )
    assert short.rc != 0
    line = next(ln for ln in short.output.splitlines() if "--provider ray:" in ln)
    assert "needs 6 of Ray resource 'desktop'" in line and "has 4" in line, line
    assert not list((tmp_path / "rayshort").rglob("result.json"))

    # SIGTERM to the whole run during a case: every actor is stopped and killed
    log = tmp_path / "term.log"
    proc = start_suite(tmp_path, "rayterm", *ray_args(cluster, "-n", "2"), log=log)
    try:
        raylets = [cluster.raylet("head"), cluster.raylet("node")]
        wait_for(
            lambda: any(app_running(r) for r in raylets),
            "a case's app on a desktop",
            timeout=240,
            interval=0.2,
        )
        kill_group(proc, signal.SIGTERM)
        proc.wait(timeout=120)
    finally:
        kill_group(proc)
    assert_nothing_left(cluster, "rayterm")


@on_ray
def test_node_killed_during_a_case_is_rerun_never_zero(
    tmp_path: Path, cluster: TwoNodeCluster
) -> None:
    """Each model turn takes 3 s (the reference endpoint's delay fault), so a case plays for
    several seconds on its desktop: the kill lands while a case holds the node's desktop (set-up
    or play), not after a quick case already wrote its score (where no case could see it)."""
    log = tmp_path / "suite.log"
    proc = start_suite(
        tmp_path, "raykill", *ray_args(cluster, "-n", "2", "--reference-faults", "delay=3"), log=log
    )
    try:
        node_raylet = cluster.raylet("node")

        def app_on_node() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"the suite ended first: {log.read_text()[-3000:]}")
            return app_running(node_raylet)

        wait_for(
            app_on_node, "a case's app on the second node's desktop", timeout=240, interval=0.2
        )
        node_raylet.send_signal(signal.SIGKILL)
        rc = proc.wait(timeout=600)
    except BaseException:
        kill_group(proc)
        raise
    output = log.read_text()
    assert rc == 0, output[-4000:]
    found = SuiteRun(rc, output, tmp_path / "raykill").results()
    assert len(found) == 5, sorted(found)
    no_zero(found)
    hit = [r for r in found.values() if r["earlier_attempts"] or r["outcome"] == "unscored"]
    assert hit, "no case saw the node die"
    # the case the kill hit was rerun on the node that is left (or is unscored); an earlier
    # attempt is always the environment's (a loaded host may rerun another case too)
    assert any(r["outcome"] == "unscored" or NODE_IP not in r["versions"]["node"] for r in hit), [
        (r["case_id"], r["versions"]) for r in hit
    ]
    assert all(e["infra_category"] for r in hit for e in r["earlier_attempts"]), hit
    wait_for(
        lambda: len(cluster.alive_nodes()) == 1,
        "the killed node to be marked dead",
        timeout=60,
        interval=1.0,
    )
    assert_nothing_left(cluster, "raykill")

    # a provider tells a lost actor (never the agent's doing) from a live one
    lost = subprocess.run(
        cluster.driver("host-lost"),
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
    )
    assert lost.returncode == 0 and "LOST-OK" in lost.stdout, lost.stderr[-2000:]

    # a worker that dies (no teardown at all): Ray ends its actor with it, and the run's end
    # sweep removes the network namespace and cgroup the SIGKILLed actor could not (the driver
    # is a run of the test's own: no other run's sweep removes them first)
    run, run_env = own_run()
    dying = subprocess.run(
        cluster.driver("dying", "dying"),
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
        env={**os.environ, **run_env},
    )
    assert dying.returncode == 0 and "OUT" in dying.stdout, dying.stderr[-2000:]
    actor_pid = int(dying.stdout.split("OUT")[1].split()[0])
    wait_for(
        lambda: not psutil.pid_exists(actor_pid), "the dead driver's actor to end", 60, interval=0.5
    )
    assert [a for a in cluster.named_actors() if "-dying-" in a] == []
    assert actor_pid in netns.owner_pids(), "the SIGKILLed actor's namespace is left"
    swept = cluster.query("sweep", run.encode(), once=True)
    assert any(v["slots"] for v in swept.values()), swept  # the run's end sweep removed it
    assert actor_pid not in netns.owner_pids()
    assert session_cgroups(actor_pid) == []


@pytest.mark.skipif(not HAVE_RAY, reason="ray is not installed")
def test_ray_failures_are_the_environments() -> None:
    """A dead actor or node is ``DesktopNodeLost`` (an ``InfraError``: rerun, then unscored), a
    call past its time ``VMStartError``; the actor's own errors come back as their class."""
    from ray import exceptions as rx

    from computer_env.desktop.providers.ray.cluster import raise_answer, ray_faults
    from computer_env.errors import (
        ConfigurationError,
        DesktopNodeLost,
        InfraError,
        ResourceLimitError,
        VMStartError,
    )

    for exc in (rx.ActorDiedError(), rx.RayActorError(), rx.ActorUnavailableError("gone", None)):
        with pytest.raises(DesktopNodeLost) as info, ray_faults("resetting", "desktop", "x:1"):
            raise exc
        assert isinstance(info.value, InfraError)
        assert info.value.category == "desktop_node_lost"
    with pytest.raises(VMStartError, match="timed out"), ray_faults("starting", "desktop", "x:1"):
        raise rx.GetTimeoutError("late")
    error = {"kind": "infra", "cls": "ResourceLimitError", "message": "memory", "detail": "d"}
    with pytest.raises(ResourceLimitError, match="memory"):
        raise_answer({"error": error})
    with pytest.raises(VMStartError):  # a name that is no InfraError of ours
        raise_answer({"error": {**error, "cls": "KeyError"}})
    with pytest.raises(ConfigurationError, match="no bwrap"):
        raise_answer(
            {"error": {"kind": "config", "cls": "ConfigurationError", "message": "no bwrap"}}
        )
    assert raise_answer({"url": "http://n:1"}) == {"url": "http://n:1"}


def test_a_worker_on_another_host_is_reached_through_reverse_forwards() -> None:
    """When the worker is not on the desktop's node, each host port the desktop may reach
    (asset server, proxy) is forwarded from the sandbox's side of the node (``guest_host``,
    the port the guest was told) to the worker's host. One host plays both: the worker's
    service on 127.0.0.1, the node's sandbox side on 127.0.0.3."""
    from computer_env.desktop.providers.base import DesktopHandle
    from computer_env.desktop.providers.ray.actor import DesktopActor

    with socket.socket() as service:
        service.bind(("127.0.0.1", 0))
        service.listen()
        port = service.getsockname()[1]
        actor = object.__new__(DesktopActor)  # the forwarding part alone, no Ray, no desktop
        actor.same_host, actor.worker_ip, actor.allowed, actor.reverse = (
            False,
            "127.0.0.1",
            {port},
            {},
        )
        actor._reverse(
            DesktopHandle(url="http://127.0.0.3:5000", token="t", guest_host="127.0.0.3")
        )
        try:
            with socket.create_connection(("127.0.0.3", port), timeout=5) as c:
                c.sendall(b"asset?")
                conn, _ = service.accept()
                with conn:
                    assert conn.recv(6) == b"asset?"
        finally:
            for fwd in actor.reverse.values():
                fwd.shutdown()
                fwd.server_close()


class _LostHost:
    """A provider whose desktop is dead after the agent's code action; ``lost`` says whether
    its host (a Ray node or actor) went away. A stand-in: the guard's rule is under test, the
    real providers' answers are tested on the cluster above."""

    def __init__(self, lost: bool) -> None:
        self.lost = lost

    def is_alive(self) -> bool:
        return False

    def host_lost(self) -> bool:
        return self.lost

    def limit_breaches(self) -> list[str]:
        return []


@pytest.mark.parametrize("lost", [True, False])
def test_a_desktop_whose_node_died_during_a_code_action_is_never_the_agents_zero(
    lost: bool,
) -> None:
    """A dead desktop after the agent's code action is ``desktop_killed`` (the agent's 0) only
    when its host is still there; a lost Ray node or actor leaves it to the error boundary
    (rerun, then unscored)."""
    from types import SimpleNamespace

    from computer_env.errors import VMUnreachable
    from fixtures.cases.attempt import Attempt
    from fixtures.cases.integrity.integrity import DESKTOP_KILLED, AgentTurnGuard, task_text

    attempt = Attempt(number=1)
    pool = SimpleNamespace(provider=_LostHost(lost), limit_breaches=lambda: [])
    guard = AgentTurnGuard(
        SimpleNamespace(client=None),  # type: ignore[arg-type]
        pool,  # type: ignore[arg-type]
        attempt,
        task_text("do it"),
    )
    attempt.mark_agent_started(guard)
    guard.code_action_error = VMUnreachable("no answer during the code action")
    decided = guard.settle_failure(VMUnreachable("desktop gone"))
    assert decided is (not lost)
    assert (attempt.failure_category == DESKTOP_KILLED) is (not lost)
