"""Chrome's side of readiness: its visible pages loaded and painted, and shown on the screen.

The pages are asked through Chrome's DevTools protocol from inside the desktop (the guest
program ``ready_probe.py``, ``page``: the ports the task's setup opened, then OSWorld's 9222),
so the same check runs on the local desktop and on an OSWorld VM, which expose no DevTools port
to the harness otherwise.
"""

from __future__ import annotations

import json
import re
from typing import Any

from PIL import Image

from computer_env.osworld.catalog.tasks import Task
from computer_env.osworld.prepare.readiness._probes import CDP_PORT
from computer_env.osworld.prepare.settle import Box, css_rgb, dominant_colour, is_blank, near


def cdp_ports(task: Task) -> tuple[int, ...]:
    """The DevTools ports ``task``'s setup opens: its ``--remote-debugging-port`` values, and
    9222 when the setup forwards it or uses OSWorld's ``chrome_*`` steps (which go through it)."""
    text = json.dumps([step.model_dump(mode="json") for step in task.config])
    ports = [int(p) for p in re.findall(r"--remote-debugging-port=(\d+)", text)]
    if str(CDP_PORT) in text or any(step.type.startswith("chrome_") for step in task.config):
        ports.append(CDP_PORT)
    return tuple(dict.fromkeys(ports))


def _name(page: dict[str, Any]) -> str:
    return str(page.get("title") or page.get("url") or "?")


def page_problem(state: dict[str, Any], *, loading_ok: bool = False) -> str | None:
    """Why Chrome's visible pages are not shown yet (None: they are); ``loading_ok``: a page
    still loading sub-resources (readyState interactive) whose content is painted will do."""
    if state.get("error"):
        return str(state["error"])
    pages = state.get("pages") or []
    shown = [p for p in pages if p.get("visible") == "visible"]
    if not shown:
        errors = "".join(f"; {p.get('url')}: {p['error']}" for p in pages if p.get("error"))
        return f"no page of Chrome is visible yet ({len(pages)} pages{errors})"
    for page in shown:
        ready, name = page.get("ready"), _name(page)
        painted = page.get("frame") and (page.get("fcp") or not page.get("content"))
        if ready != "complete" and not (loading_ok and ready == "interactive" and painted):
            return f"page {name!r} is still loading (document.readyState {ready!r})"
        if not page.get("frame"):
            return f"page {name!r} has not drawn a frame yet"
        if page.get("content") and not page.get("fcp"):
            return f"page {name!r} has not painted its content yet (no first contentful paint)"
    return None


def viewport_box(page: dict[str, Any]) -> Box:
    """Where a page's viewport is on the screen (from its window's position and sizes; the
    browser's toolbars are above it, its window border, if any, around it)."""
    dpr = float(page.get("dpr") or 1.0)
    x, y, ow, oh = (int(page.get(k) or 0) for k in ("x", "y", "ow", "oh"))
    iw, ih = int(page.get("iw") or 0), int(page.get("ih") or 0)
    border = max(0, (ow - iw) // 2)
    left, top = x + border, y + oh - border - ih
    box = (left + 2, top + 2, left + iw - 2, top + ih - 2)
    return (int(box[0] * dpr), int(box[1] * dpr), int(box[2] * dpr), int(box[3] * dpr))


def page_screen_problem(
    img: Image.Image, window: Box | None, pointer: tuple[int, int] | None, pages: dict[str, Any]
) -> str | None:
    """Why the screen ``img`` does not show the visible pages of ``pages`` whose viewport lies
    in ``window`` (all of them without it) yet; None: it does."""
    for page in pages.get("pages") or []:
        if page.get("visible") != "visible" or page.get("error"):
            continue
        box = viewport_box(page)
        mid = ((box[0] + box[2]) // 2, (box[1] + box[3]) // 2)
        if window and not (window[0] <= mid[0] < window[2] and window[1] <= mid[1] < window[3]):
            continue  # another window's page
        if page.get("content") and is_blank(img, box, pointer):
            return f"page {_name(page)!r} has content but its viewport on screen is still blank"
        want, got = css_rgb(page.get("bg")), dominant_colour(img, box)
        if not page.get("content") and want and got and not near(want, got):
            return (
                f"page {_name(page)!r}: its background {page['bg']} is not on screen yet "
                f"(the viewport shows rgb{got})"
            )
    return None


__all__ = ["CDP_PORT", "cdp_ports", "page_problem", "page_screen_problem", "viewport_box"]
