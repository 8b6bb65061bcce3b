"""The screen after setup: waiting for it to settle (instead of upstream's fixed 60 s sleep), and
telling a window that is up but still blank from one that shows its content."""

from __future__ import annotations

import io
import logging
import re
import time
from typing import Any

from PIL import Image, ImageChops

logger = logging.getLogger(__name__)

_THUMB = (240, 135)
_PIXEL_DELTA = 24
"""A thumbnail pixel counts as changed when its grey level moved by more than this."""
_CHANGED_FRACTION = 0.002
"""The screen counts as changed when more than this fraction of thumbnail pixels moved
(a blinking caret stays below it)."""


def _thumbnail(data: bytes) -> Image.Image:
    with Image.open(io.BytesIO(data)) as img:
        return img.convert("L").resize(_THUMB, Image.Resampling.BOX)


def screen_changed(a: Image.Image, b: Image.Image) -> bool:
    """Do two thumbnails differ by more than noise (caret blink, JPEG artefacts)?"""
    diff = ImageChops.difference(a, b).point(lambda v: 255 if v > _PIXEL_DELTA else 0)
    changed = diff.histogram()[255]
    return changed > _CHANGED_FRACTION * _THUMB[0] * _THUMB[1]


_INK_DELTA = 32
"""A pixel is ink when one of its channels is this far from the region's dominant colour."""
_BLANK_INK = 24
"""A region with at most this many ink pixels is blank (a text caret is about 15)."""
_POINTER_BOX = (-8, -8, 40, 40)
"""The area around the pointer position left out (the screenshot has the cursor drawn in)."""

Box = tuple[int, int, int, int]


def screen_image(data: bytes) -> Image.Image:
    """A screenshot (PNG bytes) as an RGB image."""
    with Image.open(io.BytesIO(data)) as img:
        return img.convert("RGB")


def _clip(img: Image.Image, box: Box) -> Box | None:
    left, top = max(0, box[0]), max(0, box[1])
    right, bottom = min(img.width, box[2]), min(img.height, box[3])
    return (left, top, right, bottom) if right - left >= 4 and bottom - top >= 4 else None


def dominant_colour(img: Image.Image, box: Box) -> tuple[int, int, int] | None:
    """The most frequent colour of ``box`` (sampled on a 64x36 grid); None for an empty box."""
    clipped = _clip(img, box)
    if clipped is None:
        return None
    sample = img.crop(clipped).resize((64, 36), Image.Resampling.NEAREST)
    # (count, colour): colour is a tuple of bands, or a number for a one-band image
    colours: list[tuple[int, Any]] = sample.getcolors(64 * 36) or [(0, (0, 0, 0))]
    colour = max(colours)[1]
    if isinstance(colour, tuple):  # RGB (or RGBA: the alpha is dropped)
        return colour[0], colour[1], colour[2]
    grey = int(colour)
    return grey, grey, grey


def ink_pixels(img: Image.Image, box: Box, pointer: tuple[int, int] | None = None) -> int:
    """Pixels of ``box`` that differ from its dominant colour (the pointer's area left out)."""
    clipped = _clip(img, box)
    if clipped is None:
        return 0
    region = img.crop(clipped)
    base = Image.new("RGB", region.size, dominant_colour(img, clipped))
    r, g, b = ImageChops.difference(region, base).split()
    ink = ImageChops.lighter(ImageChops.lighter(r, g), b).point(
        lambda v: 255 if v > _INK_DELTA else 0
    )
    if pointer is not None:
        px, py = pointer[0] - clipped[0], pointer[1] - clipped[1]
        ink.paste(
            0,
            (
                px + _POINTER_BOX[0],
                py + _POINTER_BOX[1],
                px + _POINTER_BOX[2],
                py + _POINTER_BOX[3],
            ),
        )
    return ink.histogram()[255]


def is_blank(img: Image.Image, box: Box, pointer: tuple[int, int] | None = None) -> bool:
    """Is ``box`` one flat colour (nothing drawn in it yet, a caret and the pointer aside)?"""
    return ink_pixels(img, box, pointer) <= _BLANK_INK


def css_rgb(value: str | None) -> tuple[int, int, int] | None:
    """``"rgb(0, 160, 0)"`` / ``"rgba(0, 160, 0, 1)"`` -> ``(0, 160, 0)``; None for others."""
    m = re.fullmatch(r"rgba?\((\d+), (\d+), (\d+)(?:, 1)?\)", (value or "").strip())
    return (int(m[1]), int(m[2]), int(m[3])) if m else None


def near(a: tuple[int, int, int], b: tuple[int, int, int]) -> bool:
    """Are two colours the same on screen (up to dithering and colour conversion)?"""
    return max(abs(x - y) for x, y in zip(a, b)) <= _INK_DELTA


STILL_S = 0.1
"""With the desktop's damage reports: how long the screen must not have been drawn on (longer,
up to ``quiet_s``, for a screen drawing in bursts)."""
APP_IDLE_S = 0.1
"""With the desktop's damage reports: how long the active window's app must have been idle (its
CPU time; LibreOffice's saves pause for up to ~40 ms between bursts of work)."""
WINDOW_S = 0.2
"""With the desktop's damage reports: how long after a new window was mapped (a dialog takes
its focus and draws its content)."""

USE_DAMAGE = True
"""Settle from the server's evidence (``/settle``: damage reports, the app's CPU time, new
windows) rather than comparing screenshots."""


def wait_until_settled(
    client: Any,
    *,
    quiet_s: float = 1.0,
    cap_s: float = 10.0,
    poll_s: float = 0.2,
    still_s: float = STILL_S,
) -> float:
    """Wait until the screen is still, at most ``cap_s``; returns the seconds waited.

    On this project's desktop server, on evidence: no drawing (carets apart) for ``still_s``
    (up to ``quiet_s`` for a screen drawing in bursts), the active window's app idle for
    ``APP_IDLE_S`` and no new window for ``WINDOW_S``; so a still screen costs milliseconds
    and an app still working on its input (a save that then asks to keep the format) is
    waited for. Elsewhere (an upstream OSWorld VM) small JPEG screenshots every ``poll_s``
    until none changed for ``quiet_s``.
    """
    start = time.monotonic()
    settle = getattr(client, "settle", None)
    answer = (
        settle(
            quiet_s=min(still_s, quiet_s),
            cap_s=cap_s,
            max_quiet_s=quiet_s,
            cpu_quiet_s=APP_IDLE_S,
            map_quiet_s=WINDOW_S,
        )
        if settle is not None and USE_DAMAGE
        else None
    )
    if answer is not None:
        if answer.get("capped"):
            logger.info("screen still changing after %.1f s (cap); going on", cap_s)
        waited = time.monotonic() - start
        logger.debug(
            "settled after %.3f s (damage reports, app busy: %s, waited last for: %s, "
            "stillness asked: %s s)",
            waited,
            answer.get("app_busy"),
            answer.get("last_wait"),
            answer.get("quiet_s"),
        )
        return waited
    prev = _thumbnail(client.screenshot(fmt="jpeg", quality=40))
    last_change = time.monotonic()
    while True:
        now = time.monotonic()
        if now - last_change >= quiet_s:
            break
        if now - start >= cap_s:
            logger.info("screen still changing after %.1f s (cap); going on", cap_s)
            break
        time.sleep(min(poll_s, max(0.0, quiet_s - (now - last_change))))
        cur = _thumbnail(client.screenshot(fmt="jpeg", quality=40))
        if screen_changed(prev, cur):
            last_change = time.monotonic()
        prev = cur
    waited = time.monotonic() - start
    logger.debug("screen settled after %.2f s", waited)
    return waited


__all__ = [
    "APP_IDLE_S",
    "STILL_S",
    "WINDOW_S",
    "Box",
    "css_rgb",
    "dominant_colour",
    "ink_pixels",
    "is_blank",
    "near",
    "screen_changed",
    "screen_image",
    "wait_until_settled",
]
