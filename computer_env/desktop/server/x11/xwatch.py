"""The server's X access cannot be taken: a grab of the X server is found and released.

Any client of an X server may grab it (``XGrabServer``): until it lets go, the server reads
no other client's requests, so the guest server's screenshots, input and settle calls would
block and the case end unscored. The X SECURITY extension does not help: it lets an untrusted
client grab the server too (``SecurityServerMask`` includes ``DixGrabAccess``; measured on
Debian 12's Xvfb 21.1). So the server watches:

- a probe thread does one round trip (``GetInputFocus``) on its own connection every
  :data:`INTERVAL_S`;
- when one is unanswered for :data:`THRESHOLD_S`, the monitor looks: an X server that is
  stopped (``T``: the host's SIGSTOP) or gone is the environment's (nothing recorded;
  :meth:`XWatch.x_stopped` says so, and a screenshot waiting on it answers 503 in a second
  rather than at the harness's time-outs); one that sleeps while the probe's request lies
  unread in its socket (:mod:`.xclients`) is ignoring us, i.e. grabbed;
- then the grabbing client is found by elimination: the desktop's X clients that are not
  waiting on the X server (the grabber is the one being served), youngest first, are killed
  (SIGKILL, every process holding that connection) until the probe is answered. The one whose
  death let the X server go is recorded as the grabber (:class:`XGrab`, ``GET /x_grabs``).

Only the desktop's side is a candidate (the nest's processes; never this server, whose own
connections are the screenshot grabber's, the damage watcher's and the probe's).

The watch also keeps a digest of the keyboard map (:meth:`XWatch.keymap`, sent with every
screenshot), recomputed when the probe sees a ``MappingNotify``: the harness's own typing binds
scratch keys only for a moment (the digest is back when it is done), a changed keymap stays.
"""

from __future__ import annotations

import hashlib
import logging
import os
import signal
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from computer_env.desktop.server.x11.xclients import (
    XClient,
    command_line,
    process_state,
    start_time,
    x_clients,
)

logger = logging.getLogger(__name__)

INTERVAL_S = 0.25  # between two probes
THRESHOLD_S = 2.0  # a probe unanswered this long is looked into
RELEASE_WAIT_S = 1.0  # after a kill, how long the probe may take to be answered
PROBE_START_S = 10.0  # how long the server's start waits for the probe's first answer


@dataclass(frozen=True)
class XGrab:
    """One grab of the X server: when, for how long, by whom, and whether it was released."""

    at: float  # wall-clock time it was found
    held_s: float  # how long the probe had waited when it was released (or given up)
    released: bool
    grabber: str  # ``pid: command line`` of the client whose death released it
    detail: str


def find_x_server(parent: int | None = None, proc: str = "/proc") -> int | None:
    """The X server's pid: an ``Xvfb`` child of ``parent`` (this process) when there is one,
    else the oldest ``Xvfb`` in sight."""
    parent = os.getpid() if parent is None else parent
    found: list[tuple[int, int, int]] = []
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"{proc}/{entry}/stat").read_text(errors="replace")
        except OSError:
            continue
        name = stat[stat.find("(") + 1 : stat.rfind(")")]
        if name not in ("Xvfb", "Xorg"):
            continue
        fields = stat.rsplit(")", 1)[1].split()
        found.append((int(fields[1]) != parent, int(fields[19]), int(entry)))
    return min(found)[2] if found else None


def _pid_namespace(pid: int | str, proc: str = "/proc") -> str:
    try:
        return os.readlink(f"{proc}/{pid}/ns/pid")
    except OSError:
        return "?"


class XWatch:
    """The probe and the monitor of one display (see the module docstring); ``close()`` stops
    both."""

    def __init__(
        self,
        display: str,
        x_pid: int,
        *,
        nested: bool,
        threshold_s: float = THRESHOLD_S,
        proc: str = "/proc",
    ) -> None:
        self.display, self.x_pid, self.nested = display, x_pid, nested
        self.threshold_s, self.proc = threshold_s, proc
        self.grabs: list[XGrab] = []
        self._keymap: str | None = None
        self._keymap_stale = True
        self._keymap_dpy: Any = None
        self._keymap_lock = threading.Lock()
        self._own_ns = _pid_namespace("self", proc)
        self._sent: float | None = None
        self._looked_at: float | None = None
        self._answered = threading.Condition()
        self._probing = threading.Event()
        self._stop = threading.Event()
        self._dpy: Any = None
        self._threads = [
            threading.Thread(target=self._probe, name="x-probe", daemon=True),
            threading.Thread(target=self._monitor, name="x-watch", daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def wait_probing(self, timeout: float) -> bool:
        """Wait until the probe's first round trip was answered (its connection is set up): a
        grab taken before that would hold the probe's connection set-up itself, where it is not
        seen. True once probing; False after ``timeout`` seconds or once the probe has stopped
        (its display gone)."""
        deadline = time.monotonic() + timeout
        while not self._probing.wait(0.05):
            if not self._threads[0].is_alive() or time.monotonic() >= deadline:
                return self._probing.is_set()
        return True

    def released(self) -> int:
        """How many grabs were released by killing a client of the desktop (the desktop's side
        held them; one that no such kill released is not counted)."""
        return sum(g.released for g in self.grabs)

    def x_stopped(self) -> str | None:
        """Why the X server cannot answer now, when it is stopped (``T``: a SIGSTOP from
        outside the desktop; nothing inside the nest can signal it) or gone; None while it
        runs. A request waiting on it would only end at the harness's time-outs."""
        state = process_state(self.x_pid, self.proc)
        if state in ("T", "t"):
            return f"the desktop's X server (pid {self.x_pid}) is stopped (state {state})"
        if state in ("X", "Z"):
            return f"the desktop's X server (pid {self.x_pid}) is gone"
        return None

    def snapshot(self) -> dict[str, Any]:
        """What ``GET /x_grabs`` answers."""
        return {
            "grabs": [asdict(g) for g in self.grabs],
            "watching": self._threads[0].is_alive(),
            "x_server": self.x_pid,
        }

    def _drain(self) -> None:
        """Read the probe's pending events: a keyboard map change marks the map's digest stale."""
        from Xlib import X

        while self._dpy.pending_events():
            event = self._dpy.next_event()
            if event.type == X.MappingNotify and event.request in (
                X.MappingKeyboard,
                X.MappingModifier,
            ):
                self._keymap_stale = True

    def keymap(self) -> str | None:
        """A digest of the keyboard map (keysyms and modifiers), recomputed after a change; None
        when the display cannot be read. Read on a connection of its own."""
        from Xlib import X
        from Xlib import display as xdisplay

        with self._keymap_lock:
            try:
                if self._keymap_dpy is None:
                    self._keymap_dpy = xdisplay.Display(self.display)
                    self._keymap_stale = True
                dpy = self._keymap_dpy
                while dpy.pending_events():  # a change since the last look (no probe lag)
                    if dpy.next_event().type == X.MappingNotify:
                        self._keymap_stale = True
                if self._keymap_stale or self._keymap is None:
                    self._keymap_stale = False
                    info = dpy.display.info
                    keys = dpy.get_keyboard_mapping(
                        info.min_keycode, info.max_keycode - info.min_keycode + 1
                    )
                    mods = dpy.get_modifier_mapping()
                    self._keymap = hashlib.sha1(repr((keys, mods)).encode()).hexdigest()[:12]
            except Exception as exc:  # noqa: BLE001 - a display gone: no digest
                logger.warning("cannot read the keyboard map: %s", exc)
                return None
            return self._keymap

    def _probe(self) -> None:
        from Xlib import display as xdisplay

        try:
            self._dpy = xdisplay.Display(self.display)
            while not self._stop.is_set():
                self._sent = time.monotonic()
                self._dpy.get_input_focus()
                with self._answered:
                    self._sent = None
                    self._answered.notify_all()
                self._probing.set()
                self._drain()
                self._stop.wait(INTERVAL_S)
        except Exception as exc:  # noqa: BLE001 - the display went away: nothing to watch
            if not self._stop.is_set():
                logger.warning("the X probe stopped: %s", exc)
        finally:
            self._sent = None

    def _monitor(self) -> None:
        while not self._stop.wait(INTERVAL_S):
            sent = self._sent
            if sent is None or sent == self._looked_at:
                continue
            if time.monotonic() - sent < self.threshold_s:
                continue
            try:
                if self._look(sent):
                    self._looked_at = sent
            except Exception:  # noqa: BLE001 - the watch must not take the server down
                logger.exception("looking into an unanswered X probe failed")
                self._looked_at = sent

    def _grabbed(self) -> list[XClient] | None:
        """The X clients when the X server sleeps with the probe's request unread (grabbed);
        None when it is stopped, gone, busy, or has read the request."""
        for _ in range(2):  # twice, 50 ms apart: a server that just woke up is not ignoring us
            if process_state(self.x_pid, self.proc) != "S":
                return None
            clients = x_clients(self.x_pid, self.proc)
            mine = [c for c in clients if os.getpid() in c.pids]
            if not mine or not any(c.waiting for c in mine):
                return None
            time.sleep(0.05)
        return clients

    def _candidates(self, clients: list[XClient]) -> list[XClient]:
        """The desktop's clients that may hold the grab: not waiting first, youngest first."""

        def ours(pid: int) -> bool:
            if pid == os.getpid():
                return True
            return self.nested and _pid_namespace(pid, self.proc) == self._own_ns

        found = [c for c in clients if c.pids and not any(ours(p) for p in c.pids)]
        return sorted(
            found, key=lambda c: (c.waiting, -max(start_time(p, self.proc) for p in c.pids))
        )

    def _look(self, sent: float) -> bool:
        """Look into the probe sent at ``sent``; True once decided (released or not)."""
        if self.x_stopped() is not None:
            return False  # stopped or gone: the environment's, not a grab (looked at again)
        clients = self._grabbed()
        if clients is None:
            return False
        candidates = self._candidates(clients)
        logger.warning(
            "the X server ignores this server for %.1f s: grabbed; %d candidate client(s)",
            time.monotonic() - sent,
            len(candidates),
        )
        for client in candidates:
            who = client.describe(self.proc)
            for pid in client.pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            with self._answered:
                self._answered.wait_for(lambda: self._sent != sent, RELEASE_WAIT_S)
            if self._sent != sent:
                self._record(
                    XGrab(
                        time.time(),
                        round(time.monotonic() - sent, 2),
                        True,
                        who,
                        "killed; the X server answered again",
                    )
                )
                return True
        self._record(
            XGrab(
                time.time(),
                round(time.monotonic() - sent, 2),
                False,
                "",
                f"the X server ignores this server; killing {len(candidates)} "
                "client(s) of the desktop did not release it",
            )
        )
        return True

    def _record(self, grab: XGrab) -> None:
        logger.warning("X server grab by %s: %s", grab.grabber or "?", grab.detail)
        self.grabs.append(grab)

    def close(self) -> None:
        """Stop the probe and the monitor (the probe's connection is closed)."""
        self._stop.set()
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout=1.0)
        for dpy in (self._dpy, self._keymap_dpy):
            if dpy is None:
                continue
            try:
                dpy.close()
            except Exception:  # noqa: BLE001 - a connection the X server already dropped
                pass


def start_watch(display: str | None, *, nested: bool) -> XWatch | None:
    """An :class:`XWatch` of ``display``'s X server, or None when it cannot be found."""
    if not display:
        return None
    x_pid = find_x_server()
    if x_pid is None:
        logger.warning("no X server process in sight: X grabs are not watched")
        return None
    watch = XWatch(display, x_pid, nested=nested)
    if not watch.wait_probing(PROBE_START_S):  # the server serves only once watching
        logger.warning("the X probe had no answer in %.0f s: X grabs may go unseen", PROBE_START_S)
    return watch


__all__ = [
    "INTERVAL_S",
    "THRESHOLD_S",
    "XGrab",
    "XWatch",
    "command_line",
    "find_x_server",
    "start_watch",
]
