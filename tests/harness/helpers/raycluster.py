"""A real two-node Ray cluster on this host, for the ``--provider ray`` tests.

Two ``ray start --block`` processes, each in a process group of its own (the test owns them;
:meth:`TwoNodeCluster.close` kills both groups and what they started): the head on 127.0.0.1 and
a second node on 127.0.0.2 (any 127/8 address is this host's loopback), each with its own
``--temp-dir`` and ``{"desktop": N}``. The second node's address is distinct, so the suite's
drivers attach to the head's raylet and the second node can be killed without killing them;
result files name the node by that address. Questions to the cluster go through a short-lived
driver child (:meth:`query`, :mod:`tests.harness.helpers.ray_driver`), so the test process itself never joins Ray.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil

from tests.harness.helpers.polling import scaled, wait_for
from tests.harness.helpers.tiers import E2E, needs

RAY = str(Path(sys.executable).with_name("ray"))
ROOT = Path(__file__).resolve().parents[3]
HEAD_IP, NODE_IP = "127.0.0.1", "127.0.0.2"
#: node death is noticed within ~3 s instead of Ray's default ~30 s
SYSTEM_CONFIG = {
    "health_check_period_ms": 1000,
    "health_check_failure_threshold": 3,
    "health_check_timeout_ms": 1000,
}


LOCK = Path(tempfile.gettempdir()) / "holo-bench-ray-test.lock"


@needs(E2E, "ray")
@contextmanager
def one_cluster_at_a_time(timeout: float = 900.0) -> Iterator[None]:
    """Hold the host's test-cluster lock (``flock``): tests on other xdist workers wait for it
    (at most ``timeout`` s), so two clusters and two suites never share a 2-core host."""
    with open(LOCK, "w") as fh:
        wait_for(
            lambda: _try_lock(fh.fileno()),
            f"the Ray test-cluster lock {LOCK}",
            timeout=timeout,
            interval=0.5,
        )
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


class _NodeExited(AssertionError):
    """The second node's ``ray start`` gave up."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@needs(E2E, "ray")
class TwoNodeCluster:
    """Head (127.0.0.1) + one node (127.0.0.2), ``desktops`` of resource ``desktop`` each."""

    def __init__(self, desktops: int = 2, head_desktops: int | None = None) -> None:
        """``desktops`` of resource ``desktop`` on the second node, ``head_desktops`` (default:
        as many) on the head."""
        self.desktops = desktops
        self.head_desktops = desktops if head_desktops is None else head_desktops
        self.base = Path(tempfile.mkdtemp(prefix="rt", dir="/tmp"))  # socket paths stay short
        self.port = free_port()
        self.address = f"{HEAD_IP}:{self.port}"
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def _start(self, name: str, *args: str) -> None:
        log = open(self.base / f"{name}.log", "ab")
        desktops = self.head_desktops if name == "head" else self.desktops
        self.procs[name] = subprocess.Popen(
            [
                RAY,
                "start",
                "--block",
                "--num-cpus=1",
                "--disable-usage-stats",
                f"--resources={json.dumps({'desktop': desktops})}",
                f"--temp-dir={self.base / name}",
                f"--dashboard-agent-listen-port={free_port()}",
                *args,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"},
        )
        log.close()

    def start(self) -> TwoNodeCluster:
        """Start both nodes and wait until the cluster lists both alive; on failure nothing is
        left running. ``ray start`` gives a node 30 s to register (fixed in Ray): on a loaded
        host the second node may give up, so it is started again, at most 3 times."""
        try:
            self._start(
                "head",
                "--head",
                f"--port={self.port}",
                f"--node-ip-address={HEAD_IP}",
                "--include-dashboard=false",
                f"--dashboard-port={free_port()}",
                f"--ray-client-server-port={free_port()}",
                f"--system-config={json.dumps(SYSTEM_CONFIG)}",
            )
            wait_for(
                self._gcs_answers, f"the Ray head's GCS on {self.address}", timeout=90, interval=0.3
            )
            for attempt in range(3):
                self._start(
                    "node",
                    f"--address={self.address}",
                    f"--node-ip-address={NODE_IP}",
                    "--node-manager-port=0",
                    "--object-manager-port=0",
                )
                try:
                    wait_for(
                        self._both_alive, "both Ray nodes to be alive", timeout=120, interval=1.0
                    )
                    return self
                except _NodeExited:
                    self._kill_group(self.procs["node"])  # what it left (a raylet)
                    if attempt == 2:
                        raise
        except BaseException:
            self.close()
            raise
        return self

    def _both_alive(self) -> bool:
        if self.procs["node"].poll() is not None:
            raise _NodeExited(f"ray start (node) exited: {self.log('node')[-1500:]}")
        return len(self.alive_nodes()) == 2

    def _gcs_answers(self) -> bool:
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                raise AssertionError(f"ray start ({name}) exited: {self.log(name)[-2000:]}")
        try:
            socket.create_connection((HEAD_IP, self.port), timeout=1).close()
            return True
        except OSError:
            return False

    def log(self, name: str) -> str:
        return (self.base / f"{name}.log").read_text(errors="replace")

    def driver(self, question: str, *args: str) -> list[str]:
        """The command of a driver child that asks ``question`` (see
        :mod:`tests.harness.helpers.ray_driver`) of this cluster."""
        return [
            sys.executable,
            "-m",
            "tests.harness.helpers.ray_driver",
            self.address,
            question,
            *args,
        ]

    def _ask(self, question: str, args: tuple[str, ...], timeout: float) -> list[Any] | None:
        """``[answer]``, or None when the driver did not answer within ``timeout`` s."""
        try:
            res = subprocess.run(
                self.driver(question, *args),
                capture_output=True,
                text=True,
                timeout=scaled(timeout),
                start_new_session=True,
                cwd=ROOT,
            )
        except subprocess.TimeoutExpired:
            return None
        line = next((ln for ln in res.stdout.splitlines() if ln.startswith("OUT")), None)
        assert line is not None, f"Ray driver ({question}) failed: {res.stderr[-2000:]}"
        return [json.loads(line[3:])]

    def query(self, question: str, *args: str, once: bool = False) -> Any:
        """Ask the cluster ``question`` in a driver child (the test process never joins Ray);
        its answer. A driver that does not answer within 60 s is killed and the question asked
        again, up to 240 s in all (a driver's connect can stall on a loaded host: the cluster
        still answers the next one); ``once``: a question that must not be asked twice (it
        changes the cluster) gets one driver, 240 s."""
        if once:
            answer = self._ask(question, args, 240)
            assert answer is not None, f"Ray driver ({question}) did not answer within 240 s"
            return answer[0]
        answer = wait_for(
            lambda: self._ask(question, args, 60),
            f"the Ray cluster to answer {question!r}",
            timeout=240,
            interval=1.0,
        )
        assert answer is not None
        return answer[0]

    def alive_nodes(self) -> list[dict[str, Any]]:
        return list(self.query("nodes"))

    def named_actors(self) -> list[str]:
        return list(self.query("actors"))

    # -- the nodes' processes -----------------------------------------------------------------
    def raylet(self, name: str) -> psutil.Process:
        """The raylet of node ``name`` (``head`` or ``node``)."""
        root = psutil.Process(self.procs[name].pid)
        return next(p for p in root.children(recursive=True) if p.name() == "raylet")

    def descendants(self) -> list[psutil.Process]:
        """Every live process under either node (what they started, workers included)."""
        out: list[psutil.Process] = []
        for proc in self.procs.values():
            try:
                out += psutil.Process(proc.pid).children(recursive=True)
            except psutil.NoSuchProcess:
                continue
        return out

    def worker_pids(self) -> set[int]:
        """Pids of every Ray worker process either node ever ran (from their log names)."""
        pids: set[int] = set()
        for path in self.base.glob("*/session_*/logs/*"):
            m = re.search(
                r"^(?:python-core-)?worker-[0-9a-f]+(?:-[0-9a-f]+)?[-_](\d+)\.", path.name
            )
            if m:
                pids.add(int(m.group(1)))
        return pids

    @staticmethod
    def _kill_group(proc: subprocess.Popen[bytes]) -> None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def close(self) -> None:
        """Kill both nodes' process groups and whatever else they started (Ray's own stop
        takes ~15 s a node; a test cluster keeps nothing worth a graceful stop), then remove
        the temp dirs."""
        rest = self.descendants()
        for proc in self.procs.values():
            self._kill_group(proc)
        for child in rest:
            try:
                child.kill()
            except psutil.NoSuchProcess:
                pass
        for proc in self.procs.values():
            proc.wait(timeout=10)
        psutil.wait_procs(rest, timeout=10)
        shutil.rmtree(self.base, ignore_errors=True)


__all__ = ["HEAD_IP", "NODE_IP", "TwoNodeCluster", "free_port", "one_cluster_at_a_time"]
