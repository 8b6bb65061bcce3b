"""Windows: /setup/activate_window, /setup/close_window, /setup/open_file."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from flask import Blueprint, Response, jsonify

from computer_env.desktop.server.httputil import (
    RequestError,
    body,
    expand_path,
    field_bool,
    field_number,
    field_str,
)
from computer_env.desktop.server.state import state
from computer_env.desktop.server.x11.windows import activate_window_id, list_windows, wmctrl_action

bp = Blueprint("windows", __name__)

OPEN_TIMEOUT = 1800.0  # OSWorld's server waits up to 1800 s for the opened file's window
OPEN_POLL_S = 0.05
"""How often the window list is read while an opened file's window is awaited (a few ms of the
X server's time each; it was 0.2 s, 0.1 s of set-up on average for every ``open``)."""


def _window_request(action: str, done: str) -> Response:
    """OSWorld's Linux server runs wmctrl and answers 200 whether or not a window matched; so
    does this one, with ``{"status": "not_found"}`` in the body when none did (the harness
    checks that; OSWorld's controller only logs the answer)."""
    data = body()
    name = field_str(data, "window_name") or ""
    strict = field_bool(data, "strict")
    by_class = field_bool(data, "by_class")
    if wmctrl_action(action, name, strict=strict, by_class=by_class) != 0:
        return jsonify({"status": "not_found", "message": f"Window {name} not found"})
    return jsonify({"status": "success", "message": done})


@bp.post("/setup/activate_window")
def activate_window() -> Response:
    """OSWorld: ``{window_name, strict, by_class}`` via ``wmctrl -a``."""
    return _window_request("a", "Window activated successfully")


@bp.post("/setup/close_window")
def close_window() -> Response:
    """OSWorld: ``{window_name, strict, by_class}`` via ``wmctrl -c``."""
    return _window_request("c", "Window closed successfully.")


@bp.post("/setup/open_file")
def open_file() -> str:
    """OSWorld: ``{path, window_name?, timeout_seconds?}``: xdg-open a file (or start an app by
    name), wait (up to 1800 s by default, as OSWorld) until a window whose title names it (or
    ``window_name``) exists, and raise it."""
    data = body()
    raw = field_str(data, "path") or ""
    window_name = field_str(data, "window_name", required=False)
    timeout = field_number(
        data,
        "timeout_seconds",
        field_number(data, "timeout", OPEN_TIMEOUT, low=0.1, high=3600),
        low=0.1,
        high=3600,
    )
    path = Path(expand_path(raw))
    procs = state().procs
    if path.exists():
        procs.popen(["xdg-open", str(path)])
        needles = {path.name, path.stem}
    elif shutil.which(raw):
        procs.popen([raw])
        needles = {raw}
    else:
        raise RequestError(404, f"Application/file not found: {raw}")
    if window_name:
        needles = {window_name}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for window in list_windows():
            if any(n and n in window.title for n in needles):
                activate_window_id(window.wid)
                return "File opened and window activated successfully"
        time.sleep(OPEN_POLL_S)
    raise RequestError(
        500, f"Failed to find window for {sorted(needles)} within {timeout:g} seconds."
    )


@bp.get("/windows")
def windows() -> Response:
    """This server's extra: the managed windows ``[{id, class, title}]``."""
    return jsonify([{"id": w.wid, "class": w.wm_class, "title": w.title} for w in list_windows()])
