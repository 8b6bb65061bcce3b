"""Screen grabs through XShm (``mss``) with the cursor drawn in, encoded as PNG, JPEG or WebP.

Per request: one XShm grab (BGRX; with numpy into a writable segment of our own, worked on in
place, see :mod:`.shmgrab`), the cursor read through XFixes and blended into its own small
region only, then the encoder. With numpy the grab's bytes are encoded directly: a PNG's
rows come from them band by band, JPEG by libjpeg-turbo (``simplejpeg``) from BGRX
(:mod:`.pngrows`); without, through a Pillow RGB image. PNG is written here, not by Pillow,
whose adaptive per-row filter choice costs about three times the deflate: filter type 0
("None") on every row, lossless and about as small on screen content, deflated by ISA-L
(``isal``) when installed, else zlib. With cores idle at that moment both are encoded in bands
on threads (:mod:`.bands`). A lost X connection (``xkill -id`` from inside the desktop) is
replaced on the next grab.
"""

from __future__ import annotations

import io
import logging
import struct
import threading
import time
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any, Literal

from PIL import Image

from computer_env.desktop.server.screen import bands, pngrows
from computer_env.desktop.server.screen.pngrows import RowBuffer
from computer_env.desktop.server.screen.shmgrab import ShmGrab

logger = logging.getLogger(__name__)

ImageFormat = Literal["png", "jpeg", "webp"]
FORMATS: tuple[ImageFormat, ...] = ("png", "jpeg", "webp")
MIME: dict[ImageFormat, str] = {"png": "image/png", "jpeg": "image/jpeg", "webp": "image/webp"}
DEFAULT_QUALITY: dict[ImageFormat, int] = {"png": 1, "jpeg": 85, "webp": 80}

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _isal_compressobj() -> Callable[..., Any] | None:
    try:
        from isal import isal_zlib  # type: ignore[import-not-found]
    except ImportError:
        return None
    return lambda level, wbits=15: isal_zlib.compressobj(
        min(level, isal_zlib.ISAL_BEST_COMPRESSION), isal_zlib.DEFLATED, wbits
    )


_ISAL = _isal_compressobj()
_BAND_BYTES = 256 * 1024  # rows are filtered and deflated in bands of about this size


def deflate_backend() -> str:
    """``"isal"`` or ``"zlib"``: what :func:`encode_png` deflates with at levels 1-3."""
    return "isal" if _ISAL is not None else "zlib"


def _compressor(level: int, wbits: int = 15) -> Any:
    """A zlib-stream compressor (``wbits=-15``: raw deflate): ISA-L for the fast levels when
    available, else zlib."""
    if _ISAL is not None and 1 <= level <= 3:
        return _ISAL(level, wbits)
    return zlib.compressobj(level, zlib.DEFLATED, wbits)


def _chunk(kind: bytes, payload: bytes) -> bytes:
    return b"".join(
        (
            struct.pack(">I", len(payload)),
            kind,
            payload,
            struct.pack(">I", zlib.crc32(payload, zlib.crc32(kind))),
        )
    )


def encode_png(image: Image.Image, level: int = 1) -> bytes:
    """Lossless 8-bit RGB PNG of ``image`` (filter type 0 on every row) at zlib ``level`` 0-9.

    Rows go through in bands of ~256 KiB, so the encoder never holds a second full-size copy
    of the pixels (a full copy made glibc return and re-fault ~20 MB on every request).
    """
    if image.mode != "RGB":
        image = image.convert("RGB")
    width, height = image.size
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit truecolour
    count = bands.bands_now()
    if count > 1 and height >= 2 * count:  # bands deflated on threads
        stream = bands.deflate_bands(image, lambda: _compressor(max(0, min(9, level)), -15), count)
        return b"".join(
            (_PNG_SIGNATURE, _chunk(b"IHDR", header), _chunk(b"IDAT", stream), _chunk(b"IEND", b""))
        )
    stride = width * 3
    band_rows = max(1, _BAND_BYTES // stride)
    comp = _compressor(max(0, min(9, level)))
    idat: list[bytes] = []
    for top in range(0, height, band_rows):
        band = image.crop((0, top, width, min(height, top + band_rows))).tobytes()
        view = memoryview(band)
        # Every row gets its filter-type byte (0) in front: b"\0" joined over ["", row0, ...].
        idat.append(
            comp.compress(
                b"\0".join([b"", *(view[i : i + stride] for i in range(0, len(band), stride))])
            )
        )
    idat.append(comp.flush())
    return b"".join(
        (
            _PNG_SIGNATURE,
            _chunk(b"IHDR", header),
            _chunk(b"IDAT", b"".join(idat)),
            _chunk(b"IEND", b""),
        )
    )


def encode_png_rows(
    rows: memoryview,
    size: tuple[int, int],
    level: int = 1,
    fill: Callable[[int, int], None] | None = None,
) -> bytes:
    """The PNG of ``size`` whose filtered rows (filter byte 0 first) are ``rows``; ``fill(top,
    bottom)``, when given, makes those rows first (band by band, on the bands' threads)."""
    width, height = size
    level = max(0, min(9, level))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    count = bands.bands_now()
    if count > 1 and height >= 2 * count:
        stream = bands.deflate_rows(rows, height, lambda: _compressor(level, -15), count, fill)
    else:
        if fill is not None:
            fill(0, height)
        comp = _compressor(level)
        stream = comp.compress(rows) + comp.flush()
    return b"".join(
        (_PNG_SIGNATURE, _chunk(b"IHDR", header), _chunk(b"IDAT", stream), _chunk(b"IEND", b""))
    )


def encode(image: Image.Image, fmt: ImageFormat, quality: int | None = None) -> bytes:
    """Encode ``image``. For PNG ``quality`` is the zlib level (default 1, fast)."""
    q = DEFAULT_QUALITY[fmt] if quality is None else quality
    if fmt == "png":
        return encode_png(image, q)
    out = io.BytesIO()
    if fmt == "jpeg":
        return bands.encode_jpeg(image, q)  # Pillow's default: 4:2:0, no optimize pass
    else:
        image.save(out, "WEBP", quality=q, method=0)
    return out.getvalue()


UNAVAILABLE_POLL_S = 0.5
"""How often a waiting screenshot asks whether the X server can answer at all."""


class ScreenUnavailable(Exception):
    """The screen cannot be grabbed now: its X server is stopped or gone (the reason)."""


@dataclass(frozen=True)
class Capture:
    """One encoded screenshot and where its time went."""

    data: bytes
    mime: str
    grab_ms: float
    encode_ms: float


class ScreenGrabber:
    """One shared XShm connection to the display, used from one long-lived worker thread.

    The werkzeug server runs each request in a new thread. Grabbing and encoding there made
    glibc hand every request fresh per-thread heap memory for its ~25 MB of buffers, which
    costs ~5,000 page faults (5-8 ms here) per screenshot; on one persistent thread the same
    memory is reused and the faults drop to zero. One connection behind one thread also beats
    one per request thread (each would set up its XShm segment again).
    """

    def __init__(self, display: str | None) -> None:
        self._display = display
        self._lock = threading.Lock()
        self._sct: Any = None
        self._cursor_fn: Callable[[], Any] | None = None
        self._cursor_warned = False
        self._pool: ThreadPoolExecutor | None = None
        self._rows = RowBuffer()  # used on the worker thread only
        self._shm = ShmGrab()  # in-place grabs for the numpy path (worker thread only)

    def _grabber(self) -> Any:
        if self._sct is None:
            import mss

            factory = getattr(mss, "MSS", None) or mss.mss
            sct = factory(display=self._display, with_cursor=False)
            # mss reads the cursor through XFixes but blends it in a per-pixel Python loop; we
            # read it from mss and paste it with Pillow (mss >= 10: ``_impl.cursor``, 9:
            # ``_cursor_impl``). If neither exists, let mss draw it.
            fn = getattr(getattr(sct, "_impl", None), "cursor", None) or getattr(
                sct, "_cursor_impl", None
            )
            if fn is None:
                sct.close()
                sct = factory(display=self._display, with_cursor=True)
            self._sct, self._cursor_fn = sct, fn
        return self._sct

    def _cursor(self) -> Any:
        if self._cursor_fn is None:
            return None
        try:
            return self._cursor_fn()
        except Exception:  # noqa: BLE001 - no XFixes: screenshots without a cursor, said once
            if not self._cursor_warned:
                logger.warning(
                    "cannot read the cursor image; screenshots have no cursor", exc_info=True
                )
                self._cursor_warned = True
            self._cursor_fn = None
            return None

    def _worker(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(1, thread_name_prefix="screenshot")
            return self._pool

    def _grab_raw(
        self, in_place: bool = False
    ) -> tuple[Any, tuple[Image.Image, tuple[int, int]] | None]:
        """The grab (BGRX: ``raw``, ``size``, ``pos``) and the cursor (RGBA image, its
        top-left on the screen). ``in_place``: in our own XShm segment where that works
        (:mod:`.shmgrab`; valid until the next grab), else mss's copy."""
        with self._lock:
            try:
                sct = self._grabber()
                shot = (self._shm.grab(sct, sct.monitors[0]) if in_place else None) or sct.grab(
                    sct.monitors[0]
                )
            except Exception:  # noqa: BLE001 - a lost X connection: once more on a new one
                logger.warning("screen grab failed; reconnecting to the display", exc_info=True)
                self._drop_grabber()
                sct = self._grabber()
                shot = sct.grab(sct.monitors[0])
            cursor = self._cursor()
        if cursor is None or cursor.size[0] <= 0 or cursor.size[1] <= 0:
            return shot, None
        (cx, cy), (x0, y0) = cursor.pos, shot.pos
        image = Image.frombuffer("RGBA", tuple(cursor.size), cursor.raw, "raw", "BGRA", 0, 1)
        return shot, (image, (cx - x0, cy - y0))

    def grab(self) -> Image.Image:
        """The whole screen as an RGB image, cursor included."""
        shot, cursor = self._grab_raw()
        image = Image.frombuffer("RGB", shot.size, shot.raw, "raw", "BGRX", 0, 1)
        if cursor is not None:
            image.paste(cursor[0], cursor[1], cursor[0])
        return image

    def _capture_bgrx(self, fmt: ImageFormat, quality: int | None) -> Capture | None:
        """PNG and JPEG straight from the grab's BGRX bytes (:mod:`.pngrows`); None where that
        path is not available (no numpy; JPEG without simplejpeg; WebP)."""
        if fmt == "webp" or not pngrows.available():
            return None
        t0 = time.perf_counter()
        shot, cursor = self._grab_raw(in_place=True)
        size = (int(shot.size[0]), int(shot.size[1]))
        pngrows.blend_cursor(shot.raw, size, cursor)
        t1 = time.perf_counter()
        if fmt == "jpeg":
            q = DEFAULT_QUALITY["jpeg"] if quality is None else quality
            data = pngrows.encode_jpeg(shot.raw, size, q)
            if data is None:
                return None
        else:
            rows = self._rows.bind(shot.raw, size)
            if rows is None:
                return None
            level = DEFAULT_QUALITY["png"] if quality is None else quality
            data = encode_png_rows(rows, size, level, fill=self._rows.fill)
        return Capture(data, MIME[fmt], (t1 - t0) * 1000, (time.perf_counter() - t1) * 1000)

    def _capture(self, fmt: ImageFormat, quality: int | None) -> Capture:
        fast = self._capture_bgrx(fmt, quality)
        if fast is not None:
            return fast
        t0 = time.perf_counter()
        image = self.grab()
        t1 = time.perf_counter()
        data = encode(image, fmt, quality)
        t2 = time.perf_counter()
        return Capture(data, MIME[fmt], (t1 - t0) * 1000, (t2 - t1) * 1000)

    def screenshot(
        self,
        fmt: ImageFormat = "png",
        quality: int | None = None,
        *,
        unavailable: Callable[[], str | None] | None = None,
    ) -> Capture:
        """Grab and encode on the grabber's worker thread (see the class docstring).
        ``unavailable``: asked every :data:`UNAVAILABLE_POLL_S` while the grab waits; a reason
        it gives (the X server stopped from outside) raises :class:`ScreenUnavailable` at once
        instead of waiting for the X server (the grab itself finishes when it resumes)."""
        future = self._worker().submit(self._capture, fmt, quality)
        if unavailable is None:
            return future.result()
        while True:
            try:
                return future.result(timeout=UNAVAILABLE_POLL_S)
            except FutureTimeout:
                why = unavailable()
                if why is not None:
                    raise ScreenUnavailable(why) from None

    def size(self) -> tuple[int, int]:
        """(width, height) of the screen."""
        with self._lock:
            monitor = self._grabber().monitors[0]
        return int(monitor["width"]), int(monitor["height"])

    def _drop_grabber(self) -> None:
        """Forget the X connection (closed if it can be): the next grab opens a new one (the
        old one may have been killed, e.g. by ``xkill -id`` from inside the desktop)."""
        self._shm.close()
        if self._sct is not None:
            try:
                self._sct.close()
            except Exception:  # noqa: BLE001
                logger.debug("closing the grabber failed", exc_info=True)
        self._sct = None
        self._cursor_fn = None

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
            self._drop_grabber()
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
