"""Correctness of the fast screenshot path (speed itself is measured by the benchmarks).

The guest server's /screenshot encodes PNG with its own writer, pastes the cursor into its own
region and grabs on a worker thread. These tests check what that must not change: PNG is
lossless and equal to a raw XShm grab everywhere but under the cursor, the cursor is drawn,
JPEG/WebP keep the colours (no channel swap) and honour ``quality``, the size is the screen's.
The end-to-end tests run a real Xvfb (1920x1080) with a colourful root window and the real
server on loopback.
"""

from __future__ import annotations

import io
import random
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image, ImageChops

from computer_env.desktop.client import DesktopClient
from computer_env.desktop.server.screen import screenshot as ss
from tests.harness.helpers.pixels import rgb
from tests.harness.helpers.xdesktop import GuestServer, XDesktop

WIDTH, HEIGHT, TILE = 1920, 1080, 32
CURSOR_BOX = 64  # pixels around the hotspot that the cursor may cover


def _tiles(width: int, height: int, seed: int = 7) -> Image.Image:
    """Solid colour tiles: many colours, sharp edges, and smooth areas JPEG keeps exact-ish."""
    rng = random.Random(seed)
    image = Image.new("RGB", (width, height))
    for y in range(0, height, TILE):
        for x in range(0, width, TILE):
            colour = (rng.randrange(256), rng.randrange(256), rng.randrange(256))
            image.paste(colour, (x, y, x + TILE, y + TILE))
    return image


def _set_root_background(display: str, image: Image.Image) -> None:
    """Make ``image`` the root window's background (python-xlib, ZPixmap BGRX strips)."""
    from Xlib import X
    from Xlib import display as xdisplay

    d = xdisplay.Display(display)
    try:
        screen = d.screen()
        root = screen.root
        pixmap = root.create_pixmap(image.width, image.height, screen.root_depth)
        gc = pixmap.create_gc()
        rows = 8  # keep each PutImage request well under the core protocol's size limit
        for top in range(0, image.height, rows):
            strip = image.crop((0, top, image.width, min(image.height, top + rows)))
            pixmap.put_image(
                gc,
                0,
                top,
                strip.width,
                strip.height,
                X.ZPixmap,
                screen.root_depth,
                0,
                strip.tobytes("raw", "BGRX"),
            )
        root.change_attributes(background_pixmap=pixmap)
        root.clear_area(0, 0, 0, 0)
        d.sync()
    finally:
        d.close()


def _raw_grab(display: str) -> Image.Image:
    """The screen straight from XShm, without a cursor: the reference for every comparison."""
    import mss

    factory = getattr(mss, "MSS", None) or mss.mss
    with factory(display=display, with_cursor=False) as sct:
        shot = sct.grab(sct.monitors[0])
        return Image.frombytes("RGB", shot.size, bytes(shot.raw), "raw", "BGRX")


def _decode(data: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(data))
    image.load()
    return image


def _mask_box(image: Image.Image, box: tuple[int, int, int, int]) -> Image.Image:
    out = image.copy()
    out.paste((0, 0, 0), box)
    return out


def _cursor_box(x: int, y: int) -> tuple[int, int, int, int]:
    return (
        max(0, x - CURSOR_BOX),
        max(0, y - CURSOR_BOX),
        min(WIDTH, x + CURSOR_BOX),
        min(HEIGHT, y + CURSOR_BOX),
    )


@pytest.fixture(scope="module")
def desk() -> Iterator[XDesktop]:
    with XDesktop(WIDTH, HEIGHT) as d:
        _set_root_background(d.display, _tiles(WIDTH, HEIGHT))
        yield d


@pytest.fixture(scope="module")
def client(desk: XDesktop, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DesktopClient]:
    home: Path = tmp_path_factory.mktemp("shots") / "home"
    with GuestServer(desk.env, home, extra_args=["--no-warm"]) as server:
        with DesktopClient(server.url, server.token) as c:
            yield c


def _move(client: DesktopClient, x: int, y: int) -> None:
    result = client.run_pyautogui(f"pyautogui.moveTo({x}, {y})")
    assert result.returncode == 0, result
    assert client.cursor_position() == (x, y)


# -- end to end: the real server on a real X display ------------------------------------------


def test_png_is_lossless_outside_the_cursor_and_draws_it(
    client: DesktopClient, desk: XDesktop
) -> None:
    x, y = 901, 457  # inside a tile, away from the edges
    _move(client, x, y)
    shot = _decode(client.screenshot("png"))
    raw = _raw_grab(desk.display)
    assert shot.format == "PNG" and shot.mode == "RGB" and shot.size == (WIDTH, HEIGHT)
    assert len(raw.getcolors(1 << 16) or []) > 1000, "the colourful background is not shown"
    box = _cursor_box(x, y)
    # Everywhere but under the cursor: exactly the grabbed pixels (lossless, no channel swap).
    assert ImageChops.difference(_mask_box(shot, box), _mask_box(raw, box)).getbbox() is None
    # Under the cursor: the cursor is drawn in (the raw grab has none), near the hotspot.
    changed = ImageChops.difference(shot.crop(box), raw.crop(box)).getbbox()
    assert changed is not None, "no cursor drawn"
    left, top = box[0] + changed[0], box[1] + changed[1]
    assert abs(left - x) <= 32 and abs(top - y) <= 32, (left, top)


def test_cursor_follows_the_pointer_and_is_clipped_at_the_edge(
    client: DesktopClient, desk: XDesktop
) -> None:
    _move(client, WIDTH - 2, HEIGHT - 2)  # most of the cursor image is off screen
    shot = _decode(client.screenshot("png"))
    raw = _raw_grab(desk.display)
    assert shot.size == (WIDTH, HEIGHT)
    box = _cursor_box(WIDTH - 2, HEIGHT - 2)
    assert ImageChops.difference(_mask_box(shot, box), _mask_box(raw, box)).getbbox() is None
    assert ImageChops.difference(shot.crop(box), raw.crop(box)).getbbox() is not None
    # The old position is clean again.
    old = _cursor_box(901, 457)
    assert ImageChops.difference(shot.crop(old), raw.crop(old)).getbbox() is None


@pytest.mark.parametrize(("fmt", "pil"), [("jpeg", "JPEG"), ("webp", "WEBP")])
def test_lossy_formats_keep_size_and_colours(
    client: DesktopClient, desk: XDesktop, fmt: str, pil: str
) -> None:
    _move(client, 5, 5)
    shot = _decode(client.screenshot(fmt, 90))
    raw = _raw_grab(desk.display)
    assert shot.format == pil and shot.size == (WIDTH, HEIGHT)
    shot = shot.convert("RGB")
    # Tile centres away from the cursor: each channel within a small error (a swapped R/B
    # would be off by ~85 on average for random colours).
    errors = []
    for ty in range(2, HEIGHT // TILE - 1, 3):
        for tx in range(2, WIDTH // TILE - 1, 3):
            cx, cy = tx * TILE + TILE // 2, ty * TILE + TILE // 2
            a, b = rgb(shot.getpixel((cx, cy))), rgb(raw.getpixel((cx, cy)))
            errors.append(max(abs(int(p) - int(q)) for p, q in zip(a, b, strict=True)))
    errors.sort()
    assert errors[len(errors) // 2] <= 6 and errors[int(len(errors) * 0.95)] <= 24, errors[-10:]


@pytest.mark.parametrize("fmt", ["jpeg", "webp"])
def test_quality_parameter_changes_the_encoding(client: DesktopClient, fmt: str) -> None:
    low, high = client.screenshot(fmt, 10), client.screenshot(fmt, 95)
    assert len(low) < len(high), (len(low), len(high))
    a, b = _decode(low), _decode(high)
    assert a.size == b.size == (WIDTH, HEIGHT)
    if fmt == "jpeg":  # the quantisation tables say which quality each was written with
        assert sum(a.quantization[0]) > 5 * sum(b.quantization[0])  # type: ignore[attr-defined]


def test_png_ignores_quality_and_reports_server_timing(client: DesktopClient) -> None:
    r = client._request("GET", "/screenshot", params={"quality": 5})
    assert r.status_code == 200 and r.headers["content-type"] == "image/png"
    assert _decode(r.content).size == (WIDTH, HEIGHT)
    timing = dict(part.strip().split(";dur=") for part in r.headers["server-timing"].split(","))
    assert set(timing) == {"grab", "encode"} and all(float(v) >= 0 for v in timing.values())


def test_grabber_in_process_matches_mss(desk: XDesktop) -> None:
    """The grabber's image (before encoding) equals mss's grab outside the cursor box."""
    grabber = ss.ScreenGrabber(desk.display)
    try:
        assert grabber.size() == (WIDTH, HEIGHT)
        capture = grabber.screenshot("png")
        assert capture.mime == "image/png" and capture.grab_ms >= 0 and capture.encode_ms >= 0
        image = _decode(capture.data)
        raw = _raw_grab(desk.display)
        diff = ImageChops.difference(image, raw).getbbox()
        if diff is not None:  # only the cursor may differ: one small rectangle
            assert diff[2] - diff[0] <= 2 * CURSOR_BOX and diff[3] - diff[1] <= 2 * CURSOR_BOX
    finally:
        grabber.close()


def test_grabber_survives_its_x_connection_being_killed(desk: XDesktop) -> None:
    """``xkill -id`` on the grabber's own X client (what a program in the desktop can do to any
    client) kills its connection: the next screenshot comes from a new one, not an error."""
    import subprocess

    grabber = ss.ScreenGrabber(desk.display)
    try:
        before = _decode(grabber.screenshot("png").data)
        old = grabber._sct
        impl = getattr(old, "_impl", old)
        resource = int(impl._shmseg.value)  # an XID of the grabber's connection
        killed = subprocess.run(
            ["xkill", "-display", desk.display, "-id", hex(resource)],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        assert killed.returncode == 0, killed.stderr
        after = _decode(grabber.screenshot("png").data)
        assert after.size == before.size == (WIDTH, HEIGHT)
        assert grabber._sct is not None and grabber._sct is not old  # a new connection
    finally:
        grabber.close()


def test_in_place_grab_gives_the_pixels_of_mss_own_grab(desk: XDesktop) -> None:
    """The grab into our own XShm segment (no 8 MB copy) is taken, and its PNG and JPEG are
    byte for byte those of mss's copied grab, cursor included."""
    fast, copied = ss.ScreenGrabber(desk.display), ss.ScreenGrabber(desk.display)
    copied._shm._failures = 10**6  # mss's own grab only
    try:
        for fmt in ("png", "jpeg"):
            a, b = fast.screenshot(fmt).data, copied.screenshot(fmt).data
            assert fast._shm._buf is not None and fast._shm.enabled  # the in-place path ran
            assert copied._shm._buf is None
            assert ImageChops.difference(_decode(a), _decode(b)).getbbox() is None, fmt
    finally:
        fast.close()
        copied.close()


def test_in_place_grab_failing_falls_back_to_mss(
    desk: XDesktop, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An X error in the in-place grab costs nothing but speed: mss's own grab answers, and
    after a few failures in a row the in-place path stays off."""

    def refuse(*_args: object) -> None:
        raise RuntimeError("the X server refused the grab")

    monkeypatch.setattr("computer_env.desktop.server.screen.shmgrab._get_image", refuse)
    grabber = ss.ScreenGrabber(desk.display)
    try:
        shots = [_decode(grabber.screenshot("png").data) for _ in range(4)]
        assert all(shot.size == (WIDTH, HEIGHT) for shot in shots)
        assert not grabber._shm.enabled and grabber._shm._buf is None
        raw = _raw_grab(desk.display)
        diff = ImageChops.difference(shots[-1], raw).getbbox()
        assert diff is None or (
            diff[2] - diff[0] <= 2 * CURSOR_BOX and diff[3] - diff[1] <= 2 * CURSOR_BOX
        )
    finally:
        grabber.close()


# -- the encoder and the cursor blend, without a display ---------------------------------------


def _noise(width: int, height: int, mode: str = "RGB") -> Image.Image:
    rng = random.Random(width * 7919 + height)
    return Image.frombytes(
        mode, (width, height), bytes(rng.randrange(256) for _ in range(width * height * len(mode)))
    )


@pytest.mark.parametrize("size", [(1, 1), (7, 3), (333, 1), (1, 200), (641, 97)])
@pytest.mark.parametrize("level", [0, 1, 6, 9])
def test_png_writer_round_trips_exactly(size: tuple[int, int], level: int) -> None:
    image = _noise(*size)
    data = ss.encode_png(image, level)
    back = _decode(data)
    assert back.format == "PNG" and back.mode == "RGB" and back.size == size
    assert back.tobytes() == image.tobytes()
    # A well-formed file: IHDR says 8-bit truecolour, every chunk's CRC is right.
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos = 8
    kinds = []
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        assert crc == zlib.crc32(kind + body)
        kinds.append(kind)
        pos += 12 + length
    assert kinds == [b"IHDR", b"IDAT", b"IEND"]


def test_png_writer_converts_other_modes_and_both_backends_agree(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rgba = _noise(50, 40, "RGBA")
    assert _decode(ss.encode_png(rgba)).tobytes() == rgba.convert("RGB").tobytes()
    image = _noise(300, 200)
    default = ss.encode_png(image)
    monkeypatch.setattr(ss, "_ISAL", None)
    assert ss.deflate_backend() == "zlib"
    plain = ss.encode_png(image)
    assert _decode(default).tobytes() == _decode(plain).tobytes() == image.tobytes()


def test_encode_formats_and_default_quality() -> None:
    image = _tiles(256, 128)
    assert ss.encode(image, "png")[:4] == b"\x89PNG"
    jpeg = ss.encode(image, "jpeg")
    assert jpeg[:3] == b"\xff\xd8\xff"
    assert len(ss.encode(image, "jpeg", 10)) < len(jpeg) < len(ss.encode(image, "jpeg", 100))
    assert ss.encode(image, "webp")[:4] == b"RIFF"
