"""Telling the desktop's own server from an impersonator, and what a code action's error answer
means, over real HTTP on loopback (no desktop).

The real guest server app (:func:`computer_env.desktop.server.app.create_app`) answers the
identity challenge; :class:`GuestStandIn` plays what a real desktop no longer does after its
fixes (an error answer to a code action) and what only an agent's process would do (answer on
the server's port without the session's secret): test doubles for those two, as their names say.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from werkzeug.serving import make_server

from computer_env.desktop import identity
from computer_env.desktop.client import DesktopClient, DesktopRequestError
from computer_env.desktop.server.app import create_app
from computer_env.desktop.server.state import ServerConfig
from computer_env.osworld.code_action import run_code

TOKEN = "t" * 43


@pytest.fixture
def guest_server(tmp_path: Path) -> Iterator[str]:
    """The guest server's Flask app, served for real on loopback (no X display: only routes
    that need none are asked)."""
    app = create_app(ServerConfig(token=TOKEN, home=tmp_path, display=None, extras=False))
    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        app.extensions["desktop_server"].close()


class GuestStandIn:
    """A stand-in for a guest server: ``/run_bash_script`` answers 500; ``/identity`` answers
    with the proof under ``secret`` (the session's, or another: an impersonator), or 404."""

    def __init__(self, secret: str | None) -> None:
        owner = self
        self.secret = secret

        class Handler(BaseHTTPRequestHandler):
            def _send(self, status: int, body: dict[str, object]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 - http.server naming
                self._send(200, {"platform": "Linux"})

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"] or 0)))
                if self.path == identity.PATH and owner.secret is not None:
                    self._send(200, {"proof": identity.proof(owner.secret, body["nonce"])})
                elif self.path == identity.PATH:
                    self._send(404, {"message": "no such endpoint"})
                else:
                    self._send(500, {"message": "internal error: UnicodeDecodeError"})

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_proof_is_bound_to_the_secret_and_the_nonce() -> None:
    nonce = identity.new_nonce()
    assert identity.valid_nonce(nonce) and len(nonce) == 2 * identity.NONCE_BYTES
    good = identity.proof(TOKEN, nonce)
    assert identity.proven(TOKEN, nonce, good)
    assert not identity.proven("u" * 43, nonce, good)
    assert not identity.proven(TOKEN, identity.new_nonce(), good)
    assert not identity.proven(TOKEN, nonce, None) and not identity.proven(TOKEN, nonce, 1)
    for bad in ("", "ab", "g" * 64, "A" * 64, "a" * 200, 7, None):
        assert not identity.valid_nonce(bad)


def test_the_real_server_proves_itself_without_being_given_the_token(guest_server: str) -> None:
    with DesktopClient(guest_server, TOKEN) as client:
        assert client.proves_identity() is True
    with DesktopClient(guest_server, "someone-else") as other:
        assert other.proves_identity() is False  # it proves a secret, not whatever it is told
    with DesktopClient(guest_server, None) as upstream:
        assert upstream.proves_identity() is None  # no token: nothing to prove
    import httpx

    assert httpx.post(f"{guest_server}{identity.PATH}", json={"nonce": "x"}).status_code == 400
    assert httpx.get(f"{guest_server}/platform").status_code == 403  # the rest still asks


def test_an_impersonator_cannot_prove_the_secret() -> None:
    for secret in ("u" * 43, None):
        stand_in = GuestStandIn(secret)
        try:
            with DesktopClient(stand_in.url, TOKEN) as client:
                assert client.ping()  # it answers ...
                assert client.proves_identity() is False  # ... but is not the desktop's
        finally:
            stand_in.close()


def test_a_code_action_error_from_a_well_desktop_is_the_agents_result() -> None:
    stand_in = GuestStandIn(TOKEN)
    try:
        with DesktopClient(stand_in.url, TOKEN, retries=0) as client:
            result = run_code(client, "bash", "printf '\\xff'", timeout_s=10)
        assert result.info["exit_code"] is None and not result.info["timed_out"]
        assert "could not run the script" in result.output and "UnicodeDecodeError" in result.output
    finally:
        stand_in.close()


def test_a_code_action_error_from_an_impersonator_is_raised() -> None:
    stand_in = GuestStandIn("u" * 43)
    try:
        with (
            DesktopClient(stand_in.url, TOKEN, retries=0) as client,
            pytest.raises(DesktopRequestError),
        ):
            run_code(client, "bash", "true", timeout_s=10)
    finally:
        stand_in.close()
