"""Ready means ready: before the first action, the task's app is up and accepting input.

A still screen is not enough (LibreOffice can sit blank, without toolbars, for seconds while it
loads a document, and a key press sent then is lost). :func:`wait_until_ready` waits until:

1. the window of the app the task's setup opened last is mapped, active and holds the keyboard
   focus, and its event loop answers a ``_NET_WM_PING`` (it has handled every earlier event);
2. for LibreOffice, its accessibility tree shows toolbars and the focus inside the document
   (Calc's sheet with its cell cursor, Writer's paragraph): the guest program ``ready_probe.py``, run in the desktop;
3. for Chrome, every visible page has loaded (``document.readyState`` complete), drawn a frame
   and, when it has visible content, painted it (first contentful paint), asked through Chrome's
   DevTools protocol from inside the desktop (the guest program ``ready_probe.py``); a page that keeps loading
   sub-resources is accepted once its content is on screen for ``loading_grace_s``;
4. the screen shows it: the window is not one flat colour (a window that is up but not drawn
   yet), and a page's viewport shows its content (not blank) or, without content, its
   background colour;
5. the screen has been quiet for a second (drawn).

Everything is asked through the OSWorld server API (``/execute`` and pyautogui code), so the same
check runs on the local desktop and on an OSWorld VM. When the app never gets there, the case is
an infrastructure failure (:class:`AppNotReady`, rerun then unscored), never a 0.
"""

from __future__ import annotations

import logging
import posixpath
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from computer_env.errors import SetupError
from computer_env.osworld.catalog.tasks import Task
from computer_env.osworld.prepare.readiness._page import (
    cdp_ports,
    page_problem,
    page_screen_problem,
)
from computer_env.osworld.prepare.readiness._probes import office_state, page_state, x_window_state
from computer_env.osworld.prepare.settle import is_blank, screen_image, wait_until_settled
from computer_env.osworld.prepare.setup import launched_program

logger = logging.getLogger(__name__)

_PROBES = ThreadPoolExecutor(2, thread_name_prefix="ready-probe")
"""Runs Chrome's page probe beside the window probe."""

_APPS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    # (kind, program names, WM_CLASS substrings)
    (
        "libreoffice",
        ("libreoffice", "soffice", "localc", "lowriter", "loimpress"),
        ("libreoffice", "soffice"),
    ),
    (
        "browser",
        ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"),
        ("chromium", "google-chrome", "chrome"),
    ),
    ("terminal", ("xterm", "gnome-terminal", "x-terminal-emulator"), ("xterm", "gnome-terminal")),
    (
        "editor",
        ("mousepad", "gedit", "gnome-text-editor", "code"),
        ("mousepad", "gedit", "gnome-text-editor", "code"),
    ),
    ("media", ("vlc", "cvlc"), ("vlc",)),
    ("image", ("gimp", "gimp-2.10"), ("gimp",)),
    ("mail", ("thunderbird",), ("thunderbird", "mail")),
)
_OFFICE_SUFFIXES = frozenset(
    {".xlsx", ".xls", ".ods", ".csv", ".docx", ".doc", ".odt", ".rtf", ".pptx", ".ppt", ".odp"}
)
_TEXT_SUFFIXES = frozenset({".txt", ".md", ".conf", ".py", ".sh", ".json", ".log", ".ini"})


class AppNotReady(SetupError):
    """The task's app did not become ready for input in time."""

    category = "setup"


@dataclass(frozen=True)
class AppExpectation:
    """What the first action needs: a window of ``kind`` (``classes``), titled with ``title``."""

    kind: str
    classes: tuple[str, ...] = ()
    title: str = ""
    cdp_ports: tuple[int, ...] = ()
    """A browser's DevTools ports the setup opened (none: probe 9222, and go on without it)."""


@dataclass
class ReadyReport:
    """How readiness went (for the case's timings and logs)."""

    expected: AppExpectation | None
    waited_s: float = 0.0
    probes: int = 0
    last: dict[str, Any] = field(default_factory=dict)


def _by_program(name: str) -> AppExpectation | None:
    for kind, programs, classes in _APPS:
        if name in programs:
            return AppExpectation(kind, classes)
    return None


def expected_app(task: Task) -> AppExpectation | None:
    """The app whose window should take the first action: the last GUI app the setup opened
    (``open`` of a document, or ``launch``/``execute`` of a known GUI program); None when the
    setup opens nothing known (only the screen settling is waited for then)."""
    found: AppExpectation | None = None
    for step in task.config:
        if step.type == "open":
            path = str(step.parameters.get("path", ""))
            name = posixpath.basename(path)
            suffix = posixpath.splitext(name)[1].lower()
            if suffix in _OFFICE_SUFFIXES:
                found = AppExpectation("libreoffice", _APPS[0][2], name)
            elif suffix in _TEXT_SUFFIXES:
                found = AppExpectation("editor", (), name)
            elif name:
                found = AppExpectation("other", (), name)
        elif step.type == "launch":
            found = _by_program(launched_program(step)) or found
        elif step.type in ("chrome_open_tabs",):
            found = AppExpectation("browser", _APPS[1][2])
    if found is not None and found.kind == "browser":
        found = AppExpectation(found.kind, found.classes, found.title, cdp_ports(task))
    return found


def screen_problem(
    shot: bytes, window: dict[str, Any], pages: dict[str, Any] | None = None
) -> str | None:
    """Why the screenshot ``shot`` does not show the active ``window`` (and the visible pages of
    ``pages``, those in the window) drawn yet; None: it does."""
    img = screen_image(shot)
    pointer = tuple(window["pointer"]) if window.get("pointer") else None
    geo = window.get("geometry")
    box = (geo[0], geo[1], geo[0] + geo[2], geo[1] + geo[3]) if geo else None
    if box and is_blank(img, box, pointer):
        return (
            f"window {window.get('title', '')!r} is still blank (one colour: nothing drawn "
            "in it yet)"
        )
    return page_screen_problem(img, box, pointer, pages) if pages else None


def window_problem(expected: AppExpectation, state: dict[str, Any]) -> str | None:
    """Why the active window cannot take input yet (None: it can)."""
    if state.get("error"):
        return f"window probe failed: {state['error']}"
    if not state.get("active"):
        return "no active window"
    title, classes = str(state.get("title", "")), [c.lower() for c in state.get("class", [])]
    if expected.title and expected.title not in title:
        return f"the active window is {title!r}, not the one showing {expected.title!r}"
    if expected.classes and not any(want in c for want in expected.classes for c in classes):
        return f"the active window's class is {classes}, not one of {list(expected.classes)}"
    if not state.get("viewable"):
        return f"window {title!r} is not mapped"
    if not state.get("focused"):
        return f"window {title!r} does not hold the keyboard focus"
    if state.get("pong") is False:
        return f"window {title!r} does not answer (its app is busy)"
    return None


def office_problem(state: dict[str, Any]) -> str | None:
    """Why LibreOffice's document cannot take input yet (None: it can)."""
    if not state.get("app"):
        return "LibreOffice is not on the accessibility bus yet"
    if not state.get("frame"):
        return "LibreOffice has no frame for the document yet"
    if not state.get("toolbars"):
        return "LibreOffice shows no toolbars yet"
    if not state.get("in_document"):
        return f"the focus is not in the document yet (focused: {state.get('focus')})"
    return None


def wait_until_ready(
    client: Any,
    task: Task,
    *,
    timeout: float = 120.0,
    poll_s: float = 0.5,
    quiet_s: float = 1.0,
    settle_cap_s: float = 10.0,
    loading_grace_s: float = 30.0,
) -> ReadyReport:
    """Wait until the task's app accepts input and shows its content (see the module
    docstring); raise :class:`AppNotReady` naming what was missing after ``timeout`` seconds."""
    expected = expected_app(task)
    report = ReadyReport(expected)
    start = time.monotonic()
    deadline = start + timeout
    office_checked = expected is not None and expected.kind == "libreoffice"
    page_checked = expected is not None and expected.kind == "browser"
    problem: str | None = None
    while expected is not None:
        report.probes += 1
        # Chrome's page probe runs beside the window's (both only read; its answer is used only
        # when the window is ready): 0.47 s for both, not 0.68 s. LibreOffice's would not gain:
        # both wait for its one main loop (the two took 1.7 s side by side, 1.3 s in a row)
        pages_asked = (
            _PROBES.submit(page_state, client, expected.cdp_ports) if page_checked else None
        )
        state = x_window_state(client)
        report.last = state
        problem = window_problem(expected, state)
        pages: dict[str, Any] | None = None
        if problem is None and office_checked:
            office = office_state(client, expected.title)
            report.last = {**state, "office": office}
            if office.get("error"):  # no AT-SPI bindings or no system python3 in the desktop
                logger.warning(
                    "cannot check LibreOffice's readiness: %s; waiting for its window alone",
                    office["error"],
                )
                office_checked = False
            else:
                problem = office_problem(office)
        if pages_asked is not None:
            pages = pages_asked.result()
        if problem is None and page_checked and pages is not None:
            report.last = {**state, "pages": pages}
            if pages.get("error") and (pages.get("probe") or not expected.cdp_ports):
                logger.warning(
                    "cannot check Chrome's pages: %s; waiting for its window alone", pages["error"]
                )
                page_checked, pages = False, None
            else:
                loading_ok = time.monotonic() - start >= loading_grace_s
                problem = page_problem(pages, loading_ok=loading_ok)
        if problem is None:
            problem = screen_problem(client.screenshot(), state, pages)
        if problem is None:
            break
        if time.monotonic() >= deadline:
            raise AppNotReady(
                f"the task's app was not ready for input after {timeout:g} s: {problem}"
            )
        logger.debug("waiting for the app: %s", problem)
        time.sleep(poll_s)
    left = max(1.0, min(settle_cap_s, deadline - time.monotonic()))
    wait_until_settled(client, quiet_s=quiet_s, cap_s=left)
    report.waited_s = round(time.monotonic() - start, 3)
    logger.debug("%s ready after %.2f s (%d probes)", expected, report.waited_s, report.probes)
    return report


__all__ = [
    "AppExpectation",
    "AppNotReady",
    "ReadyReport",
    "expected_app",
    "office_problem",
    "screen_problem",
    "wait_until_ready",
    "window_problem",
]
