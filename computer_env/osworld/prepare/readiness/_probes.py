"""The readiness probes run in the desktop through the OSWorld server API: the active window
(its class, title, focus and a ``_NET_WM_PING`` round trip, as pyautogui code) and LibreOffice's
frame in its accessibility tree (``ready_probe.py``, as ``/execute``)."""

from __future__ import annotations

from typing import Any

from computer_env.osworld.prepare.ready_page import PROBE_SOURCE, probe_answer

# pyautogui code run in the desktop: the active window, its focus, and a _NET_WM_PING round trip
_X_PROBE = r'''
import json as _j, select as _s, time as _t
from Xlib import display as _D, X as _X, Xatom as _A, error as _E
from Xlib.protocol import event as _V
_d = _D.Display(); _r = _d.screen().root; _o = {"active": 0}
try:
    _p = _r.get_full_property(_d.intern_atom("_NET_ACTIVE_WINDOW"), _A.WINDOW)
    _w_id = int(_p.value[0]) if _p is not None and len(_p.value) else 0
    _o["active"] = _w_id
    if _w_id:
        _w = _d.create_resource_object("window", _w_id)
        _o["class"] = [str(c) for c in (_w.get_wm_class() or ())]
        _n = _w.get_full_property(_d.intern_atom("_NET_WM_NAME"), _d.intern_atom("UTF8_STRING"))
        _o["title"] = _n.value.decode("utf-8", "replace") if _n is not None else str(_w.get_wm_name() or "")
        _o["viewable"] = _w.get_attributes().map_state == _X.IsViewable
        _g, _at = _w.get_geometry(), _r.translate_coords(_w, 0, 0)
        _o["geometry"] = [_at.x, _at.y, _g.width, _g.height]
        _q = _r.query_pointer(); _o["pointer"] = [_q.root_x, _q.root_y]
        _f = _d.get_input_focus().focus; _f = _f.id if hasattr(_f, "id") else 0; _c = 0
        while _f and _f != _w_id and _f != _r.id and _c < 64:
            _f = _d.create_resource_object("window", _f).query_tree().parent.id; _c += 1
        _o["focused"] = _f == _w_id
        _ping, _prot = _d.intern_atom("_NET_WM_PING"), _d.intern_atom("WM_PROTOCOLS")
        _o["pong"] = None
        if _ping in (_w.get_wm_protocols() or []):
            _r.change_attributes(event_mask=_X.StructureNotifyMask | _X.SubstructureNotifyMask)  # GTK's answer, Qt's
            _st = int(_t.time() * 1000) & 0xFFFFFFFF
            _w.send_event(_V.ClientMessage(window=_w, client_type=_prot, data=(32, [_ping, _st, _w_id, 0, 0])), event_mask=0)
            _d.flush(); _end = _t.monotonic() + %(ping_s)s; _o["pong"] = False
            while not _o["pong"] and _t.monotonic() < _end:
                while _d.pending_events():
                    _e = _d.next_event()
                    if _e.type == _X.ClientMessage and _e.client_type == _prot and list(_e.data[1][:2]) == [_ping, _st]:
                        _o["pong"] = True
                if not _o["pong"]:
                    _s.select([_d], [], [], max(0.0, _end - _t.monotonic()))
except _E.XError as _x:
    _o["error"] = str(_x)
finally:
    _d.close()
print(_j.dumps(_o))
'''


def x_window_state(client: Any, *, ping_s: float = 2.0) -> dict[str, Any]:
    """The active window (id, class, title, viewable, focused, pong) as the desktop sees it."""
    res = client.run_pyautogui(_X_PROBE % {"ping_s": repr(float(ping_s))})
    return probe_answer(res, "the window probe")


def office_state(client: Any, title: str) -> dict[str, Any]:
    """LibreOffice's frame as its accessibility tree shows it (see ``ready_probe.py``)."""
    res = client.execute(["/usr/bin/python3", "-c", PROBE_SOURCE, "office", title], timeout=60)
    return probe_answer(res, "the accessibility probe")


__all__ = ["office_state", "x_window_state"]
