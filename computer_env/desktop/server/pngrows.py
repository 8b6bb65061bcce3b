"""A PNG's filtered rows straight from the XShm grab, in one pass and one reused buffer.

The generic path unpacks the grab (BGRX) into a Pillow RGB image, copies each band out of it
(``crop().tobytes()``) and joins the rows behind their filter-type bytes: three copies of the
screen. With numpy the grab's bytes are read once: B, G and R land in their places of a
persistent ``height x (1 + 3 * width)`` buffer whose first column stays 0 (filter type
"None"); the cursor is blended into its own small rectangle only, by Pillow, as before. The
bytes are those of the generic path (tested). Without numpy :func:`filtered_rows` answers None
and the caller takes the generic path.
"""

from __future__ import annotations

from typing import Any

from PIL import Image

try:
    import numpy as np
except ImportError:  # pragma: no cover - numpy is optional in the desktop
    np = None  # type: ignore[assignment]


class RowBuffer:
    """The reused output buffer of one grabbing thread."""

    def __init__(self) -> None:
        self._buf: Any = None

    def filtered_rows(self, raw: Any, size: tuple[int, int],
                      cursor: tuple[Image.Image, tuple[int, int]] | None) -> memoryview | None:
        """Filtered RGB rows of a BGRX grab ``raw`` of ``size``, with ``cursor`` (an RGBA
        image and its top-left on the screen) blended in; valid until the next call. None
        without numpy."""
        if np is None:
            return None
        width, height = size
        src = np.frombuffer(raw, np.uint8, width * height * 4).reshape(height, width, 4)
        if self._buf is None or self._buf.shape != (height, 1 + 3 * width):
            self._buf = np.zeros((height, 1 + 3 * width), np.uint8)  # column 0: filter 0
        rgb = self._buf[:, 1:].reshape(height, width, 3)
        np.copyto(rgb, src[:, :, 2::-1])  # BGRX -> RGB
        if cursor is not None:
            _blend(rgb, *cursor)
        return memoryview(self._buf).cast("B")


def _blend(rgb: Any, cursor: Image.Image, pos: tuple[int, int]) -> None:
    """Paste ``cursor`` (RGBA, straight alpha) at ``pos`` into ``rgb``, clipped, in place."""
    height, width = rgb.shape[:2]
    x0, y0 = max(0, pos[0]), max(0, pos[1])
    x1, y1 = min(width, pos[0] + cursor.width), min(height, pos[1] + cursor.height)
    if x1 <= x0 or y1 <= y0:
        return
    region = Image.fromarray(np.ascontiguousarray(rgb[y0:y1, x0:x1]), "RGB")
    region.paste(cursor, (pos[0] - x0, pos[1] - y0), cursor)
    rgb[y0:y1, x0:x1] = np.asarray(region)
