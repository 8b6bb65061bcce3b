"""Waiting for the screen to settle after setup (instead of upstream's fixed 60 s sleep)."""

from __future__ import annotations

import io
import logging
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


def wait_until_settled(client: Any, *, quiet_s: float = 1.0, cap_s: float = 10.0,
                       poll_s: float = 0.2) -> float:
    """Take small JPEG screenshots until the screen has not changed for ``quiet_s`` or ``cap_s``
    has passed; returns the seconds waited."""
    start = time.monotonic()
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


__all__ = ["screen_changed", "wait_until_settled"]
