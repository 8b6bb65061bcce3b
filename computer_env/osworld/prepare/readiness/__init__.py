"""Ready means ready: before the first action, the task's app is up and accepting input
(:func:`wait_until_ready`), and a desktop set up ahead is still so when its case starts
(:func:`still_ready`).

- ``_app``: what the task's app is expected to be and the wait until it is ready;
- ``_page``: Chrome's side (its visible pages loaded, painted and on the screen);
- ``_again``: the quick re-check at hand-out;
- ``_probes``: the host side of the probes that run inside the desktop (the guest programs
  ``x_window.py`` and ``ready_probe.py``, see :mod:`computer_env.guest_programs`).
"""

from computer_env.osworld.prepare.readiness._again import CARET_BOX, screen_change, still_ready
from computer_env.osworld.prepare.readiness._app import (
    AppExpectation,
    AppNotReady,
    ReadyReport,
    expected_app,
    office_problem,
    screen_problem,
    wait_until_ready,
    window_problem,
)
from computer_env.osworld.prepare.readiness._page import (
    cdp_ports,
    page_problem,
    page_screen_problem,
    viewport_box,
)
from computer_env.osworld.prepare.readiness._probes import (
    CDP_PORT,
    last_json,
    office_state,
    page_state,
    probe_answer,
    probe_source,
    x_window_state,
)

__all__ = [
    "CARET_BOX",
    "CDP_PORT",
    "AppExpectation",
    "AppNotReady",
    "ReadyReport",
    "cdp_ports",
    "expected_app",
    "last_json",
    "office_problem",
    "office_state",
    "page_problem",
    "page_screen_problem",
    "page_state",
    "probe_answer",
    "probe_source",
    "screen_change",
    "screen_problem",
    "still_ready",
    "viewport_box",
    "wait_until_ready",
    "window_problem",
    "x_window_state",
]
