"""Screen grabs through XShm (``mss``) with the cursor drawn in, encoded as PNG, JPEG or WebP."""

from __future__ import annotations

import io
import logging
import threading
from typing import Literal

from PIL import Image

logger = logging.getLogger(__name__)

ImageFormat = Literal["png", "jpeg", "webp"]
FORMATS: tuple[ImageFormat, ...] = ("png", "jpeg", "webp")
MIME: dict[ImageFormat, str] = {"png": "image/png", "jpeg": "image/jpeg", "webp": "image/webp"}
DEFAULT_QUALITY: dict[ImageFormat, int] = {"png": 1, "jpeg": 85, "webp": 80}


class ScreenGrabber:
    """One shared XShm connection to the display; grabs are serialised by a lock."""

    def __init__(self, display: str | None) -> None:
        self._display = display
        self._lock = threading.Lock()
        self._sct: object | None = None

    def _grabber(self) -> object:
        if self._sct is None:
            import mss

            self._sct = mss.mss(display=self._display, with_cursor=True)
        return self._sct

    def grab(self) -> Image.Image:
        """The whole screen as an RGB image, cursor included."""
        with self._lock:
            sct = self._grabber()
            monitor = sct.monitors[0]  # type: ignore[attr-defined]
            shot = sct.grab(monitor)  # type: ignore[attr-defined]
        return Image.frombytes("RGB", shot.size, shot.bgra, "raw", "BGRX")

    def size(self) -> tuple[int, int]:
        """(width, height) of the screen."""
        with self._lock:
            monitor = self._grabber().monitors[0]  # type: ignore[attr-defined]
        return int(monitor["width"]), int(monitor["height"])

    def close(self) -> None:
        with self._lock:
            if self._sct is not None:
                try:
                    self._sct.close()  # type: ignore[attr-defined]
                except Exception:  # noqa: BLE001
                    logger.debug("closing the grabber failed", exc_info=True)
                self._sct = None


def encode(image: Image.Image, fmt: ImageFormat, quality: int | None = None) -> bytes:
    """Encode ``image``. For PNG ``quality`` is the zlib level (default 1, fast)."""
    out = io.BytesIO()
    q = DEFAULT_QUALITY[fmt] if quality is None else quality
    if fmt == "png":
        image.save(out, "PNG", compress_level=max(0, min(9, q)))
    elif fmt == "jpeg":
        image.save(out, "JPEG", quality=q)
    else:
        image.save(out, "WEBP", quality=q, method=0)
    return out.getvalue()
