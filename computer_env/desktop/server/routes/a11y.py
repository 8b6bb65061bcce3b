"""Accessibility: /accessibility (``{"AT": xml}``) and /terminal (``{"output", "status"}``)."""

from __future__ import annotations

import logging

from flask import Blueprint, Response, jsonify

from computer_env.desktop.server.httputil import error_response

logger = logging.getLogger(__name__)
bp = Blueprint("a11y", __name__)


@bp.get("/accessibility")
def accessibility() -> Response | tuple[Response, int]:
    from computer_env.desktop.server.a11y.accessibility import (
        AccessibilityUnavailable,
        accessibility_tree,
    )

    try:
        return jsonify({"AT": accessibility_tree()})
    except AccessibilityUnavailable as exc:
        logger.warning("accessibility tree unavailable: %s", exc)
        return error_response(503, str(exc))


@bp.get("/terminal")
def terminal() -> Response:
    """OSWorld: ``{"output": text-or-null, "status": "success"}``. Null when no accessible
    terminal is focused (xterm is not accessible) or no a11y bus exists."""
    from computer_env.desktop.server.a11y.accessibility import (
        AccessibilityUnavailable,
        terminal_output,
    )

    try:
        output = terminal_output()
    except AccessibilityUnavailable as exc:
        logger.info("terminal output unavailable: %s", exc)
        output = None
    return jsonify({"output": output, "status": "success"})
