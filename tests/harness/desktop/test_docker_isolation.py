"""Docker desktops isolated like local ones: a network per desktop, the host side firewalled.

Two real Docker desktops (the guest-server image on a real dockerd). From inside desktop A, by
a command run through its guest server as an agent's code action runs, desktop B's server port,
its DevTools (9222) and VLC (8080) forwards, and a host port listening on all addresses that A
was not given are all unreachable; the host ports A was given are reachable, and B's forwards
still answer the worker through their 127.0.0.1 ports. Every network, container and firewall
chain carries its run and owner; a SIGKILLed owner's are swept, a live owner's never.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from computer_env.desktop.client import DesktopClient
from computer_env.desktop.providers.docker.containers import LABEL_OWNER, LABEL_PID, LABEL_RUN
from computer_env.desktop.providers.docker.network import (
    DesktopNet,
    desktop_chains,
    firewall_missing,
)
from computer_env.desktop.providers.docker.provider import (
    DockerProvider,
    sweep_dead_leftovers,
    sweep_run_leftovers,
)
from tests.harness.helpers.dockerd import IMAGE, docker_client  # noqa: F401 (fixture)
from tests.harness.helpers.polling import wait_for

ROOT = Path(__file__).resolve().parents[3]

pytestmark = [
    pytest.mark.docker,
    pytest.mark.skipif(
        firewall_missing() is not None, reason=str(firewall_missing())
    ),  # root and iptables
]

#: run inside desktop A: a TCP connection to each (host, port), what answered (or the error)
PROBE = textwrap.dedent("""
    import json, socket, sys
    from concurrent.futures import ThreadPoolExecutor

    def probe(target):
        host, port = target
        try:
            with socket.create_connection((host, port), timeout=3) as s:
                s.sendall(b"GET / HTTP/1.0\\r\\nHost: x\\r\\n\\r\\n")
                s.settimeout(3)
                data = b""
                while chunk := s.recv(4096):
                    data += chunk
                return "open: " + data.decode("utf-8", "replace")[-80:]
        except OSError as exc:
            return type(exc).__name__

    targets = [tuple(t) for t in json.loads(sys.argv[1])]
    with ThreadPoolExecutor(len(targets)) as pool:
        print(json.dumps(dict(zip([f"{h}:{p}" for h, p in targets], pool.map(probe, targets)))))
""")


class _Hello(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        body = b"hello from the host"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def host_servers() -> Iterator[tuple[int, int, int]]:
    """Three HTTP servers on this host's every address (0.0.0.0): two to allow, one not."""
    servers = [ThreadingHTTPServer(("0.0.0.0", 0), _Hello) for _ in range(3)]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    yield servers[0].server_address[1], servers[1].server_address[1], servers[2].server_address[1]
    for server in servers:
        server.shutdown()
        server.server_close()


def _host_address() -> str:
    """This host's address on its main interface (where a default route leads)."""
    out = subprocess.run(
        ["ip", "-4", "-o", "route", "get", "1.1.1.1"], capture_output=True, text=True, check=False
    ).stdout.split()
    return out[out.index("src") + 1] if "src" in out else "127.0.0.1"


def _container_ip(provider: DockerProvider) -> str:
    container = provider._container
    container.reload()
    (net,) = container.attrs["NetworkSettings"]["Networks"].values()
    return str(net["IPAddress"])


def _probe_from(client: DesktopClient, targets: list[tuple[str, int]]) -> dict[str, str]:
    res = client.execute(["python3", "-c", PROBE, json.dumps(targets)], timeout=60)
    assert res.returncode == 0, res
    return dict(json.loads(res.output.strip().splitlines()[-1]))


def test_one_desktop_reaches_neither_another_nor_a_host_port_it_was_not_given(
    docker_client: Any, host_servers: tuple[int, int, int]
) -> None:  # noqa: F811
    allowed, allowed_later, blocked = host_servers
    a = DockerProvider(IMAGE, worker="t-iso-a", prewarm=False, ready_timeout=90)
    b = DockerProvider(IMAGE, worker="t-iso-b", prewarm=False, ready_timeout=90)
    nets: list[DesktopNet] = []
    try:
        a.allow_host_port(allowed)
        ha, hb = a.start(), b.start()
        a.allow_host_port(allowed_later)  # a port opened while the desktop runs
        assert a.firewalled and b.firewalled
        net_a, net_b = a._net, b._net
        assert net_a is not None and net_b is not None
        nets += [net_a, net_b]
        assert net_a.subnet != net_b.subnet and ha.guest_host != hb.guest_host
        b_ip = _container_ip(b)
        with DesktopClient.from_handle(hb) as client_b:
            # B's DevTools and VLC forwards, as OSWorld's task set-up starts them
            for port in (9222, 8080):
                client_b.launch(["python3", "-m", "http.server", str(port), "--directory", "/tmp"])
        for name in ("cdp", "vlc"):  # the worker reaches them, through 127.0.0.1
            url = f"http://127.0.0.1:{hb.ports[name]}/"
            wait_for(partial(_answers, url), f"desktop B's {name} forward at {url}", 60)
        host_ip = _host_address()
        targets = [
            (b_ip, 5000),
            (b_ip, 9222),
            (b_ip, 8080),
            (ha.guest_host, allowed),
            (ha.guest_host, allowed_later),
            (ha.guest_host, blocked),
            (hb.guest_host, blocked),
            (host_ip, blocked),
            ("172.17.0.1", blocked),
            (ha.guest_host, hb.ports["cdp"]),
            (ha.guest_host, hb.ports["server"]),
        ]
        with DesktopClient.from_handle(ha) as client_a:
            seen = _probe_from(client_a, targets)
        opened = {t: r for t, r in seen.items() if r.startswith("open")}
        assert set(opened) == {f"{ha.guest_host}:{allowed}", f"{ha.guest_host}:{allowed_later}"}, (
            seen
        )
        assert all(r.endswith("hello from the host") for r in opened.values()), opened
        # the same blocked server answers the host itself: it is the firewall that stops A
        assert httpx.get(f"http://{host_ip}:{blocked}/", timeout=10).text == "hello from the host"
        # B, the same way, reaches A's neighbour-facing ports no more than A reaches B's
        with DesktopClient.from_handle(hb) as client_b:
            back = _probe_from(client_b, [(_container_ip(a), 5000), (hb.guest_host, allowed)])
        assert not any(r.startswith("open") for r in back.values()), back

        # what each made carries its run and owner
        chains = desktop_chains()
        for provider, net in ((a, net_a), (b, net_b)):
            network = docker_client.networks.get(net.name)
            assert network.attrs["Labels"][LABEL_OWNER] == str(os.getpid())
            assert network.attrs["Labels"][LABEL_RUN] == provider.run_id
            assert provider._container.labels[LABEL_OWNER] == str(os.getpid())
            assert {chains.get(c) for c in net.chains} == {os.getpid()}
    finally:
        a.close()
        b.close()
    names = {net.name for net in nets}
    assert [n.name for n in docker_client.networks.list() if n.name in names] == []
    assert not {c for net in nets for c in net.chains} & set(desktop_chains())


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=3).status_code == 200
    except httpx.HTTPError:
        return False


_OWNER = textwrap.dedent("""
    import json, sys
    from computer_env.desktop.providers.docker.provider import DockerProvider
    p = DockerProvider(sys.argv[1], worker="t-iso-dead", prewarm=False, run_id=sys.argv[2],
                       controller_pid=int(sys.argv[3]))
    p.allow_host_port(9)
    container, _token, net = p._create()
    print(json.dumps({"container": container.name, "network": net.name,
                      "chains": list(net.chains)}), flush=True)
    sys.stdin.read()
""")


def _killed_owner(run_id: str, controller_pid: int) -> dict[str, Any]:
    """What a desktop owner made (container, network, chains) before it was SIGKILLed."""
    child = subprocess.Popen(
        [sys.executable, "-c", _OWNER, IMAGE, run_id, str(controller_pid)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line, "the owner made nothing"
        made: dict[str, Any] = json.loads(line)
    finally:
        child.send_signal(signal.SIGKILL)  # no close(), no atexit
        child.wait(timeout=10)
    return made


def _present(client: Any, made: dict[str, Any]) -> dict[str, bool]:
    chains = desktop_chains()
    return {
        "container": bool(
            client.containers.list(
                all=True, filters={"name": f"^{made['container']}$"}, ignore_removed=True
            )
        ),
        "network": bool(client.networks.list(names=[made["network"]])),
        "chains": all(c in chains for c in made["chains"]),
    }


def test_sweeps_remove_what_a_dead_owner_made_and_never_a_live_ones(docker_client: Any) -> None:  # noqa: F811
    """A SIGKILLed owner of a live run (controller: this process) leaves its container, network
    and chains: the run's end removes them (its run id, owner gone), as the sweep of gone
    owners does for one of any run; this process's own live desktop survives both."""
    run_id = f"iso-{os.getpid()}"
    live = DockerProvider(
        IMAGE, worker="t-iso-live", prewarm=False, run_id=run_id, controller_pid=os.getpid()
    )
    try:
        container, _token, net = live._create()
        live._container, live._net = container, net  # close() removes them
        mine = {"container": container.name, "network": net.name, "chains": list(net.chains)}
        assert (
            docker_client.networks.get(net.name).attrs["Labels"]["holo-bench.host"]
            == socket.gethostname()
        )  # another host's are never swept here
        of_run = _killed_owner(run_id, os.getpid())
        of_other = _killed_owner(f"other-{os.getpid()}", os.getpid())
        everything = {"container": True, "network": True, "chains": True}
        nothing = {"container": False, "network": False, "chains": False}
        assert _present(docker_client, of_run) == everything
        assert _present(docker_client, of_other) == everything
        assert docker_client.networks.get(of_run["network"]).attrs["Labels"][LABEL_PID] == str(
            os.getpid()
        )
        removed = sweep_run_leftovers(run_id, os.getpid(), timeout=10)
        assert {of_run["container"], of_run["network"]} <= set(removed)
        assert _present(docker_client, of_run) == nothing
        # the run's end also removed another run's leftovers: their owner is gone
        assert _present(docker_client, of_other) == nothing
        assert _present(docker_client, mine) == everything
        assert not set(sweep_dead_leftovers()) & {mine["container"], mine["network"]}
        assert _present(docker_client, mine) == everything
    finally:
        live.close()
    assert _present(docker_client, mine) == nothing
