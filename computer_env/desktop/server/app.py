"""The Flask application: authentication, JSON errors, and the route modules."""

from __future__ import annotations

import hmac
import logging

from flask import Flask, Response, jsonify, request
from werkzeug.exceptions import HTTPException

from computer_env.desktop import identity
from computer_env.desktop.server.httputil import RequestError, error_response
from computer_env.desktop.server.state import ServerConfig, ServerState

logger = logging.getLogger(__name__)

_ACTING = frozenset({"/run_python", "/run_bash_script"})
"""Requests besides /setup/* after which the screen may still change (see ``damage.py``)."""


def create_app(config: ServerConfig) -> Flask:
    """Build the server app for ``config``; ``app.extensions['desktop_server']`` is its state."""
    from computer_env.desktop.server.routes import a11y as routes_a11y
    from computer_env.desktop.server.routes import commands as routes_exec
    from computer_env.desktop.server.routes import files as routes_files
    from computer_env.desktop.server.routes import input as routes_input
    from computer_env.desktop.server.routes import screen as routes_screen
    from computer_env.desktop.server.routes import verify as routes_verify
    from computer_env.desktop.server.routes import windows as routes_windows

    app = Flask("computer_env.desktop.server", static_folder=None)
    app.json.sort_keys = False  # type: ignore[attr-defined]
    app.extensions["desktop_server"] = ServerState(config)
    expected = f"Bearer {config.token}".encode()

    @app.post(identity.PATH)
    def _identity() -> Response | tuple[Response, int]:
        """The session's secret proven on a nonce, without a token asked (see identity)."""
        nonce = (request.get_json(silent=True) or {}).get("nonce")
        if not isinstance(nonce, str) or not identity.valid_nonce(nonce):
            return error_response(400, "field 'nonce' must be 32-128 lowercase hex characters")
        return jsonify({"proof": identity.proof(config.token, nonce)})

    @app.before_request
    def _authenticate() -> tuple[Response, int] | None:
        if request.path == identity.PATH and request.method == "POST":
            return None  # answers a challenge only: it reveals nothing and changes nothing
        given = request.headers.get("Authorization", "").encode()
        if not hmac.compare_digest(given, expected):
            return error_response(403, "missing or wrong bearer token")
        return None

    @app.after_request
    def _note_input(response: Response) -> Response:
        # set-up steps and code actions may draw or start something: settling gives them its
        # grace period (plain /execute is what probes use; /actions and /type note their own)
        if request.method == "POST" and (
            request.path.startswith("/setup/") or request.path in _ACTING
        ):
            app.extensions["desktop_server"].input_done(start=False)
        return response

    @app.errorhandler(RequestError)
    def _request_error(exc: RequestError) -> tuple[Response, int]:
        return error_response(exc.status, exc.message)

    @app.errorhandler(HTTPException)
    def _http_error(exc: HTTPException) -> tuple[Response, int]:
        code = exc.code or 500
        if code == 404:
            return error_response(404, f"no such endpoint: {request.method} {request.path}")
        if code == 405:
            return error_response(405, f"method {request.method} not allowed on {request.path}")
        return error_response(code, exc.description or exc.name)

    @app.errorhandler(Exception)
    def _unexpected(exc: Exception) -> tuple[Response, int]:
        logger.exception("%s %s failed", request.method, request.path)
        return error_response(500, f"internal error: {type(exc).__name__}: {exc}")

    for module in (routes_exec, routes_screen, routes_files, routes_windows, routes_a11y):
        app.register_blueprint(module.bp)
    if config.extras:
        app.register_blueprint(routes_input.bp)
        app.register_blueprint(routes_verify.bp)
    return app
