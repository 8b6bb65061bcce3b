"""The VM proxy and the network gate, with a REAL tinyproxy and real local HTTP servers.

End to end: a built-in Chromium task on a real local desktop runs with ``--vm-proxy`` pointing at
tinyproxy on loopback; tinyproxy's log must show the browser's request for the task page (so the
browser's traffic really went through it). With tinyproxy stopped, the gate waits ``--net-wait``
and the case ends unscored (``infra: network``), never as a scored 0.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from computer_env.errors import NetworkError
from computer_env.procs import set_pdeathsig
from fixtures.cases.models.endpoints import free_port
from fixtures.cases.netgate import NetGate, guest_proxy_url, proxy_port, without_userinfo
from fixtures.cases.records.results import NetCheck
from tests.harness.helpers.httpstub import CountingServer
from tests.harness.helpers.polling import scaled, wait_for
from tests.harness.helpers.suite import SuiteRun, builtin_smoke, run_suite, task_list_file

TINYPROXY = shutil.which("tinyproxy") or "/usr/bin/tinyproxy"
needs_tinyproxy = pytest.mark.skipif(
    not Path(TINYPROXY).exists(), reason="tinyproxy is not installed (apt-get install tinyproxy)"
)


class Tinyproxy:
    """A real tinyproxy in the foreground (``-d -c conf``) on a free port, logging to a file.

    Listens on all interfaces and allows loopback and the local sandboxes' veth range, so both
    the host (the network gate) and the desktop's browser can use it."""

    def __init__(self, folder: Path) -> None:
        self.port = free_port()
        self.log = folder / "tinyproxy.log"
        self.conf = folder / "tinyproxy.conf"
        self.conf.write_text(
            f"Port {self.port}\nListen 0.0.0.0\nTimeout 30\nMaxClients 50\n"
            f'LogFile "{self.log}"\nLogLevel Connect\n'
            "Allow 127.0.0.1\nAllow 10.213.0.0/16\n"
        )
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Tinyproxy:
        self.proc = subprocess.Popen(
            [TINYPROXY, "-d", "-c", str(self.conf)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=set_pdeathsig,
        )
        wait_for(self._listening, f"tinyproxy to listen on port {self.port}", 15, interval=0.05)
        return self

    def _listening(self) -> bool:
        assert self.proc is not None and self.proc.poll() is None, "tinyproxy exited"
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", self.port)) == 0

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=10)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


HttpServer = CountingServer


@pytest.fixture
def http_ok() -> Iterator[HttpServer]:
    server = HttpServer()
    yield server
    server.close()


@pytest.fixture
def tinyproxy(tmp_path: Path) -> Iterator[Tinyproxy]:
    proxy = Tinyproxy(tmp_path).start()
    yield proxy
    proxy.close()


# -- unit: proxy URLs ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("proxy", "expected"),
    [
        ("http://127.0.0.1:3128", "http://10.213.0.1:3128"),
        ("http://localhost:8888/", "http://10.213.0.1:8888/"),
        ("http://0.0.0.0:3128", "http://10.213.0.1:3128"),
        ("http://[::1]:3128", "http://10.213.0.1:3128"),
        ("http://127.0.0.1", "http://10.213.0.1"),
        ("http://user:pw@127.0.0.1:3128", "http://user:pw@10.213.0.1:3128"),
        ("http://proxy.lab:3128", "http://proxy.lab:3128"),  # not on this host: unchanged
        ("http://10.0.0.5:3128", "http://10.0.0.5:3128"),
    ],
)
def test_guest_proxy_url(proxy: str, expected: str) -> None:
    assert guest_proxy_url(proxy, "10.213.0.1") == expected


def test_guest_proxy_url_brackets_an_ipv6_guest_host() -> None:
    assert guest_proxy_url("http://127.0.0.1:3128", "fd00::1") == "http://[fd00::1]:3128"


@pytest.mark.parametrize(
    ("proxy", "port"),
    [
        ("http://127.0.0.1:3128", 3128),
        ("http://localhost", 80),
        ("https://127.0.0.1", 443),
        ("http://user:pw@localhost:8080", 8080),
        ("http://proxy.lab:3128", None),
        ("http://10.0.0.5:3128", None),
    ],
)
def test_proxy_port_only_for_a_proxy_on_this_host(proxy: str, port: int | None) -> None:
    assert proxy_port(proxy) == port


def test_without_userinfo() -> None:
    assert without_userinfo("http://u:secret@127.0.0.1:3128") == "http://127.0.0.1:3128"
    assert without_userinfo("http://127.0.0.1:3128") == "http://127.0.0.1:3128"


# -- unit: the gate against real servers -----------------------------------------------------
def test_gate_up_at_once(http_ok: HttpServer) -> None:
    (check,) = NetGate(http_ok.url, wait_s=5).wait_until_up()
    assert check.ok and check.when == "before" and "HTTP 200" in check.detail
    assert http_ok.hits == 1


def test_gate_counts_a_client_error_as_up_and_a_server_error_as_down() -> None:
    not_found, unavailable = HttpServer(status=404), HttpServer(status=503)
    try:
        assert NetGate(not_found.url).probe("before").ok
        check = NetGate(unavailable.url).probe("after")
        assert not check.ok and check.when == "after" and "HTTP 503" in check.detail
    finally:
        not_found.close()
        unavailable.close()


def test_gate_waits_while_down_then_goes_on_when_up() -> None:
    port = free_port()
    later: list[HttpServer] = []
    timer = threading.Timer(1.0, lambda: later.append(HttpServer(port=port)))
    timer.start()
    try:
        t0 = time.monotonic()
        checks = NetGate(f"http://127.0.0.1:{port}/", wait_s=20, interval_s=0.2).wait_until_up()
        waited = time.monotonic() - t0
    finally:
        timer.join()
        for server in later:
            server.close()
    assert not checks[0].ok and "ConnectError" in checks[0].detail
    assert checks[-1].ok and all(not c.ok for c in checks[:-1])
    assert 0.9 <= waited < scaled(20)


def test_gate_down_past_the_wait_raises_network_error_with_the_detail() -> None:
    server = HttpServer(status=503)
    try:
        t0 = time.monotonic()
        checks: list[NetCheck] = []
        with pytest.raises(NetworkError) as info:
            NetGate(server.url, wait_s=1.0, interval_s=0.2).wait_until_up(into=checks)
        waited = time.monotonic() - t0
    finally:
        server.close()
    err = info.value
    assert waited >= 1.0
    assert err.category == "network"
    assert "network down for 1 s" in str(err) and "HTTP 503" in str(err)
    assert err.detail and "HTTP 503" in err.detail
    assert not hasattr(err, "net_checks")  # checks are kept by the caller, not on the error
    assert len(checks) >= 2 and all(not c.ok for c in checks)
    assert server.hits == len(checks)


@needs_tinyproxy
def test_gate_probes_through_the_proxy(tinyproxy: Tinyproxy, http_ok: HttpServer) -> None:
    with_auth = tinyproxy.url.replace("http://", "http://holo:s3cret-pw@")
    (check,) = NetGate(http_ok.url, with_auth, wait_s=5).wait_until_up()
    assert check.ok and f"via {tinyproxy.url}" in check.detail
    assert "s3cret-pw" not in check.detail  # proxy credentials never reach a result file
    wait_for(lambda: f"GET {http_ok.url}" in tinyproxy.log_text(), "tinyproxy's log line", 5)
    tinyproxy.close()
    with pytest.raises(NetworkError):
        NetGate(http_ok.url, tinyproxy.url, wait_s=0.5, interval_s=0.1).wait_until_up()


# -- end to end: a Chromium task through tinyproxy, then with tinyproxy gone ------------------
@dataclass
class ProxyRuns:
    up: SuiteRun
    down: SuiteRun
    down_wall_s: float
    proxy_log: str
    net_wait: float


@pytest.fixture(scope="module")
def proxy_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyRuns]:
    tmp = tmp_path_factory.mktemp("proxy")
    chrome = builtin_smoke()["chrome"][:1]
    tasks = task_list_file(tmp, {"chrome": chrome})
    net_wait = 3.0
    common = (
        "--task-list",
        str(tasks),
        "-n0",
        "--infra-reruns",
        "1",
        "--infra-rerun-delay",
        "0",
        "--net-wait",
        str(net_wait),
        "-o",
        f"cache_dir={tmp / 'pytest-cache'}",
    )
    probe = HttpServer()
    proxy = Tinyproxy(tmp).start()
    try:
        up = run_suite(
            tmp, "up", *common, "--vm-proxy", proxy.url, "--net-gate", "--net-probe-url", probe.url
        )
        proxy.close()
        proxy_log = proxy.log_text()
        t0 = time.monotonic()
        # the environment twins this time: HOLO_VM_PROXY, HOLO_NET_GATE=1
        down = run_suite(
            tmp,
            "down",
            *common,
            "--net-probe-url",
            probe.url,
            env={"HOLO_VM_PROXY": proxy.url, "HOLO_NET_GATE": "1"},
        )
        down_wall = time.monotonic() - t0
    finally:
        proxy.close()
        probe.close()
    yield ProxyRuns(up, down, down_wall, proxy_log, net_wait)


@pytest.mark.desktop
@needs_tinyproxy
def test_browser_traffic_goes_through_the_vm_proxy(proxy_runs: ProxyRuns) -> None:
    run = proxy_runs.up
    assert run.rc == 0, run.output[-3000:]
    (result,) = run.results().values()
    assert result["outcome"] == "passed" and result["score"] == 1.0, result
    assert result["net_checks"] and all(c["ok"] for c in result["net_checks"])
    assert {c["when"] for c in result["net_checks"]} == {"before", "after"}
    # the page the task opens, requested by the browser inside the sandbox through tinyproxy
    page = re.search(
        r"GET http://10\.213\.\d+\.\d+:\d+/chrome/shop/index\.html", proxy_runs.proxy_log
    )
    assert page, "tinyproxy never saw the browser's request for the task page:\n" + "\n".join(
        line for line in proxy_runs.proxy_log.splitlines() if "GET" in line
    )
    assert re.search(r"Connect \(file descriptor \d+\): 10\.213\.", proxy_runs.proxy_log)


@pytest.mark.desktop
@needs_tinyproxy
def test_proxy_down_is_unscored_after_waiting_never_a_zero(proxy_runs: ProxyRuns) -> None:
    run = proxy_runs.down
    assert run.rc == 0, run.output[-3000:]  # xfail is not a failure of the run
    (result,) = run.results().values()
    assert result["outcome"] == "unscored" and result["score"] is None, result
    assert result["infra_category"] == "network"
    assert result["attempts"] == 2
    assert "infra: network" in run.output and "XFAIL" in run.output
    assert not (run.run_dir / result["artifact_dir"] / "result.txt").exists()
    assert run.summary["unscored"] == 1 and run.summary["scored"] == 0
    # it waited for the network, --net-wait on each attempt, before giving up
    assert proxy_runs.down_wall_s >= proxy_runs.net_wait * result["attempts"]
    assert "network down for 3 s" in result["infra_reason"]


@pytest.mark.desktop
@needs_tinyproxy
def test_proxy_down_result_records_the_failed_probes(proxy_runs: ProxyRuns) -> None:
    (result,) = proxy_runs.down.results().values()
    checks = result["net_checks"]
    assert checks and all(not c["ok"] and c["when"] == "before" for c in checks)
    assert all("ConnectError" in c["detail"] or "ProxyError" in c["detail"] for c in checks)
