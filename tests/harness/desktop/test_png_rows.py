"""PNG rows and JPEG straight from the grab (numpy; simplejpeg): the same bytes as the generic
path, the cursor blended into the grab as Pillow blends it into an RGB image, the PNG lossless and
made the same in bands on threads, the JPEG's colours kept; the buffer is reused between grabs."""

from __future__ import annotations

import io
import random

import pytest
from PIL import Image

from computer_env.desktop.server.screen import screenshot as ss
from computer_env.desktop.server.screen.pngrows import RowBuffer, blend_cursor
from tests.harness.helpers.pixels import rgb

pytest.importorskip("numpy")


def _bgrx(size: tuple[int, int], seed: int) -> bytearray:
    rng = random.Random(seed)
    image = Image.new("RGB", size)
    for _ in range(200):
        x, y = rng.randrange(size[0]), rng.randrange(size[1])
        colour = (rng.randrange(256), rng.randrange(256), rng.randrange(256))
        image.paste(colour, (x, y, x + rng.randrange(1, 90), y + rng.randrange(1, 40)))
    r, g, b = image.split()
    return bytearray(Image.merge("RGBA", (b, g, r, Image.new("L", size, 0))).tobytes())


def _cursor(seed: int) -> Image.Image:
    rng = random.Random(seed)
    cursor = Image.new("RGBA", (24, 24))
    cursor.putdata(
        [
            (
                rng.randrange(256),
                rng.randrange(256),
                rng.randrange(256),
                rng.choice((0, 0, 128, 255)),
            )
            for _ in range(24 * 24)
        ]
    )
    return cursor


def _filtered_rows(
    buffer: RowBuffer,
    raw: bytearray,
    size: tuple[int, int],
    cursor: tuple[Image.Image, tuple[int, int]] | None,
) -> memoryview | None:
    """What the server does for a PNG: the cursor into the grab, then every row made."""
    blend_cursor(raw, size, cursor)
    rows = buffer.bind(raw, size)
    buffer.fill(0, size[1])
    return rows


def _generic(
    raw: bytearray, size: tuple[int, int], cursor: Image.Image | None, pos: tuple[int, int]
) -> Image.Image:
    image = Image.frombuffer("RGB", size, bytes(raw), "raw", "BGRX", 0, 1).copy()
    if cursor is not None:
        image.paste(cursor, pos, cursor)
    return image


@pytest.mark.parametrize(
    "size,pos", [((1920, 1080), (901, 457)), ((333, 97), (-7, 90)), ((64, 64), (50, -10))]
)
def test_rows_match_the_generic_path_cursor_included(
    size: tuple[int, int], pos: tuple[int, int]
) -> None:
    raw, cursor = _bgrx(size, 1), _cursor(2)
    expected = _generic(raw, size, cursor, pos)  # before: the cursor is blended into ``raw``
    buffer = RowBuffer()
    rows = _filtered_rows(buffer, raw, size, (cursor, pos))
    assert rows is not None
    stride = 3 * size[0]
    data = expected.tobytes()
    assert bytes(rows) == b"".join(
        b"\0" + data[i : i + stride] for i in range(0, len(data), stride)
    )
    png = ss.encode_png_rows(rows, size, 1)
    with Image.open(io.BytesIO(png)) as decoded:
        assert decoded.mode == "RGB" and decoded.tobytes() == data


def test_buffer_is_reused_and_nothing_of_the_last_grab_stays() -> None:
    size = (200, 50)
    buffer = RowBuffer()
    first = bytes(_filtered_rows(buffer, _bgrx(size, 3), size, (_cursor(4), (10, 10))) or b"")
    raw = _bgrx(size, 5)
    second = _filtered_rows(buffer, raw, size, None)
    assert second is not None and bytes(second) != first
    with Image.open(io.BytesIO(ss.encode_png_rows(second, size))) as decoded:
        assert decoded.tobytes() == _generic(raw, size, None, (0, 0)).tobytes()


@pytest.mark.parametrize("count", [1, 2, 3])
def test_rows_made_band_by_band_on_threads_give_the_same_png(count: int, monkeypatch) -> None:
    from computer_env.desktop.server.screen import bands

    size = (640, 333)
    raw = _bgrx(size, 6)
    expected = _generic(raw, size, None, (0, 0)).tobytes()
    monkeypatch.setattr(bands, "bands_now", lambda: count)
    buffer = RowBuffer()
    rows = buffer.bind(raw, size)
    assert rows is not None
    png = ss.encode_png_rows(rows, size, 1, fill=buffer.fill)
    with Image.open(io.BytesIO(png)) as decoded:
        assert decoded.tobytes() == expected


def test_jpeg_from_bgrx_keeps_the_colours() -> None:
    from computer_env.desktop.server.screen import pngrows

    pytest.importorskip("simplejpeg")
    size = (256, 128)
    image = Image.new("RGB", size, (200, 30, 40))  # red left, blue right: a swap shows
    image.paste((20, 40, 210), (128, 0, 256, 128))
    r, g, b = image.split()
    raw = bytearray(Image.merge("RGBA", (b, g, r, Image.new("L", size, 0))).tobytes())
    data = pngrows.encode_jpeg(raw, size, 90)
    assert data is not None and data[:2] == b"\xff\xd8"
    with Image.open(io.BytesIO(data)) as decoded:
        assert decoded.size == size
        image = decoded.convert("RGB")
        left, right = rgb(image.getpixel((40, 60))), rgb(image.getpixel((200, 60)))
    assert all(abs(a - e) <= 6 for a, e in zip(left, (200, 30, 40))), left
    assert all(abs(a - e) <= 6 for a, e in zip(right, (20, 40, 210))), right


def test_runnable_others_reads_the_hosts_running_threads() -> None:
    from computer_env.desktop.server.screen import bands

    others = bands.runnable_others()
    assert 0 <= others < 10_000
    assert 1 <= bands.bands_now() <= bands.MAX_BANDS


@pytest.mark.parametrize("size", [(1920, 1080), (1024, 768), (333, 129), (50, 40), (17, 33)])
@pytest.mark.parametrize("count", [2, 3, 4])
def test_banded_bgrx_jpeg_decodes_to_the_one_piece_pixels(
    size: tuple[int, int], count: int, monkeypatch
) -> None:
    from computer_env.desktop.server.screen import bands, pngrows

    pytest.importorskip("simplejpeg")
    raw = _bgrx(size, 8)
    monkeypatch.setattr(bands, "bands_now", lambda: 1)
    one = pngrows.encode_jpeg(bytearray(raw), size, 85)
    monkeypatch.setattr(bands, "bands_now", lambda: count)
    banded = pngrows.encode_jpeg(bytearray(raw), size, 85)
    assert one is not None and banded is not None
    if size[1] >= 32:  # room for two bands of whole MCU rows: really banded
        assert banded != one and b"\xff\xdd" in banded[:1000]
    with Image.open(io.BytesIO(one)) as a, Image.open(io.BytesIO(banded)) as b:
        assert b.size == size and b.format == "JPEG"
        assert a.convert("RGB").tobytes() == b.convert("RGB").tobytes()
