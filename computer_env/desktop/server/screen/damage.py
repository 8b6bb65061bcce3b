"""When the screen stopped changing, from the X server's own DAMAGE reports.

A watcher thread holds one X connection with a damage object on the root window (without a
compositor every drawing on the screen damages the root), in ``DamageReportBoundingBox`` mode:
the server sends a ``DamageNotify`` whenever the bounding box of the damage grows; the watcher
records the time and clears the region (``DamageSubtract``), which re-arms the report. So the
time of the last drawing is known to within one round trip, with no screenshot at all.
Drawings that together cover a box of at most ``TINY_AREA`` pixels within ``TINY_WINDOW_S``
(a blinking caret) do not count: an editor's caret blinks forever on a screen that is
otherwise still. Text is drawn glyph by glyph, each glyph as small as a caret, but its glyphs
come within milliseconds of each other and their box grows past ``TINY_AREA``.

:meth:`DamageWatcher.settle` waits until the screen has been still for ``quiet_s`` since its
last drawing and ``grace_s`` has passed since the last input (an app that has handled an event,
which the delivery confirmation proves, draws its answer within a frame or two); a screen that
keeps drawing is waited for at most ``cap_s``. A screen that draws in bursts (a progress bar,
a terminal printing every 0.1 s) must stay still for twice its recent longest pause between
drawings, up to ``max_quiet_s``, so a pause between two bursts is not taken for the end.

A still screen does not prove the app is done: LibreOffice works ~0.5 s on a ctrl+s before it
maps its "keep current format?" dialog, and hands some keys to its main loop to handle later,
drawing nothing meanwhile. So the wait also asks for the evidence of the app itself: the
process tree behind the active window must have stayed under a small share of one core for
``cpu_quiet_s`` (see :mod:`.appcpu`; only a short probe when nothing happened lately: no input,
drawing or new window within that window before the wait), and no new top-level window may have
been mapped within ``map_quiet_s`` (the watcher also sees the root's ``MapNotify``).
"""

from __future__ import annotations

import logging
import select
import threading
import time
from collections import deque
from dataclasses import dataclass

from computer_env.desktop.server.screen import appcpu

logger = logging.getLogger(__name__)

TINY_AREA = 400
"""Damage boxes of at most this many pixels are a caret blinking, not the screen changing."""
TINY_WINDOW_S = 0.2
"""Small drawings this close together add up (text drawn glyph by glyph); a caret's blinks
are further apart."""
PROBE_S = 0.02
"""The CPU window when nothing happened lately (a still screen costs about this much)."""


def _union(
    a: tuple[int, int, int, int] | None, b: tuple[int, int, int, int]
) -> tuple[int, int, int, int]:
    if a is None:
        return b
    return min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3])


class DamageUnavailable(Exception):
    """No X display or no DAMAGE extension: the caller falls back to comparing screenshots."""


@dataclass(frozen=True)
class Settled:
    """The outcome of one :meth:`DamageWatcher.settle`."""

    waited_s: float
    still_s: float  # how long the screen had been still when the wait ended
    capped: bool  # True: the screen was still changing (or the app working) at ``cap_s``
    events: int  # damage reports during the wait
    app_busy: bool = False  # the active window's app was seen working during the wait
    maps: int = 0  # top-level windows mapped during the wait
    quiet_s: float = 0.0  # the stillness the wait asked for at its end (longer for bursts)
    last_wait: str = ""  # what the wait waited for last: drawing, bursts, input, window, app


class DamageWatcher:
    """The time of the screen's last drawing, kept current by one background thread."""

    def __init__(self, display: str | None) -> None:
        from Xlib import X
        from Xlib import display as xdisplay
        from Xlib import error as xerror
        from Xlib.ext import damage

        try:
            self._dpy = xdisplay.Display(display)
        except (xerror.DisplayError, xerror.ConnectionClosedError) as exc:
            raise DamageUnavailable(f"cannot open the X display: {exc}") from None
        if not self._dpy.has_extension("DAMAGE"):
            self._dpy.close()
            raise DamageUnavailable("the X server has no DAMAGE extension")
        self._dpy.damage_query_version()
        info = self._dpy.query_extension("DAMAGE")
        self._notify = info.first_event + damage.DamageNotifyCode
        root = self._dpy.screen().root
        self._damage = root.damage_create(damage.DamageReportBoundingBox)
        root.change_attributes(event_mask=X.SubstructureNotifyMask)  # windows being mapped
        self._map_notify = X.MapNotify
        self._atoms = (
            self._dpy.intern_atom("_NET_ACTIVE_WINDOW"),
            self._dpy.intern_atom("_NET_WM_PID"),
        )
        self._watch_cpu = appcpu.available()
        self._dpy.sync()
        self._lock = threading.Lock()  # the X connection and the fields below
        self._changed = threading.Condition(self._lock)
        self.last_damage = 0.0  # monotonic time of the last report; 0: none yet
        self.last_input = 0.0  # monotonic time the last input was confirmed handled
        self.reports = 0
        self.last_map = 0.0  # monotonic time a top-level window was last mapped
        self.maps = 0
        self._recent: deque[float] = deque(maxlen=32)  # times of the latest reports
        self._small: tuple[int, int, int, int] | None = None  # box of the small drawings
        self._small_since = 0.0
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="damage", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        """Take every queued event (lock held); a damage report re-arms by clearing the region."""
        got = significant = False
        while self._dpy.pending_events():
            event = self._dpy.next_event()
            if event.type == self._notify:
                got = True
                significant |= self._counts(event.area)
            elif event.type == self._map_notify and not event.override:
                self.last_map = time.monotonic()  # a new window (menus and tooltips aside)
                self.maps += 1
                self._changed.notify_all()
        if significant:
            self.last_damage = time.monotonic()
            self._recent.append(self.last_damage)
            self.reports += 1
            self._changed.notify_all()
        if got:
            self._dpy.damage_subtract(self._damage, 0, 0)
            self._dpy.flush()

    def _counts(self, area: object) -> bool:
        """Does this drawing change the screen (more than a caret blinking)? See the module."""
        x, y = int(area.x), int(area.y)  # type: ignore[attr-defined]
        box = (x, y, x + int(area.width), y + int(area.height))  # type: ignore[attr-defined]
        now = time.monotonic()
        if self._small is None or now - self._small_since > TINY_WINDOW_S:
            self._small, self._small_since = None, now
        self._small = _union(self._small, box)  # kept: the text's later glyphs count too
        return (self._small[2] - self._small[0]) * (self._small[3] - self._small[1]) > TINY_AREA

    def _run(self) -> None:
        fd = self._dpy.fileno()
        while not self._stop:
            try:
                select.select([fd], [], [], 0.5)
                with self._lock:
                    if self._stop:
                        return
                    self._drain()
            except Exception:  # noqa: BLE001 - the display went away: settle falls back
                logger.debug("damage watcher stopped", exc_info=True)
                self._stop = True
                return

    @property
    def alive(self) -> bool:
        return not self._stop and self._thread.is_alive()

    def input_done(self) -> None:
        """Note that input was just delivered (the grace period counts from now)."""
        with self._lock:
            self.last_input = time.monotonic()

    def _quiet_needed(self, quiet_s: float, max_quiet_s: float) -> float:
        """``quiet_s``, or twice the longest pause between the reports of the last
        ``2 * max_quiet_s`` seconds since the last input when the screen drew in bursts (at
        most ``max_quiet_s``): drawings before the input say nothing about its answer."""
        since = max(self.last_damage - 2 * max_quiet_s, self.last_input)
        times = [t for t in self._recent if t >= since]
        if len(times) < 3:
            return quiet_s
        pause = max(b - a for a, b in zip(times, times[1:]))
        return min(max_quiet_s, max(quiet_s, 2 * pause))

    def _last_wait(
        self, need: float, quiet_s: float, grace_s: float, map_quiet_s: float, busy: bool
    ) -> str:
        """Which condition ended the wait last (lock held): a diagnostic for the answer."""
        ends = {
            "bursts" if need > quiet_s else "drawing": self.last_damage + need,
            "input": self.last_input + grace_s,
            "window": self.last_map + map_quiet_s,
        }
        last = max(ends, key=lambda k: ends[k])
        return "app" if busy and ends[last] < time.monotonic() - PROBE_S else last

    def _active_pid(self) -> int:
        """``_NET_WM_PID`` of the active window (lock held); 0 when unknown."""
        from Xlib import Xatom
        from Xlib import error as xerror

        try:
            prop = self._dpy.screen().root.get_full_property(self._atoms[0], Xatom.WINDOW)
            if prop is None or not len(prop.value) or not int(prop.value[0]):
                return 0
            window = self._dpy.create_resource_object("window", int(prop.value[0]))
            pid = window.get_full_property(self._atoms[1], Xatom.CARDINAL)
        except xerror.XError:
            return 0
        return int(pid.value[0]) if pid is not None and len(pid.value) else 0

    def settle(
        self,
        *,
        quiet_s: float,
        cap_s: float,
        grace_s: float,
        max_quiet_s: float | None = None,
        cpu_quiet_s: float = 0.0,
        map_quiet_s: float = 0.0,
    ) -> Settled:
        """Wait until no drawing for ``quiet_s`` (longer for a screen drawing in bursts, up to
        ``max_quiet_s``), ``grace_s`` after the last input, ``map_quiet_s`` after a window was
        mapped, and the active app idle for ``cpu_quiet_s`` (0: not asked), at most ``cap_s``;
        see the module docstring."""
        longest = max(quiet_s, max_quiet_s if max_quiet_s is not None else quiet_s)
        start = time.monotonic()
        activity = appcpu.AppActivity()
        watch = cpu_quiet_s > 0 and self._watch_cpu
        with self._lock:
            # every drawing the server did before this round trip is reported before its reply
            self._dpy.sync()
            self._drain()
            before, maps = self.reports, self.maps
            lately = max(self.last_input, self.last_damage, self.last_map)
            window = (
                cpu_quiet_s
                if start - lately < max(cpu_quiet_s, longest)
                else min(cpu_quiet_s, PROBE_S)
            )
            idle = not watch
            while True:
                now = time.monotonic()
                if watch and now >= activity.next_sample_at():
                    activity.add(self._active_pid())
                    now = time.monotonic()
                quiet = self._quiet_needed(quiet_s, longest)
                ready_at = max(
                    self.last_damage + quiet, self.last_input + grace_s, self.last_map + map_quiet_s
                )
                if now >= ready_at:
                    idle = not watch or activity.idle_for(window) is True
                    if idle:
                        break
                if now - start >= cap_s or self._stop:
                    break
                wake = min(
                    ready_at if now < ready_at else start + cap_s,
                    activity.next_sample_at() if watch else start + cap_s,
                    start + cap_s,
                )
                self._changed.wait(max(0.0, wake - now))
                if time.monotonic() >= wake:
                    self._dpy.sync()  # nothing may be in flight when the quiet is declared
                    self._drain()
            now = time.monotonic()
            screen_busy = now < max(
                self.last_damage + self._quiet_needed(quiet_s, longest), self.last_map + map_quiet_s
            )
            capped = now - start >= cap_s and (screen_busy or not idle)
            need = self._quiet_needed(quiet_s, longest)
            return Settled(
                waited_s=now - start,
                still_s=now - self.last_damage,
                capped=capped,
                events=self.reports - before,
                app_busy=activity.busy_seen,
                maps=self.maps - maps,
                quiet_s=need,
                last_wait=self._last_wait(need, quiet_s, grace_s, map_quiet_s, activity.busy_seen),
            )

    def close(self) -> None:
        with self._lock:
            self._stop = True
            try:
                self._dpy.close()
            except Exception:  # noqa: BLE001
                logger.debug("closing the damage connection failed", exc_info=True)
