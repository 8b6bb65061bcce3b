"""The active window as the desktop's X server sees it, run INSIDE the desktop as pyautogui code
(python-xlib, which pyautogui brings; no project imports).

The harness sends this file's text followed by one line, ``print(window_state_json(S))``
(S: how long to wait for the ``_NET_WM_PING`` answer, in seconds), and reads the JSON object::

    {"active": window id|0, "class": [...], "title": str, "viewable": bool,
     "geometry": [x, y, w, h], "pointer": [x, y], "focused": bool,
     "pong": true|false|null (the window does not take pings), "error": text (an X error)}

``focused``: the keyboard focus is the window or one of its descendants. ``pong``: the window's
event loop answered a ping, so it has handled every event sent before it.
"""

import json
import select
import time
from typing import Any

from Xlib import X, Xatom, display, error
from Xlib.protocol import event

__all__ = ["focus_inside", "is_pong", "window_state", "window_state_json"]

MAX_DEPTH = 64


def focus_inside(focus: int, window: int, root: int, parent_of: Any) -> bool:
    """Is the focus window ``focus`` the ``window`` or inside it? ``parent_of(id)`` gives a
    window's parent id; the walk stops at ``root`` or after ``MAX_DEPTH`` steps."""
    steps = 0
    while focus and focus != window and focus != root and steps < MAX_DEPTH:
        focus = parent_of(focus)
        steps += 1
    return bool(focus) and focus == window


def is_pong(ev: Any, protocols: int, ping: int, stamp: int) -> bool:
    """Is the X event ``ev`` the answer to the ping sent with timestamp ``stamp``?"""
    return bool(
        ev.type == X.ClientMessage
        and ev.client_type == protocols
        and list(ev.data[1][:2]) == [ping, stamp]
    )


def _ping(d: Any, root: Any, w: Any, w_id: int, ping_s: float) -> bool | None:
    ping, protocols = d.intern_atom("_NET_WM_PING"), d.intern_atom("WM_PROTOCOLS")
    if ping not in (w.get_wm_protocols() or []):
        return None
    # GTK answers to the root window's structure listeners, Qt to the substructure's
    root.change_attributes(event_mask=X.StructureNotifyMask | X.SubstructureNotifyMask)
    stamp = int(time.time() * 1000) & 0xFFFFFFFF
    w.send_event(
        event.ClientMessage(window=w, client_type=protocols, data=(32, [ping, stamp, w_id, 0, 0])),
        event_mask=0,
    )
    d.flush()
    end = time.monotonic() + ping_s
    while time.monotonic() < end:
        while d.pending_events():
            if is_pong(d.next_event(), protocols, ping, stamp):
                return True
        select.select([d], [], [], max(0.0, end - time.monotonic()))
    return False


def window_state(ping_s: float) -> dict[str, Any]:
    """The active window's state (see the module's docstring)."""
    d = display.Display()
    root = d.screen().root
    out: dict[str, Any] = {"active": 0}
    try:
        prop = root.get_full_property(d.intern_atom("_NET_ACTIVE_WINDOW"), Xatom.WINDOW)
        w_id = int(prop.value[0]) if prop is not None and len(prop.value) else 0
        out["active"] = w_id
        if w_id:
            w = d.create_resource_object("window", w_id)
            out["class"] = [str(c) for c in (w.get_wm_class() or ())]
            name = w.get_full_property(d.intern_atom("_NET_WM_NAME"), d.intern_atom("UTF8_STRING"))
            out["title"] = (
                name.value.decode("utf-8", "replace")
                if name is not None
                else str(w.get_wm_name() or "")
            )
            out["viewable"] = w.get_attributes().map_state == X.IsViewable
            geometry, at = w.get_geometry(), root.translate_coords(w, 0, 0)
            out["geometry"] = [at.x, at.y, geometry.width, geometry.height]
            pointer = root.query_pointer()
            out["pointer"] = [pointer.root_x, pointer.root_y]
            focus = d.get_input_focus().focus
            out["focused"] = focus_inside(
                focus.id if hasattr(focus, "id") else 0,
                w_id,
                root.id,
                lambda wid: d.create_resource_object("window", wid).query_tree().parent.id,
            )
            out["pong"] = _ping(d, root, w, w_id, ping_s)
    except error.XError as exc:
        out["error"] = str(exc)
    finally:
        d.close()
    return out


def window_state_json(ping_s: float) -> str:
    """:func:`window_state` as one line of JSON (what the harness reads)."""
    return json.dumps(window_state(ping_s))
