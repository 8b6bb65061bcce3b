"""The re-check at hand-out of a desktop set up ahead (``computer_env.osworld.prepare.readiness``):
the screen as it was proven ready, give or take a blinking caret, and nothing else. Real PNG
screenshots made with Pillow (the comparison is pure; the window probe runs on real desktops in
``test_setup_ahead_suite.py``)."""

from __future__ import annotations

import io

from PIL import Image, ImageDraw

from computer_env.osworld.prepare.readiness import CARET_BOX, screen_change


def _png(
    draw: tuple[int, int, int, int] | None = None, size: tuple[int, int] = (640, 480)
) -> bytes:
    img = Image.new("RGB", size, (240, 240, 240))
    d = ImageDraw.Draw(img)
    d.rectangle((40, 40, 600, 440), fill=(255, 255, 255), outline=(0, 0, 0))  # a window
    d.text((60, 60), "Quarterly report", fill=(0, 0, 0))
    if draw is not None:
        d.rectangle(draw, fill=(0, 0, 0))
    out = io.BytesIO()
    img.save(out, format="PNG")
    return out.getvalue()


def test_the_same_screen_or_a_caret_is_still_ready() -> None:
    assert screen_change(_png(), _png()) is None
    caret = (200, 100, 200 + CARET_BOX[0] - 1, 100 + 17)  # a text cursor blinked on
    assert screen_change(_png(), _png(caret)) is None


def test_anything_else_is_a_reason_to_wait_again() -> None:
    dialog = screen_change(_png(), _png((150, 150, 450, 300)))  # a dialog popped up
    assert dialog == "the screen changed in 301x151 px at (150, 150)"
    wide = screen_change(_png(), _png((200, 100, 230, 103)))  # a selection, not a caret
    assert wide is not None
    resized = screen_change(_png(), _png(size=(800, 600)))
    assert resized is not None and "size" in resized
