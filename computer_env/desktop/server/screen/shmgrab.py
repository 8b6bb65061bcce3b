"""The screen grabbed into an XShm segment of our own, then blended and encoded in place.

``mss`` copies each grab out of its read-only XShm mapping into a fresh 8 MB ``bytearray`` at
1080p (about 0.7 ms, plus the page faults of new memory). Here the X server writes the screen
into a writable shared segment of ours, attached on mss's own XCB connection; the cursor is
blended into it and the encoders read it directly. It holds the grab until the next one, which
the grabber's single worker thread never starts before the encoders are done with this one.

Anything unexpected (no ``memfd_create``, an mss without these internals, a reply in another
depth or visual, an X error) gives None and the caller takes mss's own grab; after a few
failures in a row this path stays off.
"""

from __future__ import annotations

import logging
import mmap
import os
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)

_ALL_PLANES = 0xFFFFFFFF
_MAX_FAILURES = 3


def _get_image(impl: Any, seg: Any, monitor: dict[str, int]) -> Any:
    """XShmGetImage of ``monitor`` on mss's connection into ``seg`` (the reply: depth, visual)."""
    from mss.linux import xcb

    return xcb.shm_get_image(
        impl.conn,
        impl.drawable,
        int(monitor["left"]),
        int(monitor["top"]),
        int(monitor["width"]),
        int(monitor["height"]),
        _ALL_PLANES,
        xcb.ImageFormat.ZPixmap,
        seg,
        0,
    )


@dataclass(frozen=True)
class Grab:
    """One grab: BGRX bytes (a writable view, valid until the next grab), size, top-left."""

    raw: memoryview
    size: tuple[int, int]
    pos: tuple[int, int]


class ShmGrab:
    """A writable XShm segment on one mss connection (re-made when the connection changes)."""

    def __init__(self) -> None:
        self._conn: Any = None
        self._seg: Any = None
        self._buf: mmap.mmap | None = None
        self._failures = 0

    @property
    def enabled(self) -> bool:
        return self._failures < _MAX_FAILURES

    def _attach(self, impl: Any, nbytes: int) -> None:
        from mss.linux import xcb

        self.close()
        fd = os.memfd_create("desktop-grab", os.MFD_CLOEXEC)
        try:
            os.ftruncate(fd, nbytes)
            buf = mmap.mmap(fd, nbytes, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        except OSError:
            os.close(fd)
            raise
        seg = xcb.ShmSeg(xcb.generate_id(impl.conn).value)
        try:
            xcb.shm_attach_fd(impl.conn, seg, fd, read_only=False)  # XCB closes the fd
        except Exception:
            buf.close()
            raise
        self._conn, self._seg, self._buf = impl.conn, seg, buf

    def grab(self, sct: Any, monitor: dict[str, int]) -> Grab | None:
        """The monitor's pixels in our segment; None: take mss's grab (see the module)."""
        if not self.enabled:
            return None
        impl = getattr(sct, "_impl", None)
        if (
            impl is None
            or getattr(impl, "conn", None) is None
            or getattr(impl, "_shmseg", None) is None
        ):
            return None  # mss without XShm (or another version): its own path
        width, height = int(monitor["width"]), int(monitor["height"])
        nbytes = width * height * 4
        try:
            if self._conn is not impl.conn or self._buf is None or len(self._buf) < nbytes:
                self._attach(impl, nbytes)
            reply = _get_image(impl, self._seg, monitor)
            if (
                reply.depth != impl.drawable_depth
                or reply.visual.value != impl.drawable_visual_id.value
            ):
                raise ValueError(f"grab in depth {reply.depth}, not {impl.drawable_depth}")
        except Exception:  # noqa: BLE001 - mss's own grab decides (and reconnects if lost)
            self._failures += 1
            logger.debug("in-place grab failed (%d in a row)", self._failures, exc_info=True)
            self.close()
            return None
        self._failures = 0
        assert self._buf is not None
        return Grab(
            memoryview(self._buf)[:nbytes],
            (width, height),
            (int(monitor["left"]), int(monitor["top"])),
        )

    def close(self) -> None:
        """Forget the segment (the X server frees it with the connection, or on detach)."""
        if self._seg is not None and self._conn is not None:
            try:
                from mss.linux import xcb

                xcb.shm_detach(self._conn, self._seg)
            except Exception:  # noqa: BLE001 - the connection may be gone already
                logger.debug("detaching the grab segment failed", exc_info=True)
        if self._buf is not None:
            try:
                self._buf.close()
            except BufferError:  # a view of it is still held by an encoder: freed with it
                logger.debug("grab segment still in use; left to the garbage collector")
            self._buf = None
        self._conn = self._seg = None
