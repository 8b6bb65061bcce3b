"""Still ready: a desktop set up ahead is re-checked in a fraction of a second when its case
starts, instead of waiting for its app again.

:func:`wait_until_ready` proved the app ready when the set-up ended and its screen was kept
then. At hand-out :func:`still_ready` asks the window probe again (the task's app's window is
still the active one, mapped, focused and answering: a dialog that popped up since, a crash, a
lost focus fail it) and compares the screen with the one kept: the same screen, or one that
differs only in a text caret's box (a blinking cursor), is the app as it was proven ready.
Anything else is a reason, and the caller waits for readiness again.
"""

from __future__ import annotations

from typing import Any

from PIL import ImageChops

from computer_env.osworld.catalog.tasks import Task
from computer_env.osworld.prepare.readiness._app import expected_app, window_problem
from computer_env.osworld.prepare.readiness._probes import x_window_state
from computer_env.osworld.prepare.settle import screen_image

__all__ = ["CARET_BOX", "screen_change", "still_ready"]

CARET_BOX = (4, 64)
"""The largest change (width, height in pixels) taken for a blinking text caret."""


def screen_change(then: bytes, now: bytes) -> str | None:
    """Where screenshot ``now`` differs from ``then`` beyond a caret's box; None: it does
    not."""
    a, b = screen_image(then), screen_image(now)
    if a.size != b.size:
        return f"the screen size changed from {a.size} to {b.size}"
    box = ImageChops.difference(a, b).getbbox()
    if box is None:
        return None
    width, height = box[2] - box[0], box[3] - box[1]
    if width <= CARET_BOX[0] and height <= CARET_BOX[1]:
        return None
    return f"the screen changed in {width}x{height} px at ({box[0]}, {box[1]})"


def still_ready(client: Any, task: Task, then: bytes) -> str | None:
    """Why the desktop set up for ``task`` (``then``: its screen when it was proven ready) is
    not as it was; None: it is."""
    expected = expected_app(task)
    if expected is not None and (problem := window_problem(expected, x_window_state(client))):
        return problem
    return screen_change(then, client.screenshot())
