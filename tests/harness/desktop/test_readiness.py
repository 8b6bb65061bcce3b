"""``computer_env.readiness.wait_until`` and the provider waits built on it, against real child
HTTP server processes: one that answers late (first refusing connections, then "503 starting"),
one that dies before it answers, one that never answers, one that refuses the token."""

from __future__ import annotations

import http.client
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from computer_env.desktop.providers.local.session import wait_ready
from computer_env.desktop.providers.ports import wait_until_ready
from computer_env.errors import VMStartError
from computer_env.readiness import NotReady, NotYet, wait_until
from tests.harness.helpers.polling import scaled

# argv: port, seconds before it listens, 503 answers before the final one, final status,
# exit code ("-": never exits); prints one line to stdout (the session log) first
SERVER = r"""
import http.server, sys, time
port, delay, busy, status, die = (int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]),
                                  int(sys.argv[4]), sys.argv[5])
print("child server starting", flush=True)
time.sleep(delay)
if die != "-":
    print("child server gives up", flush=True)
    sys.exit(int(die))
left = [busy]
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        code, body = (503, b"starting") if left[0] > 0 else (status, b"ready")
        left[0] -= 1
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def child_server(
    tmp_path: Path, *, delay: float, busy: int = 0, status: int = 200, die: int | None = None
) -> Iterator[tuple[subprocess.Popen[bytes], int, Path]]:
    """A real server process on a free loopback port (its output in a log file); killed after."""
    port, log_file = _free_port(), tmp_path / f"child-{time.monotonic_ns()}.log"
    with open(log_file, "wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                SERVER,
                str(port),
                str(delay),
                str(busy),
                str(status),
                "-" if die is None else str(die),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        yield proc, port, log_file
    finally:
        proc.kill()
        proc.wait(timeout=10)


def _get(port: int) -> str:
    """One ``GET /`` of the child: its body when 200, :class:`NotYet` otherwise."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5.0)
    try:
        conn.request("GET", "/")
        resp = conn.getresponse()
        body = resp.read().decode()
        if resp.status != 200:
            raise NotYet(f"HTTP {resp.status} {body}")
        return body
    finally:
        conn.close()


def test_waits_for_a_server_that_answers_late(tmp_path: Path) -> None:
    seen: list[str] = []

    def check() -> str:
        try:
            return _get(port)
        except (OSError, NotYet) as exc:
            seen.append(type(exc).__name__ + str(exc))
            raise

    with child_server(tmp_path, delay=1.0, busy=2) as (proc, port, _):
        t0 = time.monotonic()
        assert wait_until(check, timeout_s=60, what="late server", child=proc) == "ready"
        waited = time.monotonic() - t0
        assert proc.poll() is None
    assert waited >= 1.0
    assert any(s.startswith("ConnectionRefusedError") for s in seen)  # not listening yet
    assert seen[-2:] == ["NotYetHTTP 503 starting"] * 2  # then answering, not ready


def test_a_child_that_dies_ends_the_wait_at_once(tmp_path: Path) -> None:
    with child_server(tmp_path, delay=0.5, die=3) as (proc, port, _):
        t0 = time.monotonic()
        with pytest.raises(NotReady) as info:
            wait_until(lambda: _get(port), timeout_s=120, what="dying server", child=proc)
        waited = time.monotonic() - t0
    exc = info.value
    assert exc.exit_code == 3 and exc.ended and exc.gone is None
    assert str(exc).startswith(
        "dying server exited with code 3 before it answered (last: ConnectionRefusedError"
    )
    assert waited < scaled(30)  # far from the 120 s deadline


def test_an_answer_does_not_count_once_the_child_exited(tmp_path: Path) -> None:
    """Another process answering on the port is not the server of a child that exited."""
    dead = subprocess.Popen([sys.executable, "-c", "raise SystemExit(5)"])
    dead.wait(timeout=60)
    with child_server(tmp_path, delay=0) as (_, port, _):
        with pytest.raises(NotReady, match="^exited server exited with code 5"):
            wait_until(lambda: _get(port), timeout_s=60, what="exited server", child=dead)


def test_a_server_that_never_answers_times_out_naming_it(tmp_path: Path) -> None:
    with child_server(tmp_path, delay=3600) as (proc, port, _):
        t0 = time.monotonic()
        with pytest.raises(NotReady) as info:
            wait_until(
                lambda: _get(port),
                timeout_s=1.5,
                what="silent server",
                child=proc,
                interval_s=0.05,
                max_interval_s=0.2,
            )
        waited = time.monotonic() - t0
        assert proc.poll() is None
    exc = info.value
    assert exc.exit_code is None and not exc.ended
    assert str(exc).startswith(
        "silent server did not answer within 1.5 s (last: ConnectionRefusedError"
    )
    assert 1.5 <= waited < 10 and exc.waited_s >= 1.5


def test_a_check_that_returns_none_then_a_value() -> None:
    answers = iter([None, None, 7])
    assert wait_until(lambda: next(answers), timeout_s=10, what="counter", interval_s=0.01) == 7
    with pytest.raises(NotReady, match=r"^never did not answer within 0\.2 s \(last: not ready\)"):
        wait_until(lambda: None, timeout_s=0.2, what="never", interval_s=0.01)
    with pytest.raises(ValueError, match="interval_s"):
        wait_until(lambda: 1, timeout_s=1, what="bad", interval_s=0)


def test_guest_wait_returns_when_the_screenshot_comes(tmp_path: Path) -> None:
    with child_server(tmp_path, delay=1.0, busy=1) as (_, port, _):
        waited = wait_until_ready(
            f"http://127.0.0.1:{port}", "t", timeout=60, what="guest", interval=0.05
        )
    assert waited >= 1.0


def test_guest_wait_stops_when_the_guest_is_gone(tmp_path: Path) -> None:
    with child_server(tmp_path, delay=0.5, die=137) as (proc, port, _):

        def gone() -> str | None:
            return None if proc.poll() is None else f"container exited ({proc.returncode})"

        t0 = time.monotonic()
        with pytest.raises(
            VMStartError,
            match=r"^guest stopped before its server answered: "
            r"container exited \(137\)$",
        ):
            wait_until_ready(
                f"http://127.0.0.1:{port}",
                None,
                timeout=120,
                what="guest",
                interval=0.05,
                still_starting=gone,
            )
    assert time.monotonic() - t0 < scaled(30)


def test_guest_wait_fails_at_once_on_a_refused_token(tmp_path: Path) -> None:
    with child_server(tmp_path, delay=0, status=401) as (_, port, _):
        t0 = time.monotonic()
        with pytest.raises(VMStartError, match="refused the token"):
            wait_until_ready(f"http://127.0.0.1:{port}", "wrong", timeout=120, what="guest")
    assert time.monotonic() - t0 < scaled(30)


def test_guest_wait_times_out_with_the_last_problem(tmp_path: Path) -> None:
    with child_server(tmp_path, delay=3600) as (_, port, _):
        with pytest.raises(
            VMStartError,
            match=r"did not return a screenshot within 2s "
            r"\(last: ConnectError",
        ):
            wait_until_ready(f"http://127.0.0.1:{port}", None, timeout=2, what="guest")


def test_session_wait_ready_answers_late_and_reports_a_dead_session(tmp_path: Path) -> None:
    with child_server(tmp_path, delay=1.0, busy=2) as (proc, port, log_file):
        wait_ready("127.0.0.1", port, "t", proc, timeout=60, log_file=log_file)
        assert proc.poll() is None
    with child_server(tmp_path, delay=0.5, die=3) as (proc, port, log_file):
        with pytest.raises(
            VMStartError,
            match=r"^desktop session exited \(3\) before its "
            r"server answered$",
        ) as info:
            wait_ready("127.0.0.1", port, "t", proc, timeout=120, log_file=log_file)
    assert info.value.detail == "child server starting\nchild server gives up\n"
    with child_server(tmp_path, delay=0, busy=1000) as (proc, port, log_file):
        with pytest.raises(VMStartError, match=r"not ready after 1 s \(GET /platform: HTTP 503"):
            wait_ready("127.0.0.1", port, "t", proc, timeout=1, log_file=log_file)
