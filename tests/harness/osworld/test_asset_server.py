"""The asset server: real HTTP on loopback, real files in a temporary root."""

from __future__ import annotations

import http.client
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from computer_env.osworld.builtin import BUILTIN_ROOT
from computer_env.osworld.catalog.assets import AssetServer, content_type, resolve


@pytest.fixture()
def root(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    (site / "shop").mkdir(parents=True)
    (site / "shop" / "index.html").write_text("<h1>shop</h1>", encoding="utf-8")
    (site / "data.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    (site / "book.xlsx").write_bytes(b"PK\x03\x04fake")
    (site / "notes.txt").write_text("héllo\n", encoding="utf-8")
    (site / ".hidden").write_text("secret", encoding="utf-8")
    (tmp_path / "outside.txt").write_text("do not serve", encoding="utf-8")
    (site / "escape").symlink_to(tmp_path / "outside.txt")
    return site


@pytest.fixture()
def server(root: Path):
    with AssetServer(root, host="127.0.0.1") as srv:
        yield srv


def _raw_get(port: int, path: str) -> tuple[int, bytes]:
    """GET without any client-side path normalisation (to test traversal)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.putrequest("GET", path, skip_host=False, skip_accept_encoding=True)
        conn.endheaders()
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def test_serves_files_with_content_types(server: AssetServer) -> None:
    base = server.url()
    r = requests.get(f"{base}/data.csv", timeout=5)
    assert r.status_code == 200 and r.text == "a,b\n1,2\n"
    assert r.headers["Content-Type"] == "text/csv; charset=utf-8"
    r = requests.get(f"{base}/book.xlsx", timeout=5)
    assert r.content == b"PK\x03\x04fake"
    assert r.headers["Content-Type"].startswith("application/vnd.openxmlformats-officedocument")
    r = requests.get(f"{base}/notes.txt", timeout=5)
    assert r.text == "héllo\n" and r.headers["Content-Type"] == "text/plain; charset=utf-8"
    r = requests.get(f"{base}/shop/", timeout=5)
    assert r.text == "<h1>shop</h1>" and r.headers["Content-Type"].startswith("text/html")
    r = requests.get(f"{base}/shop/index.html?x=1#frag", timeout=5)
    assert r.status_code == 200


def test_head_and_methods(server: AssetServer) -> None:
    base = server.url()
    r = requests.head(f"{base}/data.csv", timeout=5)
    assert r.status_code == 200 and r.headers["Content-Length"] == "8" and r.content == b""
    assert requests.post(f"{base}/data.csv", data=b"x", timeout=5).status_code == 405
    assert requests.put(f"{base}/new.txt", data=b"x", timeout=5).status_code == 405


def test_404s(server: AssetServer) -> None:
    base = server.url()
    assert requests.get(f"{base}/missing.txt", timeout=5).status_code == 404
    assert requests.get(f"{base}/", timeout=5).status_code == 404  # no index, no listing
    assert requests.get(f"{base}/.hidden", timeout=5).status_code == 404


@pytest.mark.parametrize(
    "path",
    [
        "/../outside.txt",
        "/shop/../../outside.txt",
        "/%2e%2e/outside.txt",
        "/shop/%2e%2e/%2e%2e/outside.txt",
        "/..%2foutside.txt",
        "/escape",
        "//etc/passwd",
        "/%00data.csv",
    ],
)
def test_traversal_blocked(server: AssetServer, path: str) -> None:
    status, body = _raw_get(server.port, path)
    assert status == 404
    assert b"do not serve" not in body and b"root:" not in body


def test_request_log(server: AssetServer) -> None:
    before = time.time()
    requests.get(f"{server.url()}/data.csv", timeout=5)
    requests.get(f"{server.url()}/nope", timeout=5)
    log = server.requests
    assert [(r.path, r.status) for r in log] == [("/data.csv", 200), ("/nope", 404)]
    assert all(before <= r.time <= time.time() for r in log)


def test_stop_releases_port(root: Path) -> None:
    srv = AssetServer(root, host="127.0.0.1")
    port = srv.start()
    assert requests.get(f"http://127.0.0.1:{port}/data.csv", timeout=5).ok
    srv.stop()
    srv.stop()  # idempotent
    with pytest.raises(requests.ConnectionError):
        requests.get(f"http://127.0.0.1:{port}/data.csv", timeout=2)


def test_resolve_and_types(root: Path) -> None:
    assert resolve(root, "/data.csv") == (root / "data.csv").resolve()
    assert resolve(root, "/../outside.txt") is None
    assert content_type(Path("x.docx")).endswith("wordprocessingml.document")
    assert content_type(Path("x.bin")) == "application/octet-stream"


def test_default_root_is_builtin_assets() -> None:
    with AssetServer(host="127.0.0.1") as srv:
        assert srv.root == (BUILTIN_ROOT / "assets").resolve()


def test_cli_serves(root: Path) -> None:
    """``python -m computer_env.osworld.catalog.assets`` serves until terminated."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "computer_env.osworld.catalog.assets",
            "--root",
            str(root),
            "--host",
            "127.0.0.1",
            "--port",
            "0",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        port = int(line.rsplit(":", 1)[1].strip("/\n"))
        assert requests.get(f"http://127.0.0.1:{port}/data.csv", timeout=5).text == "a,b\n1,2\n"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
