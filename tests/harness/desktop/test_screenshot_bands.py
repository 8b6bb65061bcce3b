"""Screenshots encoded in bands on threads (``computer_env.desktop.server.screen.bands``) are ordinary
files: the JPEG decodes to exactly the pixels of a one-piece encoding, the PNG is lossless, for
screen-sized and odd-sized images."""

from __future__ import annotations

import io
import random
import zlib

import pytest
from PIL import Image, ImageChops, ImageDraw

from computer_env.desktop.server.screen import bands
from computer_env.desktop.server.screen.screenshot import encode


def _screen(width: int, height: int) -> Image.Image:
    """Something like a desktop: flat areas, text-like strokes, a photo-like noisy patch."""
    rng = random.Random(width * height)
    img = Image.new("RGB", (width, height), (236, 236, 236))
    draw = ImageDraw.Draw(img)
    for _ in range(400):
        x, y = rng.randrange(width), rng.randrange(height)
        draw.text((x, y), "Quarterly totals 42", fill=(rng.randrange(256), 20, 60))
    noise = Image.effect_noise((min(300, width), min(200, height)), 60).convert("RGB")
    img.paste(noise, (0, 0))
    return img


@pytest.fixture(autouse=True)
def four_bands(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bands, "MAX_BANDS", 4)
    monkeypatch.setattr(bands, "bands_now", lambda: 4)


@pytest.mark.parametrize("size", [(1920, 1080), (1024, 768), (333, 129), (50, 7), (8, 1)])
def test_banded_jpeg_decodes_to_the_one_piece_pixels(size: tuple[int, int]) -> None:
    img = _screen(*size)
    one = io.BytesIO()
    img.save(one, "JPEG", quality=85)
    banded = Image.open(io.BytesIO(encode(img, "jpeg", 85)))
    assert banded.size == size and banded.format == "JPEG"
    reference = Image.open(io.BytesIO(one.getvalue())).convert("RGB")
    assert ImageChops.difference(banded.convert("RGB"), reference).getbbox() is None


@pytest.mark.parametrize("size", [(1920, 1080), (1024, 768), (333, 129), (50, 7), (8, 1)])
def test_banded_png_is_lossless(size: tuple[int, int]) -> None:
    img = _screen(*size)
    data = encode(img, "png")
    back = Image.open(io.BytesIO(data))
    back.load()  # checks every chunk CRC and the zlib stream's Adler-32
    assert back.size == size
    assert ImageChops.difference(back.convert("RGB"), img).getbbox() is None


def test_band_rows_cover_the_image_on_multiples() -> None:
    assert bands.band_rows(1080, 4, 128) == [(0, 256), (256, 512), (512, 768), (768, 1080)]
    assert bands.band_rows(1080, 2, 128) == [(0, 512), (512, 1080)]
    assert bands.band_rows(100, 4, 128) == [(0, 100)]


def test_adler32_combine_matches_zlib() -> None:
    a, b = b"screen " * 9000, bytes(range(256)) * 300
    assert bands.adler32_combine(zlib.adler32(a), zlib.adler32(b), len(b)) == zlib.adler32(a + b)
