"""The game frames: each game's state drawn with PIL, plus what a player needs to see.

RealtimeGym's own pygame renderers need sprite files that its source snapshot does not carry,
so the suite draws every frame itself from the game's state (the state, rules and rewards stay
RealtimeGym's): the same pixels on every machine. Next to the board, never over a cell, each
frame shows what RealtimeGym's own agents read as text:

- Freeway: each lane's car direction, speed and turns until its cars next move, in a column
  aligned with the lanes.
- Snake: the body in order (numbered from the head, a green gradient from the bright head, the
  tail yellow), column/row numbers around the board and each apple's turns left.
- Overcooked: each pot's contents or cooking progress (numbered above its column) and the
  partner's last action, in a side column.
"""

from __future__ import annotations

from typing import Any

from PIL import Image, ImageDraw

from computer_env.realtimegym.panel import _font

INFO_WIDTH = 270
MARGIN = 24
INFO_BG = (24, 26, 32)
INFO_TEXT = (236, 236, 236)
INFO_DIM = (160, 166, 178)
_DIRECTION_WORD = {"U": "down", "D": "up", "L": "left", "R": "right", "S": "stay", "I": "interact"}
"""Overcooked's action letters in screen terms (its U is a row down on screen)."""


def _canvas(
    board_w: int, board_h: int, *, top: int = 0, left: int = 0, bottom: int = 0
) -> tuple[Image.Image, ImageDraw.ImageDraw]:
    image = Image.new("RGB", (left + board_w + INFO_WIDTH, top + board_h + bottom), INFO_BG)
    return image, ImageDraw.Draw(image)


def _lines(draw: ImageDraw.ImageDraw, x: int, y: int, lines: list[str], size: int = 13) -> None:
    for i, line in enumerate(lines):
        draw.text(
            (x, y + i * (size + 6)), line, fill=INFO_TEXT if i == 0 else INFO_DIM, font=_font(size)
        )


# ----- Freeway ----------------------------------------------------------------------------

FREEWAY_CELL = 60


def lane_speed(speed: float) -> str:
    """A Freeway car's speed in words: RealtimeGym moves a car one cell every ``speed`` turns
    when ``|speed| >= 1``, else ``1/|speed|`` cells a turn."""
    s = abs(speed)
    if s >= 1:
        n = round(s)
        return "1 cell / turn" if n == 1 else f"1 cell / {n} turns"
    return f"{round(1 / s)} cells / turn"


def next_move(timer: int, speed: float) -> int:
    """Turns until a Freeway car next moves: a slow car (``|speed| >= 1``) moves when its
    timer runs out (``FreewayEnv.step``), a fast one every turn."""
    return timer + 1 if abs(speed) >= 1 else 1


def freeway_lane_labels(raw: Any) -> dict[int, str]:
    """Each lane's label (rows 1-8): direction, speed and when its cars move next, e.g.
    ``→ 1 cell / 3 turns, moves in 2``. RealtimeGym's text state gives the same through each
    car's sub-cell position; cars of one lane share speed and timer (else each is listed)."""
    lanes: dict[int, list[str]] = {lane: [] for lane in range(1, 9)}
    for x, y, timer, speed, _length in raw.cars:
        if x is None or speed is None:
            continue
        label = (
            f"{'→' if speed > 0 else '←'} {lane_speed(speed)}, moves in {next_move(timer, speed)}"
        )
        if label not in lanes[y]:
            lanes[y].append(label)
    return {lane: " | ".join(labels) or "no cars" for lane, labels in lanes.items()}


def draw_freeway(raw: Any) -> Image.Image:
    """The road (9 columns x 10 rows), the chicken, the cars; lane speeds on the right."""
    c = FREEWAY_CELL
    image, draw = _canvas(9 * c, 10 * c)
    for row in range(10):
        for col in range(9):
            box = (col * c, row * c, (col + 1) * c - 1, (row + 1) * c - 1)
            if row in (0, 9):
                fill = (96, 168, 72)
            else:
                fill = (200, 190, 90) if col == 4 else (110, 110, 116)
            draw.rectangle(box, fill=fill, outline=(150, 150, 156))
    lanes = freeway_lane_labels(raw)
    for x, y, _timer, speed, length in raw.cars:
        if x is None or speed is None:
            continue
        right = speed > 0
        cells = [x - k if right else x + k for k in range(length)]
        for k, cx in enumerate(cells):
            if 0 <= cx <= 8:
                box = (cx * c + 3, y * c + 12, (cx + 1) * c - 4, (y + 1) * c - 13)
                draw.rounded_rectangle(
                    box, radius=8, fill=(200, 40, 40) if k == 0 else (150, 30, 30)
                )
        if 0 <= x <= 8:  # the car's front: a windscreen on the side it drives to
            fx = x * c + (c - 14 if right else 6)
            draw.rectangle((fx, y * c + 18, fx + 8, (y + 1) * c - 19), fill=(170, 220, 250))
    px, py = 4 * c, raw.pos * c
    draw.polygon([(4 * c + 20, 8), (4 * c + 40, 8), (4 * c + 30, 26)], fill=(230, 40, 40))
    draw.ellipse(
        (px + 14, py + 14, px + c - 14, py + c - 14),
        fill=(250, 250, 250),
        outline=(40, 40, 40),
        width=2,
    )
    draw.polygon([(px + 27, py + 14), (px + 33, py + 14), (px + 30, py + 6)], fill=(240, 160, 0))
    x0 = 9 * c + 10
    draw.text((x0, c // 2), "GOAL (row 0)", fill=INFO_TEXT, font=_font(13), anchor="lm")
    for lane in range(1, 9):
        draw.text((x0, lane * c + c // 2), lanes[lane], fill=INFO_TEXT, font=_font(13), anchor="lm")
    draw.text((x0, 9 * c + c // 2), "START", fill=INFO_TEXT, font=_font(13), anchor="lm")
    return image


# ----- Snake ------------------------------------------------------------------------------

SNAKE_CELL = 48


SNAKE_HEAD = (60, 235, 90)
SNAKE_TAIL = (240, 200, 40)


def snake_segment_colour(order: int, length: int) -> tuple[int, int, int]:
    """A segment's fill: ``order`` 0 is the head (bright green), ``length - 1`` the tail
    (yellow); the body between darkens step by step toward the tail, so the order shows."""
    if order == 0:
        return SNAKE_HEAD
    if order == length - 1:
        return SNAKE_TAIL
    span = max(1, length - 3)
    return 30, 205 - round(115 * (order - 1) / span), 50


def draw_snake(raw: Any) -> Image.Image:
    """The board with its walls, obstacles, apples and snake; numbers around it, apples' turns
    left on the right. Column x and row y are RealtimeGym's (row 0 at the bottom)."""
    c, b = SNAKE_CELL, raw.B
    left, bottom = MARGIN, MARGIN
    image, draw = _canvas(b * c, b * c, left=left, bottom=bottom)

    def box(x: int, y: int, pad: int = 0) -> tuple[int, int, int, int]:
        sx, sy = left + x * c, (b - 1 - y) * c
        return sx + pad, sy + pad, sx + c - 1 - pad, sy + c - 1 - pad

    obstacles = set(raw.obstacle)
    for x in range(b):
        for y in range(b):
            wall = x in (0, b - 1) or y in (0, b - 1) or (x, y) in obstacles
            fill = (150, 70, 50) if wall else ((0, 77, 77) if (x + y) % 2 == 0 else (0, 102, 102))
            draw.rectangle(box(x, y), fill=fill)
        draw.text(
            (left + x * c + c // 2, b * c + bottom // 2),
            str(x),
            fill=INFO_DIM,
            font=_font(12),
            anchor="mm",
        )
    for y in range(b):
        draw.text(
            (left // 2, (b - 1 - y) * c + c // 2),
            str(y),
            fill=INFO_DIM,
            font=_font(12),
            anchor="mm",
        )
    apples = []
    for x, y in raw.food:
        life, value = raw.food_attributes[x][y]
        if value > 0:
            draw.ellipse(box(x, y, 10), fill=(220, 30, 30), outline=(90, 10, 10), width=2)
            apples.append((life, x, y))
    n = len(raw.snake)
    for i, (x, y) in enumerate(raw.snake):  # tail first, head last
        order = n - 1 - i  # 0 = the head
        draw.rounded_rectangle(box(x, y, 4), radius=10, fill=snake_segment_colour(order, n))
        if order:
            draw.text(
                (left + x * c + c // 2, (b - 1 - y) * c + c // 2),
                str(order + 1),
                fill=(16, 24, 16),
                font=_font(12),
                anchor="mm",
            )
    hx, hy = raw.snake[-1]
    ex, ey = {"L": (-1, 0), "R": (1, 0), "U": (0, -1), "D": (0, 1)}[raw.dir]  # screen dy
    cx, cy = left + hx * c + c // 2 + ex * 12, (b - 1 - hy) * c + c // 2 + ey * 12
    draw.ellipse((cx - 5, cy - 5, cx + 5, cy + 5), fill=(0, 0, 0))
    heading = {"L": "left", "R": "right", "U": "up", "D": "down"}[raw.dir]
    lines = [
        f"Heading {heading}, length {len(raw.snake)}",
        "Body numbered from the head (1);",
        "tail in yellow",
        "Apples (column, row):",
    ]
    lines += [
        f"  ({x}, {y}): {life} turn{'s' if life != 1 else ''} left" for life, x, y in sorted(apples)
    ]
    _lines(draw, left + b * c + 10, 10, lines)
    return image


# ----- Overcooked -------------------------------------------------------------------------

OC_CELL = 60
_TERRAIN = {
    "X": (150, 120, 90),
    "P": (90, 90, 100),
    "O": (230, 200, 120),
    "D": (220, 220, 235),
    "S": (120, 180, 120),
    " ": (236, 226, 200),
}
_OBJECT = {"onion": (230, 190, 40), "dish": (250, 250, 250), "soup": (210, 120, 40)}
_CHEF = [(40, 90, 230), (40, 170, 80)]


def pot_status(soup: Any | None) -> str:
    """One pot in words: empty, n/3 onions, cooking t/T turns, or ready."""
    if soup is None:
        return "empty"
    if soup.is_ready:
        return "soup ready"
    if soup.is_cooking:
        return f"cooking {soup._cooking_tick}/{soup.cook_time} turns"
    return f"{len(soup.ingredients)}/3 onions"


def draw_overcooked(raw: Any, partner_last: str | None) -> Image.Image:
    """The kitchen, both chefs (blue = you, green = partner) and objects; above each pot its
    number and a cooking bar; on the right each pot's state and the partner's last action."""
    mdp, state = raw.gym_env.base_mdp, raw.gym_env.base_env.state
    terrain = mdp.terrain_mtx
    c, top = OC_CELL, MARGIN
    rows, cols = len(terrain), len(terrain[0])
    image, draw = _canvas(cols * c, rows * c, top=top)

    def box(x: int, y: int, pad: int = 0) -> tuple[int, int, int, int]:
        return x * c + pad, top + y * c + pad, (x + 1) * c - 1 - pad, top + (y + 1) * c - 1 - pad

    for y, row in enumerate(terrain):
        for x, t in enumerate(row):
            draw.rectangle(box(x, y), fill=_TERRAIN.get(t, (200, 200, 200)), outline=(110, 100, 90))
            if t in "ODS":
                draw.text(
                    ((x + 0.5) * c, top + (y + 0.5) * c),
                    {"O": "onions", "D": "plates", "S": "serve"}[t],
                    fill=(40, 40, 40),
                    font=_font(11),
                    anchor="mm",
                )
    pots = sorted(mdp.get_pot_locations())
    lines = ["Pots:"]
    for i, (x, y) in enumerate(pots, start=1):
        soup = state.objects.get((x, y))
        draw.ellipse(box(x, y, 12), fill=(50, 50, 55), outline=(20, 20, 20), width=2)
        if soup is not None and soup.name == "soup":
            n = len(soup.ingredients)
            for k in range(n):
                draw.ellipse(
                    (x * c + 18 + k * 9, top + y * c + 26, x * c + 26 + k * 9, top + y * c + 34),
                    fill=_OBJECT["onion"],
                )
        else:
            soup = None
        lines.append(f"  pot {i}: {pot_status(soup)}")
        if y == 0:  # the pot's number and progress bar in the strip above it
            draw.text((x * c + 8, top // 2), str(i), fill=INFO_TEXT, font=_font(12), anchor="lm")
            x0, x1 = x * c + 20, (x + 1) * c - 6
            draw.rectangle((x0, 7, x1, top - 7), outline=INFO_DIM)
            if soup is not None and not soup.is_idle:
                frac = min(1.0, soup._cooking_tick / max(1, soup.cook_time))
                draw.rectangle(
                    (x0 + 1, 8, x0 + 1 + int((x1 - x0 - 2) * frac), top - 8),
                    fill=(90, 200, 90) if soup.is_ready else (230, 150, 40),
                )
    for (x, y), obj in state.objects.items():
        if (x, y) not in pots:
            draw.ellipse(box(x, y, 20), fill=_OBJECT.get(obj.name, (200, 0, 200)))
    for i, player in enumerate(state.players):
        x, y = player.position
        draw.ellipse(box(x, y, 10), fill=_CHEF[i], outline=(20, 20, 20), width=2)
        dx, dy = player.orientation
        cx, cy = x * c + c // 2 + dx * 20, top + y * c + c // 2 + dy * 20
        draw.ellipse((cx - 5, cy - 5, cx + 5, cy + 5), fill=(20, 20, 20))
        if player.held_object is not None:
            hx, hy = x * c + c // 2 - dx * 10, top + y * c + c // 2 - dy * 10
            draw.ellipse(
                (hx - 7, hy - 7, hx + 7, hy + 7),
                fill=_OBJECT.get(player.held_object.name, (200, 0, 200)),
            )
    lines += [
        "",
        "You: blue chef",
        "Partner: green chef",
        f"Partner's last action: {_DIRECTION_WORD.get(partner_last or '', 'none yet')}",
    ]
    _lines(draw, cols * c + 10, top + 6, lines)
    return image
