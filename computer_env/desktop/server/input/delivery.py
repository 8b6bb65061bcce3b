"""Input delivered, not just sent: an ``XSync``, then a ``_NET_WM_PING`` round trip with the
active window, whose app answers only after it has handled every earlier event."""

from __future__ import annotations

import itertools
import logging
import select
import time

from Xlib import X, Xatom
from Xlib import display as xdisplay
from Xlib import error as xerror
from Xlib.protocol import event as xevent

logger = logging.getLogger(__name__)

PING_TIMEOUT_S = 5.0  # how long a window that speaks _NET_WM_PING may take to answer
_PING_SERIAL = itertools.count(1)
ANSWER_MASK = X.StructureNotifyMask | X.SubstructureNotifyMask
"""What to select on the root to see every toolkit's ping answer (see :func:`ping_window`)."""


def active_window(dpy: xdisplay.Display) -> int:
    """The window manager's active window (else the input focus); 0 when there is none."""
    root = dpy.screen().root
    prop = root.get_full_property(dpy.intern_atom("_NET_ACTIVE_WINDOW"), Xatom.WINDOW)
    if prop is not None and len(prop.value) and int(prop.value[0]):
        return int(prop.value[0])
    focus = dpy.get_input_focus().focus
    return int(focus.id) if hasattr(focus, "id") else 0


def ping_window(dpy: xdisplay.Display, window_id: int, timeout: float) -> bool | None:
    """Send ``_NET_WM_PING``; True once answered (the app has handled every earlier event),
    False if it did not answer in ``timeout`` s, None if the window does not speak the protocol
    or is hidden or gone, before or while it is asked (none answers then: a Qt dialog that the
    input closed never does)."""
    ping, protocols = dpy.intern_atom("_NET_WM_PING"), dpy.intern_atom("WM_PROTOCOLS")
    window = dpy.create_resource_object("window", window_id)
    try:
        if ping not in (window.get_wm_protocols() or []):
            return None
    except xerror.XError:
        return None
    while dpy.pending_events():  # an unmap heard before this ask is not this window's now
        dpy.next_event()
    window.change_attributes(event_mask=X.StructureNotifyMask, onerror=xerror.CatchError())
    try:  # from here on the window's unmap or destruction is heard
        if window.get_attributes().map_state != X.IsViewable:
            return None
        root = dpy.screen().root
        # the answer goes to the root: GTK sends it for SubstructureNotify, Qt (VLC) for
        # StructureNotify (each beside SubstructureRedirect, which the window manager holds)
        root.change_attributes(event_mask=ANSWER_MASK)
        stamp = next(_PING_SERIAL) & 0xFFFFFFFF
        window.send_event(
            xevent.ClientMessage(
                window=window, client_type=protocols, data=(32, [ping, stamp, window_id, 0, 0])
            ),
            event_mask=0,
        )
        dpy.flush()
        deadline = time.monotonic() + timeout
        while True:
            while dpy.pending_events():
                e = dpy.next_event()
                if (
                    e.type == X.ClientMessage
                    and e.client_type == protocols
                    and list(e.data[1][:3]) == [ping, stamp, window_id]
                ):
                    return True
                if e.type in (X.UnmapNotify, X.DestroyNotify) and e.window.id == window_id:
                    return None
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            select.select([dpy], [], [], left)
    except xerror.XError:  # gone before it could be asked
        return None
    finally:  # stop hearing about the window (a destroyed one: the error is caught)
        window.change_attributes(event_mask=0, onerror=xerror.CatchError())
        dpy.flush()


def confirm_delivered(dpy: xdisplay.Display, timeout: float = PING_TIMEOUT_S) -> bool | None:
    """Input delivered, not just sent: ``XSync`` (the X server has processed every event sent
    so far), then a ``_NET_WM_PING`` round trip with the active window, whose app answers only
    after handling every earlier event. True once answered, False if it did not answer within
    ``timeout`` (a busy app), None when there is no active window or it lacks the protocol. A
    window that the input hid or closed is not waited for: the one active then is asked."""
    dpy.sync()
    window = active_window(dpy)
    if not window:
        return None
    deadline = time.monotonic() + timeout
    answered = ping_window(dpy, window, timeout)
    if answered is None:  # hidden or gone (a dialog the input closed): ask the one active now
        now = active_window(dpy)
        if now and now != window:
            window, answered = now, ping_window(dpy, now, max(0.0, deadline - time.monotonic()))
    if answered is False:
        logger.warning("window 0x%x did not confirm input within %g s", window, timeout)
    return answered
