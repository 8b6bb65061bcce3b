"""PNG rows straight from the grab (numpy, one pass): the same bytes as the generic path, the
cursor blended as Pillow does, the file lossless; the buffer is reused between grabs."""

from __future__ import annotations

import io
import random

import pytest
from PIL import Image

from computer_env.desktop.server import screenshot as ss
from computer_env.desktop.server.pngrows import RowBuffer

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
    cursor.putdata([(rng.randrange(256), rng.randrange(256), rng.randrange(256),
                     rng.choice((0, 0, 128, 255))) for _ in range(24 * 24)])
    return cursor


def _generic(raw: bytearray, size: tuple[int, int], cursor: Image.Image | None,
             pos: tuple[int, int]) -> Image.Image:
    image = Image.frombuffer("RGB", size, bytes(raw), "raw", "BGRX", 0, 1).copy()
    if cursor is not None:
        image.paste(cursor, pos, cursor)
    return image


@pytest.mark.parametrize("size,pos", [((1920, 1080), (901, 457)), ((333, 97), (-7, 90)),
                                      ((64, 64), (50, -10))])
def test_rows_match_the_generic_path_cursor_included(size: tuple[int, int],
                                                     pos: tuple[int, int]) -> None:
    raw, cursor = _bgrx(size, 1), _cursor(2)
    buffer = RowBuffer()
    rows = buffer.filtered_rows(raw, size, (cursor, pos))
    assert rows is not None
    expected = _generic(raw, size, cursor, pos)
    stride = 3 * size[0]
    data = expected.tobytes()
    assert bytes(rows) == b"".join(b"\0" + data[i:i + stride] for i in range(0, len(data), stride))
    png = ss.encode_png_rows(rows, size, 1)
    with Image.open(io.BytesIO(png)) as decoded:
        assert decoded.mode == "RGB" and decoded.tobytes() == data


def test_buffer_is_reused_and_nothing_of_the_last_grab_stays() -> None:
    size = (200, 50)
    buffer = RowBuffer()
    first = bytes(buffer.filtered_rows(_bgrx(size, 3), size, (_cursor(4), (10, 10))) or b"")
    raw = _bgrx(size, 5)
    second = buffer.filtered_rows(raw, size, None)
    assert second is not None and bytes(second) != first
    with Image.open(io.BytesIO(ss.encode_png_rows(second, size))) as decoded:
        assert decoded.tobytes() == _generic(raw, size, None, (0, 0)).tobytes()
