"""This server's extras (absent on upstream OSWorld VMs): /capabilities, /actions, /type,
/settle."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

from computer_env.desktop.server.httputil import body, error_response, field_number, field_str
from computer_env.desktop.server.state import VERSION, state

bp = Blueprint("input", __name__)


@bp.get("/capabilities")
def capabilities() -> Response:
    """What a client may use beyond OSWorld's API."""
    from computer_env.desktop.server.screen.screenshot import FORMATS

    return jsonify(
        {
            "fast_actions": True,
            "type_text": True,
            "verify": state().verifier is not None,
            "formats": list(FORMATS),
            "settle": state().damage is not None,
            "x_grabs": state().xwatch is not None,
            "version": VERSION,
        }
    )


@bp.post("/actions")
def actions() -> Response | tuple[Response, int]:
    """``{code, timeout?}``: pyautogui code in the persistent interpreter ->
    ``{status, output, error, returncode}``."""
    from computer_env.desktop.server.input.actions import WorkerError

    data = body()
    code = field_str(data, "code")
    timeout = field_number(data, "timeout", 120.0, low=0.1, high=3600)
    try:
        result = state().actions.run(code or "", timeout=timeout)
    except WorkerError as exc:
        return error_response(500, str(exc))
    state().input_done()
    return jsonify(result)


@bp.post("/type")
def type_text() -> Response | tuple[Response, int]:
    """``{text, delay_ms?}``: type Unicode text into the focused window (xdotool); ``delay_ms``
    between keystrokes, default 0: the X server queues them in order, the app takes them at
    its pace, and the reply waits for its delivery confirmation."""
    from computer_env.desktop.server.input.text_input import TypingError
    from computer_env.desktop.server.input.text_input import type_text as xdotool_type

    data = body()
    text = data.get("text")
    if not isinstance(text, str) or text == "":
        return error_response(400, "field 'text' is required (a non-empty string)")
    delay = int(field_number(data, "delay_ms", 0, low=0, high=1000))
    try:
        xdotool_type(text, delay_ms=delay)
    except UnicodeError:
        return error_response(400, "field 'text' is not valid Unicode (a lone surrogate)")
    except TypingError as exc:
        return error_response(500, str(exc))
    finally:
        state().input_done()
    return jsonify({"status": "success", "typed": len(text)})


@bp.post("/settle")
def settle() -> Response | tuple[Response, int]:
    """``{quiet_s?, max_quiet_s?, cap_s?, grace_s?, cpu_quiet_s?, map_quiet_s?}``: wait until
    the screen has not been drawn on for ``quiet_s`` (default 0.1; up to ``max_quiet_s`` for a
    screen drawing in bursts), ``grace_s`` (default 0.03) has passed since the last input,
    ``map_quiet_s`` (default 0.2) since a window was mapped, and the active window's app has
    been idle (CPU) for ``cpu_quiet_s`` (default 0.1; 0: not asked), at most ``cap_s``
    (default 3) -> ``{waited_s, still_s, capped, events, app_busy, maps, quiet_s,
    last_wait}``; see ``damage.py``.
    501 when the display has no DAMAGE."""
    data = body()
    quiet = field_number(data, "quiet_s", 0.1, low=0.0, high=60.0)
    cap = field_number(data, "cap_s", 3.0, low=0.0, high=600.0)
    grace = field_number(data, "grace_s", 0.03, low=0.0, high=10.0)
    longest = field_number(data, "max_quiet_s", quiet, low=0.0, high=60.0)
    cpu = field_number(data, "cpu_quiet_s", 0.1, low=0.0, high=10.0)
    mapped = field_number(data, "map_quiet_s", 0.2, low=0.0, high=10.0)
    watcher = state().damage
    if watcher is None:
        return error_response(501, "this display has no DAMAGE extension; compare screenshots")
    r = watcher.settle(
        quiet_s=quiet,
        cap_s=cap,
        grace_s=grace,
        max_quiet_s=longest,
        cpu_quiet_s=cpu,
        map_quiet_s=mapped,
    )
    return jsonify(
        {
            "waited_s": round(r.waited_s, 4),
            "still_s": round(r.still_s, 4),
            "capped": r.capped,
            "events": r.events,
            "app_busy": r.app_busy,
            "maps": r.maps,
            "quiet_s": round(r.quiet_s, 4),
            "last_wait": r.last_wait,
        }
    )


@bp.get("/x_grabs")
def x_grabs() -> Response:
    """The grabs of the X server found (and released) so far: ``{grabs: [{at, held_s,
    released, grabber, detail}], watching, x_server}`` (see ``xwatch.py``)."""
    watch = state().xwatch
    if watch is None:
        return jsonify({"grabs": [], "watching": False, "x_server": None})
    return jsonify(watch.snapshot())
