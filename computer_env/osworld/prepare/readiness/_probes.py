"""The readiness probes run in the desktop through the OSWorld server API, asked from the host:
the active window (its class, title, focus and a ``_NET_WM_PING`` round trip: the guest program
``x_window.py``, as pyautogui code), LibreOffice's frame in its accessibility tree and Chrome's
pages through its DevTools (the guest program ``ready_probe.py``, as ``/execute``)."""

from __future__ import annotations

import json
from typing import Any

from computer_env import guest_programs

CDP_PORT = 9222
"""OSWorld's DevTools port (``GUEST_TCP_PORTS["cdp"]``), forwarded to Chrome's own by setup."""


def probe_source() -> str:
    """The in-desktop probes' source (run as ``python3 -c SOURCE MODE ARGS...``)."""
    return guest_programs.read("ready_probe.py")


def last_json(text: str | None) -> dict[str, Any] | None:
    """The last line of a probe's output that is a JSON object (None when there is none)."""
    for line in reversed((text or "").strip().splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def page_state(client: Any, ports: tuple[int, ...]) -> dict[str, Any]:
    """Chrome's pages as its DevTools show them from inside the desktop (``ready_probe.py``,
    each page asked with ``page_ready.js``)."""
    args = [str(p) for p in dict.fromkeys((*ports, CDP_PORT))]
    res = client.execute(
        [
            "/usr/bin/python3",
            "-c",
            probe_source(),
            "page",
            "--js",
            guest_programs.read("page_ready.js"),
            *args,
        ],
        timeout=60,
    )
    return probe_answer(res, "the page probe", probe=True)


def probe_answer(res: Any, what: str, **failed: Any) -> dict[str, Any]:
    """A desktop probe's answer: the last JSON object it printed, else ``{"error": ...}`` with
    the last line of its error output (or that ``what`` did not answer) and ``failed``."""
    state = last_json(getattr(res, "output", ""))
    if state is None:
        err = (getattr(res, "error", "") or "").strip().splitlines()
        return {"error": err[-1] if err else f"no answer from {what}", **failed}
    return state


def x_window_state(client: Any, *, ping_s: float = 2.0) -> dict[str, Any]:
    """The active window (id, class, title, viewable, focused, pong) as the desktop sees it."""
    code = guest_programs.read("x_window.py")
    res = client.run_pyautogui(f"{code}\nprint(window_state_json({float(ping_s)!r}))\n")
    return probe_answer(res, "the window probe")


def office_state(client: Any, title: str) -> dict[str, Any]:
    """LibreOffice's frame as its accessibility tree shows it (see ``ready_probe.py``)."""
    res = client.execute(["/usr/bin/python3", "-c", probe_source(), "office", title], timeout=60)
    return probe_answer(res, "the accessibility probe")


__all__ = [
    "CDP_PORT",
    "last_json",
    "office_state",
    "page_state",
    "probe_answer",
    "probe_source",
    "x_window_state",
]
