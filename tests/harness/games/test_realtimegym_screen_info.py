"""The screen carries what RealtimeGym's text observation tells: Freeway's turns until each
lane's cars move, Snake's body in order with its tail. Each check reads the drawn frame and
compares it with ``env.state_builder()`` (the text state RealtimeGym's agents read) for the
same game states, on the real games (they skip with RealtimeGym's reason without it)."""

from __future__ import annotations

import pytest
from PIL import Image, ImageDraw

from computer_env.realtimegym import realtimegym_available
from computer_env.realtimegym.draw import (
    FREEWAY_CELL,
    INFO_BG,
    INFO_TEXT,
    MARGIN,
    SNAKE_CELL,
    SNAKE_HEAD,
    SNAKE_TAIL,
    draw_freeway,
    draw_snake,
    freeway_lane_labels,
)
from computer_env.realtimegym.panel import _font
from tests.harness.helpers.pixels import rgb

AVAILABLE, REASON = realtimegym_available()
pytestmark = pytest.mark.skipif(not AVAILABLE, reason=REASON)


def _game(game: str, load: str, seed: int):  # noqa: ANN202 - RealtimeGym's own objects
    from computer_env.realtimegym.backend import RealtimeGymBackend

    backend = RealtimeGymBackend(game, load, seed)
    backend.reset()
    return backend


def _moves_in_from_text(car: tuple) -> int:
    """Turns until a car moves, from the text state alone: its head position is in 1/12 cells
    and its speed in 1/12 cells a turn, so the part of a cell already covered tells how many
    turns of the current cell have passed."""
    _lane, pos, direction, speed, _span = car
    if speed >= 12:
        return 1
    covered = (pos if direction == "right" else -pos) % 12
    return 12 // speed - covered // speed


def _drawn_text_matches(frame: Image.Image, xy: tuple[int, int], text: str) -> bool:
    """Whether ``text``, drawn as the frame draws its side column, is what the frame shows."""
    probe = Image.new("RGB", frame.size, INFO_BG)
    ImageDraw.Draw(probe).text(xy, text, fill=INFO_TEXT, font=_font(13), anchor="lm")
    box = (xy[0], xy[1] - FREEWAY_CELL // 2, frame.width, xy[1] + FREEWAY_CELL // 2)
    return frame.crop(box).tobytes() == probe.crop(box).tobytes()


@pytest.mark.parametrize(("load", "seed"), [("E", 0), ("M", 3), ("H", 1), ("H", 6)])
def test_freeway_screen_shows_when_each_lane_moves_next(load: str, seed: int) -> None:
    backend = _game("freeway", load, seed)
    checked = 0
    for action in "SSUSSDSSUSSS":
        text = backend.raw.state_builder()
        labels = freeway_lane_labels(backend.raw)
        frame = draw_freeway(backend.raw)
        by_lane: dict[int, set[str]] = {}
        for car in text["car_states"]:
            if car[1] is None:
                continue
            arrow = "→" if car[2] == "right" else "←"
            by_lane.setdefault(9 - car[0], set()).add(
                f"{arrow} moves in {_moves_in_from_text(car)}"
            )
        for lane in range(1, 9):
            label = labels[lane]
            expected = by_lane.get(lane)
            if expected is None:
                assert label == "no cars"
            else:
                shown = {
                    f"{part[0]} moves in {part.rsplit(' ', 1)[1]}" for part in label.split(" | ")
                }
                assert shown == expected, (lane, label, text["car_states"])
                checked += 1
            assert _drawn_text_matches(
                frame, (9 * FREEWAY_CELL + 10, lane * FREEWAY_CELL + FREEWAY_CELL // 2), label
            )
        backend.advance(action)
        if backend.terminal:
            break
    assert checked > 20


def _snake_read_from_pixels(frame: Image.Image, size: int) -> list[tuple[int, int]]:
    """The snake as the screen shows it, head first: the head's colour, then the body by its
    fading green, then the tail's colour (each cell's colour read away from its number)."""
    head, tail, body = None, None, []
    for x in range(size):
        for y in range(size):
            px = rgb(
                frame.getpixel((MARGIN + x * SNAKE_CELL + 10, (size - 1 - y) * SNAKE_CELL + 10))
            )
            if px == SNAKE_HEAD:
                head = (x, y)
            elif px == SNAKE_TAIL:
                tail = (x, y)
            elif px[0] == 30 and px[2] == 50:
                body.append((px[1], (x, y)))
    assert head is not None
    order = [head] + [cell for _green, cell in sorted(body, reverse=True)]
    return order + ([tail] if tail is not None else [])


@pytest.mark.parametrize(("load", "seed"), [("E", 0), ("M", 2), ("H", 6)])
def test_snake_screen_shows_the_body_in_order_with_its_tail(load: str, seed: int) -> None:
    from computer_env.realtimegym.scores.bounds import seed_scores

    backend = _game("snake", load, seed)
    moves = seed_scores("snake", load, seed).moves  # the expert grows a long snake
    longest = 0
    for turn, action in enumerate(moves):
        if turn % 4 == 0:
            text = backend.raw.state_builder()  # the snake head first, as agents read it
            frame = draw_snake(backend.raw)
            assert _snake_read_from_pixels(frame, text["size"]) == list(text["snake"]), turn
            longest = max(longest, len(text["snake"]))
        backend.advance(action)
        if backend.terminal:
            break
    assert longest >= 10
