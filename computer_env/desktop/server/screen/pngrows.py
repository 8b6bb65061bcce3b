"""Screenshots straight from the XShm grab (BGRX), with numpy: the cursor blended into the grab
itself, a PNG's filtered rows in one pass per band, and JPEG encoded from BGRX directly.

The generic path unpacks the grab into a Pillow RGB image (Pillow keeps RGB as four bytes a
pixel), copies bands out of it and joins rows behind their filter-type bytes: three or four
passes over 8 MB. Here:

- the cursor is blended into the grab's own bytes (our own XShm segment, :mod:`.shmgrab`, or
  mss's fresh ``bytearray``), inside its small rectangle only, by Pillow, as before;
- a PNG's rows land in a persistent ``height x (1 + 3 * width)`` buffer whose first column stays
  0 (filter type "None"), one channel copy at a time (three contiguous-source copies are about
  three times faster than one copy through a reversed channel view), band by band, so each
  band's rows can be made and deflated on its own thread;
- JPEG goes through ``simplejpeg`` (libjpeg-turbo), which reads BGRX itself: no RGB copy at all;
  with idle cores in bands of whole MCU rows on threads, joined by restart markers (:mod:`.bands`).

The bytes are those of the generic path (tested). Without numpy (or without simplejpeg for
JPEG) the functions here answer None and the caller takes the generic path.
"""

from __future__ import annotations

from typing import Any

from PIL import Image

from computer_env.desktop.server.screen import bands

try:
    import numpy as np
except ImportError:  # pragma: no cover - numpy is optional in the desktop
    np = None  # type: ignore[assignment]
try:
    import simplejpeg  # type: ignore[import-not-found,unused-ignore]
except ImportError:  # pragma: no cover - simplejpeg is optional in the desktop
    simplejpeg = None

Cursor = tuple[Image.Image, tuple[int, int]]
"""The cursor as an RGBA image (straight alpha) and its top-left on the screen."""


def available() -> bool:
    """Can the grab be worked on in place (numpy present)?"""
    return np is not None


def _pixels(raw: Any, size: tuple[int, int]) -> Any:
    width, height = size
    return np.frombuffer(raw, np.uint8, width * height * 4).reshape(height, width, 4)


def blend_cursor(raw: bytearray, size: tuple[int, int], cursor: Cursor | None) -> None:
    """Paste the cursor into the BGRX grab ``raw`` of ``size``, clipped, in place (as Pillow
    pastes it into an RGB image)."""
    if cursor is None or np is None:
        return
    image, pos = cursor
    src = _pixels(raw, size)
    height, width = src.shape[:2]
    x0, y0 = max(0, pos[0]), max(0, pos[1])
    x1, y1 = min(width, pos[0] + image.width), min(height, pos[1] + image.height)
    if x1 <= x0 or y1 <= y0:
        return
    region = Image.fromarray(np.ascontiguousarray(src[y0:y1, x0:x1, 2::-1]), "RGB")
    region.paste(image, (pos[0] - x0, pos[1] - y0), image)
    src[y0:y1, x0:x1, 2::-1] = np.asarray(region)


def encode_jpeg(raw: bytearray, size: tuple[int, int], quality: int) -> bytes | None:
    """Baseline 4:2:0 JPEG of the BGRX grab ``raw`` (libjpeg-turbo through simplejpeg); None
    without numpy or simplejpeg."""
    if np is None or simplejpeg is None:
        return None

    def one(pixels: Any) -> bytes:
        data: bytes = simplejpeg.encode_jpeg(
            pixels, quality=quality, colorspace="BGRX", colorsubsampling="420"
        )
        return data

    return bands.encode_bgrx_jpeg(_pixels(raw, size), quality, one)


class RowBuffer:
    """The reused output buffer of one grabbing thread's PNG rows."""

    def __init__(self) -> None:
        self._buf: Any = None
        self._src: Any = None

    def bind(self, raw: Any, size: tuple[int, int]) -> memoryview | None:
        """Take the BGRX grab ``raw`` of ``size`` (cursor already blended) for :meth:`fill`;
        the rows' buffer (filled by :meth:`fill`, valid until the next grab). None without
        numpy."""
        if np is None:
            return None
        width, height = size
        self._src = _pixels(raw, size)
        if self._buf is None or self._buf.shape != (height, 1 + 3 * width):
            self._buf = np.zeros((height, 1 + 3 * width), np.uint8)  # column 0: filter 0
        return memoryview(self._buf).cast("B")

    def fill(self, top: int, bottom: int) -> None:
        """Rows ``top`` to ``bottom`` of the bound grab, as RGB behind their filter byte."""
        src = self._src[top:bottom]
        rgb = self._buf[top:bottom, 1:].reshape(bottom - top, -1, 3)
        for channel in range(3):  # R, G, B from BGRX: one contiguous-source copy each
            rgb[:, :, channel] = src[:, :, 2 - channel]
