"""Borders of the host: what a task file makes the host download never comes from this host (in
any spelling, through the hosts file, a redirect or a rebinding name), and the host's loopback
servers (asset server, reference endpoint, ``--watch`` page) answer this host user only.

Real parts throughout: a real HTTP server on 127.0.0.1 that counts requests, the real prefetch
command in a subprocess, a real second host user (created for the test, root only) connecting
with ``runuser``. The one test double is the resolver in the rebinding test (a name that answers
a public address first and 127.0.0.1 afterwards cannot be served here otherwise).
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from computer_env.osworld.catalog import download
from computer_env.osworld.catalog.assets import AssetServer
from computer_env.osworld.catalog.tasks import TaskLoadError, parse_task
from computer_env.osworld.guards.confine import check_download_url
from computer_env.osworld.guards.guarded_http import RefusedAddress
from fixtures.report.watch.server import WatchServer
from holo_agent.reference.server import ReferenceEndpoint

REPO = Path(__file__).resolve().parents[3]
SPELLINGS = (
    "127.1",
    "2130706433",
    "0x7f.1",
    "0177.0.0.1",
    "0x7f000001",
    "0",
    "[::1]",
    "[::ffff:127.0.0.1]",
    "[::ffff:7f00:1]",
)


class _Counting(BaseHTTPRequestHandler):
    """Answers every GET with a body (or a redirect to ``server.redirect``) and counts it."""

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        server = self.server
        with server.lock:  # type: ignore[attr-defined]
            server.hits.append(self.path)  # type: ignore[attr-defined]
        target = getattr(server, "redirect", None)
        self.send_response(302 if target else 200)
        if target:
            self.send_header("Location", target)
        self.send_header("Content-Length", "6")
        self.end_headers()
        self.wfile.write(b"secret")

    def log_message(self, *args: object) -> None:
        pass


class _CountingServer(ThreadingHTTPServer):
    """The server of :class:`_Counting`: the paths asked for, and where to redirect."""

    def __init__(self, redirect: str | None) -> None:
        super().__init__(("127.0.0.1", 0), _Counting)
        self.hits: list[str] = []
        self.lock = threading.Lock()
        self.redirect = redirect


def _serve(redirect: str | None = None) -> Iterator[_CountingServer]:
    srv = _CountingServer(redirect)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


@pytest.fixture()
def counting() -> Iterator[_CountingServer]:
    yield from _serve()


def _hosts_file_loopback_name() -> str | None:
    """A name other than ``localhost`` that this host's resolver maps to a loopback address."""
    names = [socket.gethostname()]
    try:
        for line in Path("/etc/hosts").read_text().splitlines():
            fields = line.split("#")[0].split()
            names.extend(fields[1:])
    except OSError:
        pass
    for name in names:
        if "localhost" in name:
            continue
        try:
            addresses = {
                str(i[4][0]) for i in socket.getaddrinfo(name, 80, type=socket.SOCK_STREAM)
            }
        except OSError:
            continue
        if addresses and all(a.startswith("127.") or a == "::1" for a in addresses):
            return name
    return None


def _task(task_id: str, url: str, *, cloud: bool = False) -> dict:
    getter = {"type": "cloud_file", "path": url, "dest": "gold.txt"}
    return {
        "id": task_id,
        "instruction": "fetch it",
        "config": []
        if cloud
        else [{"type": "download", "parameters": {"files": [{"url": url, "path": "/tmp/x.txt"}]}}],
        "evaluator": {
            "func": "compare_text_file",
            "expected": getter,
            "result": {"type": "vm_file", "path": "/tmp/x.txt", "dest": "x.txt"},
        },
    }


# ------------------------------------------------------------------- downloads: every spelling


@pytest.mark.parametrize("host", SPELLINGS)
def test_every_spelling_of_this_host_is_refused_without_a_request(
    host: str, counting: _CountingServer, tmp_path: Path
) -> None:
    url = f"http://{host}:{counting.server_address[1]}/secret.txt"
    with pytest.raises(TaskLoadError, match="config\\[0\\].parameters.files\\[0\\].url"):
        parse_task(_task("t1", url), domain="os", path=tmp_path / "t1.json")
    with pytest.raises(RefusedAddress, match="refused"):  # and at download time, unchecked task
        download.fetch(url, tmp_path / "out")
    assert counting.hits == [] and not (tmp_path / "out").exists()


def test_prefetch_refuses_a_hosts_file_name_names_the_task_and_goes_on(
    counting: _CountingServer, tmp_path: Path
) -> None:
    name = _hosts_file_loopback_name()
    if name is None:
        pytest.skip("no name other than localhost maps to 127.0.0.1 in this host's resolver")
    port = counting.server_address[1]
    root = tmp_path / "evaluation_examples"
    (root / "examples" / "os").mkdir(parents=True)
    urls = {
        "a-hosts": f"http://{name}:{port}/a.txt",
        "b-cloud": f"http://{name}:{port}/gold.txt",
        "c-unresolvable": "http://no-such-host.invalid/c.txt",
    }
    for task_id, url in urls.items():
        task = _task(task_id, url, cloud=task_id == "b-cloud")
        (root / "examples" / "os" / f"{task_id}.json").write_text(json.dumps(task))
    (root / "test_all.json").write_text(json.dumps({"os": sorted(urls)}))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "computer_env.osworld",
            "prefetch",
            "--osworld-root",
            str(root),
            "--cache",
            str(tmp_path / "cache"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 3, proc.stderr  # every URL was tried: a refusal does not stop the rest
    assert any(
        f"task os/a-hosts: '{urls['a-hosts']}': refused" in e and "loopback" in e for e in errors
    ), errors
    assert any(f"task os/b-cloud: '{urls['b-cloud']}': refused" in e for e in errors), errors
    assert any("failed" in e and "no-such-host.invalid" in e for e in errors), errors
    assert counting.hits == []
    assert not list((tmp_path / "cache").rglob("*")) or not [
        p for p in (tmp_path / "cache").rglob("*") if p.is_file()
    ]


@pytest.mark.parametrize("spelling", ["127.1", "127.0.0.1", "localhost", "[::ffff:127.0.0.1]"])
def test_each_redirect_hop_is_checked(
    spelling: str, counting: _CountingServer, tmp_path: Path
) -> None:
    target = f"http://{spelling}:{counting.server_address[1]}/secret.txt"
    for hop in _serve(redirect=target):
        first = f"127.0.0.1:{hop.server_address[1]}"  # allowed like the asset server
        with pytest.raises(RefusedAddress, match="refused"):
            download.fetch(f"http://{first}/start", tmp_path / "out", allow_hosts={first})
        assert hop.hits == ["/start"]
    assert counting.hits == [] and not (tmp_path / "out").exists()


@pytest.mark.parametrize("public_answers", [1, 2])
def test_a_name_rebound_to_this_host_after_the_check_is_refused(
    public_answers: int, counting: _CountingServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Test double: the resolver. ``rebind.example`` answers a public address
    ``public_answers`` times (the task check; then the check before the request), then
    127.0.0.1; each answer must be checked where it is used."""
    real, calls = socket.getaddrinfo, []

    def resolver(host, port, *args, **kwargs):  # type: ignore[no-untyped-def]
        if host != "rebind.example":
            return real(host, port, *args, **kwargs)
        calls.append(host)
        address = "93.184.215.14" if len(calls) <= public_answers else "127.0.0.1"
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]

    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    url = f"http://rebind.example:{counting.server_address[1]}/secret.txt"
    check_download_url(url)  # the setup-time check sees the public answer
    with pytest.raises(RefusedAddress, match="rebind.example resolves to 127.0.0.1"):
        download.fetch(url, tmp_path / "out")
    assert counting.hits == [] and len(calls) == public_answers + 1


# ---------------------------------------------------------------- loopback servers: this user

_CLIENT = """
import http.client, sys
conn = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
try:
    conn.request("GET", sys.argv[2], headers={"Host": sys.argv[3]})
    print(conn.getresponse().status)
except (ConnectionError, http.client.HTTPException, OSError) as exc:
    print("refused", type(exc).__name__)
"""


@pytest.fixture(scope="module")
def other_user() -> Iterator[str]:
    """A throwaway system user of this host (root only), removed afterwards."""
    if os.geteuid() != 0 or not shutil.which("useradd") or not shutil.which("runuser"):
        pytest.skip("needs root with useradd and runuser to act as a second host user")
    name = f"hbborder{os.getpid() % 100000}"
    subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
        check=True,
        capture_output=True,
        timeout=30,
    )
    try:
        yield name
    finally:
        subprocess.run(["userdel", name], capture_output=True, timeout=30)


def _get_as(user: str | None, port: int, path: str, host: str | None = None) -> str:
    python = "/usr/bin/python3" if user else sys.executable
    cmd = [python, "-c", _CLIENT, str(port), path, host or f"127.0.0.1:{port}"]
    if user:
        cmd = ["runuser", "-u", user, "--", *cmd]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=30, cwd="/")
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_asset_server_answers_only_this_host_user(other_user: str, tmp_path: Path) -> None:
    (tmp_path / "calc").mkdir()
    (tmp_path / "calc" / "orders_gold.xlsx").write_bytes(b"PK gold")
    (tmp_path / "calc" / "orders.xlsx").write_bytes(b"PK input")
    with AssetServer(tmp_path, host="0.0.0.0", private={"calc/orders_gold.xlsx"}) as srv:
        assert _get_as(None, srv.port, "/calc/orders_gold.xlsx") == "200"
        assert _get_as(other_user, srv.port, "/calc/orders_gold.xlsx").startswith("refused")
        assert _get_as(other_user, srv.port, "/calc/orders.xlsx").startswith("refused")
        answered = [r.path for r in srv.requests]
    assert answered == ["/calc/orders_gold.xlsx"]


def test_reference_endpoint_answers_only_this_host_user(other_user: str) -> None:
    with ReferenceEndpoint({"task": []}) as ep:
        port = int(ep.url.split(":")[2].split("/")[0])
        assert _get_as(None, port, "/v1/models") == "200"
        assert _get_as(other_user, port, "/v1/models").startswith("refused")


def test_watch_page_answers_only_this_host_user(other_user: str, tmp_path: Path) -> None:
    server = WatchServer(tmp_path)
    server.start()
    try:
        port = int(server.url.rstrip("/").rsplit(":", 1)[1])
        assert _get_as(None, port, "/status.json") == "200"
        assert _get_as(other_user, port, "/status.json").startswith("refused")
    finally:
        server.stop()


@pytest.mark.parametrize(
    "host,status",
    [
        ("127.0.0.1:{port}", 200),
        ("localhost:{port}", 200),
        ("[::1]:{port}", 200),
        ("LOCALHOST:{port}", 200),
        ("rebound.example:{port}", 421),
        ("127.0.0.1", 421),
        ("localhost:1", 421),
        ("127.0.0.1:{port}.evil.example", 421),
    ],
)
def test_watch_page_refuses_other_host_names(host: str, status: int, tmp_path: Path) -> None:
    server = WatchServer(tmp_path)
    server.start()
    try:
        port = int(server.url.rstrip("/").rsplit(":", 1)[1])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/status.json", headers={"Host": host.format(port=port)})
        response = conn.getresponse()
        body = response.read()
        conn.close()
        assert response.status == status
        if status != 200:
            assert b"progress" not in body
    finally:
        server.stop()
