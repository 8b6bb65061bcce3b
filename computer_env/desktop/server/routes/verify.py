"""``POST /verify``: a synthesized task's verifier, run by the isolated verifier runner.

``{code, timeout}`` -> ``{status: "success", result}`` or ``{status: "error", kind, message}``
with ``kind`` one of ``crashed`` (the verifier raised; ``message`` its traceback's tail),
``bad`` (``verify()`` returned neither a bool nor a number), ``timeout``, ``died`` (the verifier
process ended without a result) and ``gone`` (the runner itself is not running). This server's
extra (absent on upstream OSWorld VMs); see :mod:`.verifier` for the isolation.
"""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

from computer_env.desktop.server.commands.verifier import RunnerGone
from computer_env.desktop.server.httputil import body, field_number, field_str
from computer_env.desktop.server.state import state

bp = Blueprint("verify", __name__)


def _error(kind: str, message: str) -> Response:
    return jsonify({"status": "error", "kind": kind, "message": message})


@bp.post("/verify")
def verify() -> Response:
    """Run ``code`` (defining ``verify()``) in a fresh fork of the runner."""
    data = body()
    code = field_str(data, "code") or ""
    timeout = field_number(data, "timeout", 60.0, low=0.1, high=3600)
    runner = state().verifier
    if runner is None:
        return _error("gone", "this server has no verifier runner")
    try:
        answer = runner.run(code, timeout)
    except RunnerGone as exc:
        return _error("gone", str(exc))
    if "result" in answer:
        return jsonify({"status": "success", "result": answer["result"]})
    if "error" in answer:
        return _error("crashed", str(answer["error"]))
    if "bad" in answer:
        return _error("bad", f"verify() returned {answer['bad']}, not True/False or a score")
    if answer.get("timeout"):
        return _error("timeout", f"the verifier ran out of time ({timeout:g} s)")
    return _error("died", str(answer.get("died") or "the verifier gave no result"))
