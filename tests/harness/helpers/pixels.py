"""A pixel of a Pillow image as the tests compare it."""

from __future__ import annotations


def rgb(pixel: object) -> tuple[int, ...]:
    """``Image.getpixel``'s answer for a multi-band image (a tuple of ints), checked as such:
    a single-band image's int or float is a test's mistake."""
    assert isinstance(pixel, tuple), f"expected a multi-band pixel, got {pixel!r}"
    return tuple(int(v) for v in pixel)


__all__ = ["rgb"]
