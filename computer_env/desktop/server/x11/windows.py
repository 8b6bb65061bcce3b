"""X11 queries and window management: pointer, window sizes (python-xlib), wmctrl actions."""

from __future__ import annotations

import logging
import shutil
import subprocess
import threading
from dataclasses import dataclass

logger = logging.getLogger(__name__)


class XQueries:
    """A shared python-xlib connection for small queries (pointer, window geometry)."""

    def __init__(self, display: str | None) -> None:
        self._name = display
        self._lock = threading.Lock()
        self._display: object | None = None

    def _d(self) -> object:
        if self._display is None:
            from Xlib import display

            self._display = display.Display(self._name)
        return self._display

    def pointer(self) -> tuple[int, int]:
        """The cursor position on the screen."""
        with self._lock:
            d = self._d()
            reply = d.screen().root.query_pointer()  # type: ignore[attr-defined]
            return int(reply.root_x), int(reply.root_y)

    def window_size(self, class_name: str) -> tuple[int, int] | None:
        """(width, height) of the first managed window whose WM_CLASS matches, case-insensitive."""
        from Xlib import X
        from Xlib.error import XError

        wanted = class_name.lower()
        with self._lock:
            d = self._d()
            root = d.screen().root  # type: ignore[attr-defined]
            prop = root.get_full_property(d.intern_atom("_NET_CLIENT_LIST"), X.AnyPropertyType)  # type: ignore[attr-defined]
            for wid in prop.value if prop else []:
                try:
                    window = d.create_resource_object("window", wid)  # type: ignore[attr-defined]
                    wm_class = window.get_wm_class()
                    if wm_class and wanted in (name.lower() for name in wm_class):
                        geom = window.get_geometry()
                        return int(geom.width), int(geom.height)
                except XError:
                    continue
        return None

    def close(self) -> None:
        with self._lock:
            if self._display is not None:
                self._display.close()  # type: ignore[attr-defined]
                self._display = None


@dataclass(frozen=True)
class Window:
    """One line of ``wmctrl -lx``."""

    wid: str
    wm_class: str
    title: str


def list_windows(timeout: float = 10.0) -> list[Window]:
    """The managed top-level windows (empty when no window manager answers)."""
    if shutil.which("wmctrl") is None:
        return []
    result = subprocess.run(
        ["wmctrl", "-lx"],
        capture_output=True,
        text=True,
        errors="replace",
        timeout=timeout,
        check=False,
    )
    windows = []
    for line in result.stdout.splitlines():
        parts = line.split(None, 4)
        if len(parts) >= 4:
            title = parts[4] if len(parts) == 5 else ""
            windows.append(Window(parts[0], parts[2], title))
    return windows


def wmctrl_action(action: str, window_name: str, *, strict: bool, by_class: bool) -> int:
    """OSWorld's ``wmctrl -[x][F]<a|c> NAME``; returns wmctrl's exit status."""
    flags = f"-{'x' if by_class else ''}{'F' if strict else ''}{action}"
    result = subprocess.run(
        ["wmctrl", flags, window_name],
        capture_output=True,
        text=True,
        errors="replace",
        timeout=10,
        check=False,
    )
    return result.returncode


def activate_window_id(wid: str) -> None:
    subprocess.run(["wmctrl", "-i", "-a", wid], capture_output=True, timeout=10, check=False)
