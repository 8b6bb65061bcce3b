"""Typing any Unicode text with ``xdotool type`` (``pyautogui.write`` drops non-ASCII).

For a character whose keysym is not in the keymap, ``xdotool type`` binds it to a scratch
keycode, presses the key and reverts the binding at once. Toolkits (GDK, Xlib) fetch the keymap
lazily, after the MappingNotify, so an app that handles the KeyPress after the revert reads the
wrong keymap: the character is lost or wrong. xdotool also binds one keysym per keycode, which
the X server expands to a lower/upper pair, so 'Ç' is typed as 'ç'.

So before typing, every character of the text is given a stable place in the keymap: two per
unused keycode (level 1 and Shift level 2), reused across requests, recycled least recently used
first, and only once the app has handled their last key press: it answered a _NET_WM_PING
(GTK, Qt, Chromium; see :mod:`.delivery`) or, for apps without that protocol (xterm),
``QUARANTINE_S`` has passed.
``xdotool`` then finds every keysym and never remaps. Text with more distinct characters than there are places is typed in
segments. Newlines are sent as Return key presses: ``xdotool type`` turns ``\\n`` into a Linefeed
keysym, which xterm accepts but GTK dialogs and LibreOffice ignore. The Return is sent through
XTEST on this module's own connection (an ``xdotool`` process per line cost ~20 ms on a quiet
host); xdotool has closed its display, which syncs, before the Return is sent, so the keys stay
in order. With a modifier held down (an agent's ``keyDown('shift')``) ``xdotool key
--clearmodifiers Return`` types it, as before.
"""

from __future__ import annotations

import logging
import subprocess
import threading
import time
from collections.abc import Iterable

from Xlib import XK, X, Xatom
from Xlib import display as xdisplay
from Xlib import error as xerror
from Xlib.ext import xtest

from computer_env.desktop.keysyms import keysym_for, mappable
from computer_env.desktop.server.input.delivery import (
    PING_TIMEOUT_S,
    active_window,
    confirm_delivered,
    ping_window,
)

logger = logging.getLogger(__name__)

QUARANTINE_S = 1.0  # a place is rebound only this long after its last key press
RECYCLE_DELAY_MS = 12
"""Keystroke delay for text that needs more places than the keymap has: an app without
_NET_WM_PING (xterm) must keep up with the presses before their places are rebound. Text that
fits (all ASCII, and most other text) is typed without any delay: the X server queues the
keystrokes in order and the delivery confirmation waits until the app has handled them."""
RESERVE_KEYCODES = 1  # unused keycodes left alone (xdotool's scratch key for `xdotool key`)
_OWNED_ATOM = "_COMPUTER_ENV_TYPING_KEYCODES"  # root property: keycodes this module manages

_LOCK = threading.Lock()
# (display, keycode, level) -> (monotonic time of the last key press, active window then)
_LAST_USE: dict[tuple[str, int, int], tuple[float, int]] = {}


class TypingError(Exception):
    """xdotool failed or is missing, or the keymap could not be prepared."""


def _alphabetic(low: int, high: int) -> bool:
    """Whether the server would make ``[low, high]`` a Caps-Lock-sensitive case pair."""
    a, b = chr(low & 0xFFFFFF), chr(high & 0xFFFFFF)
    return a != b and a.lower() == a and a.upper() == b


class KeymapSlots:
    """Places (keycode, level) in unused keycodes of the X keymap for the characters typed."""

    def __init__(self, dpy: xdisplay.Display, name: str) -> None:
        self.dpy, self.name = dpy, name
        self.root = dpy.screen().root
        self.atom = dpy.intern_atom(_OWNED_ATOM)
        low, high = dpy.display.info.min_keycode, dpy.display.info.max_keycode
        full = dpy.get_keyboard_mapping(low, high - low + 1)
        rows = {low + i: [int(k) for k in row] for i, row in enumerate(full)}
        prop = self.root.get_full_property(self.atom, Xatom.CARDINAL)
        claimed = {int(k) for k in prop.value} if prop is not None else set()
        # keycodes we manage hold nothing beyond the two group-1 levels (the core view repeats them)
        self.owned = {
            kc: rows[kc][:2]
            for kc in sorted(claimed)
            if kc in rows and all(k in (0, *rows[kc][:2]) for k in rows[kc][2:])
        }
        free = [kc for kc, row in rows.items() if kc not in self.owned and not any(row)]
        self.spare = free[RESERVE_KEYCODES:]
        self.base = {k for kc, row in rows.items() if kc not in self.owned for k in row[:2] if k}
        self.window = active_window(dpy)

    @property
    def capacity(self) -> int:
        return 2 * (len(self.owned) + len(self.spare))

    def holder(self, keysym: int) -> tuple[int, int] | None:
        """The owned place that types ``keysym``, if any (level 2 duplicating level 1 is empty)."""
        for kc, (k0, k1) in self.owned.items():
            if k0 == keysym:
                return kc, 0
            if k1 == keysym and k1 != k0:
                return kc, 1
        return None

    def ensure(self, keysyms: Iterable[int]) -> None:
        """Bind every keysym missing from the keymap to a place; at most ``capacity`` of them."""
        wanted = [k for k in dict.fromkeys(keysyms) if k not in self.base]
        pinned = {p for k in wanted if (p := self.holder(k)) is not None}
        missing = [k for k in wanted if self.holder(k) is None]
        touched: set[int] = set()
        wait_until, windows = 0.0, set[int]()
        for keysym in missing:
            kc, level, recycled = self._pick(keysym, pinned)
            if recycled:
                used, window = _LAST_USE.get((self.name, kc, level), (0.0, 0))
                if used + QUARANTINE_S > time.monotonic():
                    wait_until, windows = max(wait_until, used + QUARANTINE_S), windows | {window}
            row = self.owned.get(kc)
            if row is None or level == 0:  # level 2 stays bound unless it only repeated level 1
                keep = row[1] if row is not None and row[1] not in (0, row[0]) else keysym
                self.owned[kc] = [keysym, keep]
            else:
                row[1] = keysym
            pinned.add((kc, level))
            touched.add(kc)
        if not touched:
            return
        if wait_until:  # a lagging app may still be translating the old binding's key presses
            self._settle(wait_until, windows)
        self._write(touched)

    def _settle(self, wait_until: float, windows: set[int]) -> None:
        """Wait until the app has handled the key presses of places about to be rebound: its
        answer to a ping when it speaks _NET_WM_PING, else ``QUARANTINE_S`` after the presses."""
        if windows == {self.window} and self.window:
            answered = ping_window(self.dpy, self.window, PING_TIMEOUT_S)
            if answered:
                return
            if answered is False:
                logger.warning(
                    "window 0x%x did not answer a ping in %g s", self.window, PING_TIMEOUT_S
                )
        left = wait_until - time.monotonic()
        if left > 0:
            logger.debug("waiting %.2f s before rebinding recently used keys", left)
            time.sleep(left)

    def _pick(self, keysym: int, pinned: set[tuple[int, int]]) -> tuple[int, int, bool]:
        """A place for ``keysym``: a free level 2, a spare keycode, else the least recently used."""
        for kc, (k0, k1) in self.owned.items():
            if (kc, 1) not in pinned and (k1 in (0, k0)) and not _alphabetic(k0, keysym):
                return kc, 1, False
        if self.spare:
            return self.spare.pop(0), 0, False
        candidates = [
            (kc, level)
            for kc, (k0, k1) in self.owned.items()
            for level in (0, 1)
            if (kc, level) not in pinned
            and not (
                _alphabetic(keysym, k1 if k1 not in (0, k0) else keysym)
                if level == 0
                else k1 in (0, k0) or _alphabetic(k0, keysym)
            )
        ]
        if not candidates:
            raise TypingError("no free place in the keymap for a character")
        kc, level = min(candidates, key=lambda p: _LAST_USE.get((self.name, *p), (0.0, 0))[0])
        return kc, level, True

    def _write(self, keycodes: set[int]) -> None:
        catch = xerror.CatchError()
        for kc in sorted(keycodes):
            self.dpy.change_keyboard_mapping(kc, [self.owned[kc]], onerror=catch)
        self.root.change_property(
            self.atom, Xatom.CARDINAL, 32, sorted(self.owned), X.PropModeReplace
        )
        self.dpy.sync()
        if catch.get_error() is not None:
            raise TypingError(f"the X server refused a keymap change: {catch.get_error()}")
        for kc in keycodes:
            got = [int(k) for k in self.dpy.get_keyboard_mapping(kc, 1)[0][:2]]
            if got != self.owned[kc]:
                raise TypingError(f"keycode {kc} maps to {got}, not {self.owned[kc]}")

    def touch(self, keysyms: Iterable[int], when: float) -> None:
        """Record that the places of ``keysyms`` were pressed until ``when``."""
        for keysym in keysyms:
            place = self.holder(keysym)
            if place is not None:
                _LAST_USE[(self.name, *place)] = (when, self.window)


def _segments(line: str, slots: KeymapSlots | None) -> list[tuple[str, set[int]]]:
    """Split ``line`` so that each piece needs at most ``slots.capacity`` bound keysyms."""
    if slots is None:
        return [(line, set())]
    pieces: list[tuple[str, set[int]]] = []
    chars: list[str] = []
    need: set[int] = set()
    for char in line:
        keysym = keysym_for(char) if mappable(char) else 0
        if keysym and keysym not in slots.base and keysym not in need:
            if len(need) == slots.capacity:
                pieces.append(("".join(chars), need))
                chars, need = [], set()
            need.add(keysym)
        chars.append(char)
    pieces.append(("".join(chars), need))
    return pieces


def _xdotool(args: list[str], stdin: bytes | None, deadline: float) -> None:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TypingError("typing did not finish in time")
    try:
        result = subprocess.run(
            ["xdotool", *args], input=stdin, capture_output=True, timeout=left, check=False
        )
    except FileNotFoundError:
        raise TypingError("xdotool is not installed") from None
    except subprocess.TimeoutExpired:
        raise TypingError("typing did not finish in time") from None
    if result.returncode != 0:
        message = result.stderr.decode(errors="replace").strip()
        raise TypingError(f"xdotool failed ({result.returncode}): {message}")


def _modifier_held(dpy: xdisplay.Display) -> bool:
    """Is a modifier key (Shift, Control, Alt...) down right now?"""
    keys = dpy.query_keymap()
    return any(
        kc and keys[kc // 8] & (1 << (kc % 8))
        for codes in dpy.get_modifier_mapping()
        for kc in codes
    )


def _press_return(dpy: xdisplay.Display, deadline: float) -> None:
    """One Return key press: XTEST on ``dpy``, or ``xdotool`` while a modifier is held."""
    keycode = dpy.keysym_to_keycode(XK.XK_Return)
    if not keycode or _modifier_held(dpy):
        _xdotool(["key", "--clearmodifiers", "Return"], None, deadline)
        return
    xtest.fake_input(dpy, X.KeyPress, keycode)
    xtest.fake_input(dpy, X.KeyRelease, keycode)
    dpy.sync()


def _open_display() -> xdisplay.Display:
    try:
        return xdisplay.Display()
    except (xerror.DisplayError, xerror.ConnectionClosedError) as exc:
        raise TypingError(f"cannot open the X display: {exc}") from None


def type_text(text: str, *, delay_ms: int = 0, timeout: float | None = None) -> None:
    """Type ``text`` into the focused window; each newline is a Return press.

    Raises ``ValueError`` for text that is not valid Unicode (lone surrogates).
    """
    data = text.replace("\r\n", "\n")
    data.encode("utf-8")  # UnicodeEncodeError (a ValueError) before anything is typed
    if timeout is None:
        timeout = (
            30.0
            + len(text) * (max(delay_ms, RECYCLE_DELAY_MS) + 5) / 1000.0
            + QUARANTINE_S * (len(text) // 20)
        )
    deadline = time.monotonic() + timeout
    with _LOCK:
        dpy = _open_display()
        try:
            slots: KeymapSlots | None = KeymapSlots(dpy, dpy.get_display_name())
            if slots is not None and slots.capacity == 0:
                logger.warning("no unused keycodes: non-ASCII characters may be lost")
                slots = None
            lines = data.split("\n")
            if (
                slots is not None
                and len({keysym_for(c) for c in data if mappable(c)} - slots.base) > slots.capacity
            ):
                delay_ms = max(delay_ms, RECYCLE_DELAY_MS)
            for i, line in enumerate(lines):
                pieces = _segments(line, slots) if line else []
                for piece, need in pieces:
                    if slots is not None:
                        slots.ensure(need)
                    try:
                        _xdotool(
                            ["type", "--clearmodifiers", "--delay", str(delay_ms), "--file", "-"],
                            piece.encode("utf-8"),
                            deadline,
                        )
                    finally:
                        if slots is not None:
                            slots.touch(need, time.monotonic())
                if i < len(lines) - 1:
                    _press_return(dpy, deadline)
            confirm_delivered(dpy, max(0.1, min(PING_TIMEOUT_S, deadline - time.monotonic())))
        except (xerror.XError, xerror.ConnectionClosedError) as exc:
            raise TypingError(f"X error while preparing the keymap: {exc}") from None
        finally:
            dpy.close()
