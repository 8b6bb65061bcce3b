"""Encoding a screenshot in horizontal bands on several threads, into one ordinary file.

JPEG: every band is encoded alone with a restart marker after each MCU row (the entropy coder
and the DC prediction start afresh there) and the same standard tables; the bands' scans are
then joined with the restart marker that comes next, under the first band's headers with the
full height. Bands are multiples of 128 pixel rows (8 MCU rows of 16), so every band's own
markers continue the RST0-RST7 cycle where the band before it stopped. The decoded pixels are
exactly those of a one-piece encoding.

PNG: every band of filtered rows is deflated as a raw stream ending on a byte boundary (a sync
flush), the last one finished; joined under one zlib header with the Adler-32 of all rows, they
are one valid zlib stream (as pigz does).

Pillow's and ISA-L's/zlib's encoders release the GIL, so the bands really run in parallel.
"""

from __future__ import annotations

import io
import os
import struct
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from PIL import Image

from computer_env.desktop.providers.limits import host_cpus

_JPEG_BAND_ROWS = 128  # a multiple of 8 MCU rows of 16 pixels (4:2:0)
_RST7 = b"\xff\xd7"
_EOI = b"\xff\xd9"
MAX_BANDS = max(1, min(4, os.cpu_count() or 1))
"""Bands (and threads) per image; one band: no threads at all."""

_POOL: ThreadPoolExecutor | None = None


def runnable_others() -> int:
    """Threads runnable on the host right now besides the caller (``/proc/loadavg``'s
    running count, minus one); the 1-minute load average instead where that cannot be read."""
    try:
        with open("/proc/loadavg", encoding="ascii") as f:
            return max(0, int(f.read().split()[3].partition("/")[0]) - 1)
    except (OSError, ValueError, IndexError):
        try:
            return round(os.getloadavg()[0])
        except OSError:
            return 0


def bands_now() -> int:
    """How many bands to use now: one per core that nothing else wants at this moment (the
    host's running threads now, not the load average, which lags by a minute), at most
    ``MAX_BANDS``; on a saturated host threads only add switching."""
    if MAX_BANDS == 1:
        return 1
    return max(1, min(MAX_BANDS, host_cpus() - runnable_others()))


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(MAX_BANDS, thread_name_prefix="encode-band")
    return _POOL


def band_rows(height: int, bands: int, multiple: int) -> list[tuple[int, int]]:
    """``(top, bottom)`` of up to ``bands`` bands; every top a multiple of ``multiple``."""
    step = max(multiple, (height // max(1, bands)) // multiple * multiple)
    tops = list(range(0, height, step))[:bands]
    return [(top, tops[i + 1] if i + 1 < len(tops) else height) for i, top in enumerate(tops)]


def _scan_start(data: bytes) -> tuple[int, int]:
    """Offsets of the SOF0 segment and of the first entropy-coded byte (after the SOS)."""
    i, sof = 2, -1
    while i + 4 <= len(data) and data[i] == 0xFF:
        marker, length = data[i + 1], struct.unpack_from(">H", data, i + 2)[0]
        if marker == 0xC0:
            sof = i
        if marker == 0xDA:
            if sof < 0:
                break
            return sof, i + 2 + length
        i += 2 + length
    raise ValueError("not a baseline JPEG with one scan")


def _jpeg_band(image: Image.Image, box: tuple[int, int], quality: int) -> bytes:
    band = image.crop((0, box[0], image.width, box[1]))
    out = io.BytesIO()
    band.save(out, "JPEG", quality=quality, restart_marker_rows=1)
    return out.getvalue()


def encode_jpeg(image: Image.Image, quality: int) -> bytes:
    """Baseline 4:2:0 JPEG of ``image``, encoded in bands on threads (see the module)."""
    bands = band_rows(image.height, bands_now(), _JPEG_BAND_ROWS)
    if len(bands) == 1:
        out = io.BytesIO()
        image.save(out, "JPEG", quality=quality)
        return out.getvalue()
    parts = list(_pool().map(lambda box: _jpeg_band(image, box, quality), bands))
    sof, start = _scan_start(parts[0])
    head = bytearray(parts[0][:start])
    struct.pack_into(">H", head, sof + 5, image.height)  # SOF0: length, precision, height
    chunks: list[bytes] = [bytes(head), parts[0][start:-2]]
    for part in parts[1:]:
        chunks += [_RST7, part[_scan_start(part)[1] : -2]]
    chunks.append(_EOI)
    return b"".join(chunks)


def join_jpeg_bands(parts: list[bytes], height: int, mcus_per_band: int) -> bytes:
    """One baseline JPEG of ``height`` rows from JPEGs of its bands, each encoded alone with
    the same standard tables and no restart markers, every band but the last ``mcus_per_band``
    MCUs long: a DRI segment of that interval goes into the first band's headers and the bands'
    scans are joined behind RST0, RST1, ... (each band's coder and DC prediction started
    afresh, as a decoder does after a restart marker). Decodes to the one-piece pixels."""
    if len(parts) == 1:
        return parts[0]
    if not 0 < mcus_per_band <= 0xFFFF:
        raise ValueError(f"restart interval {mcus_per_band} out of range")
    sof, start = _scan_start(parts[0])
    sos = parts[0].rfind(b"\xff\xda", 0, start)
    head = bytearray(parts[0][:sos])
    struct.pack_into(">H", head, sof + 5, height)  # SOF0: length, precision, height
    head += b"\xff\xdd" + struct.pack(">HH", 4, mcus_per_band) + parts[0][sos:start]
    chunks: list[bytes] = [bytes(head), parts[0][start:-2]]
    for i, part in enumerate(parts[1:]):
        chunks += [bytes((0xFF, 0xD0 + i % 8)), part[_scan_start(part)[1] : -2]]
    chunks.append(_EOI)
    return b"".join(chunks)


def encode_bgrx_jpeg(pixels: Any, quality: int, encode_one: Callable[[Any], bytes]) -> bytes:
    """Baseline 4:2:0 JPEG of the ``height x width x 4`` BGRX array ``pixels`` through
    ``encode_one`` (an encoder of such arrays with standard tables and no restart markers),
    in bands of whole MCU rows (16 pixels) on threads when cores are idle."""
    height, width = int(pixels.shape[0]), int(pixels.shape[1])
    # A restart interval is fixed: every band but the last has the same whole MCU rows, and
    # the last no more than that (a longer last band would miss a restart marker).
    mcu_rows = -(-height // 16)  # ceiling division
    step = -(-mcu_rows // bands_now()) * 16
    boxes = [(top, min(height, top + step)) for top in range(0, height, step)]
    if len(boxes) == 1:
        return encode_one(pixels)
    parts = list(_pool().map(lambda box: encode_one(pixels[box[0] : box[1]]), boxes))
    return join_jpeg_bands(parts, height, step // 16 * -(-width // 16))


def _filtered(image: Image.Image, box: tuple[int, int]) -> bytes:
    """Rows ``box`` of an RGB image, each behind its PNG filter-type byte 0."""
    width = image.width
    stride = width * 3
    data = image.crop((0, box[0], width, box[1])).tobytes()
    view = memoryview(data)
    return b"\0".join([b"", *(view[i : i + stride] for i in range(0, len(data), stride))])


def adler32_combine(first: int, second: int, second_len: int) -> int:
    """The Adler-32 of two byte strings joined, from theirs (zlib's ``adler32_combine``)."""
    base = 65521
    rem = second_len % base
    sum1 = first & 0xFFFF
    sum2 = (rem * sum1) % base
    sum1 += (second & 0xFFFF) + base - 1
    sum2 += ((first >> 16) & 0xFFFF) + ((second >> 16) & 0xFFFF) + base - rem
    sum1 -= base if sum1 >= base else 0
    sum1 -= base if sum1 >= base else 0
    sum2 -= 2 * base if sum2 >= 2 * base else 0
    sum2 -= base if sum2 >= base else 0
    return sum1 | (sum2 << 16)


def deflate_bands(image: Image.Image, compressor: Any, count: int) -> bytes:
    """The zlib stream (header, deflate, Adler-32) of ``image``'s filtered rows, in ``count``
    bands deflated on threads; ``compressor()`` makes a raw-deflate compressor. Each thread
    keeps only its own band's rows."""
    rows = -(-image.height // max(1, count))
    boxes = [(top, min(image.height, top + rows)) for top in range(0, image.height, rows)]
    return _deflate_parts(lambda i: _filtered(image, boxes[i]), len(boxes), compressor)


def deflate_rows(
    rows: memoryview,
    height: int,
    compressor: Any,
    count: int,
    fill: Callable[[int, int], None] | None = None,
) -> bytes:
    """The same zlib stream from filtered rows (``height`` rows, each behind its filter-type
    byte, one buffer), deflated in ``count`` bands on threads without a copy; ``fill(top,
    bottom)``, when given, first makes a band's rows, on that band's thread."""
    stride = len(rows) // max(1, height)
    per = -(-height // max(1, count))
    tops = list(range(0, height, per))

    def part(i: int) -> memoryview:
        top, bottom = tops[i], min(height, tops[i] + per)
        if fill is not None:
            fill(top, bottom)
        return rows[top * stride : bottom * stride]

    return _deflate_parts(part, len(tops), compressor)


def _deflate_parts(part: Any, count: int, compressor: Any) -> bytes:
    def one(i: int) -> tuple[bytes, int, int]:
        raw = part(i)
        comp = compressor()
        mode = zlib.Z_FINISH if i == count - 1 else zlib.Z_SYNC_FLUSH
        return comp.compress(raw) + comp.flush(mode), zlib.adler32(raw), len(raw)

    adler = 1
    chunks = [b"\x78\x01"]
    for deflated, band_adler, length in _pool().map(one, range(count)):
        adler = adler32_combine(adler, band_adler, length)
        chunks.append(deflated)
    chunks.append(struct.pack(">I", adler))
    return b"".join(chunks)
