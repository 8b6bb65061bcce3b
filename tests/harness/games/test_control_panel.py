"""The RealtimeGym control panel (layout, rendering, hit-testing) and the key mapping."""

from __future__ import annotations

import pytest
from PIL import Image

from computer_env.base import Click, Hotkey, KeyPress, MoveTo, TypeText
from computer_env.realtimegym import (
    PANEL_HEIGHT,
    SPECS,
    ControlPanel,
    action_to_key,
    key_to_action,
)
from computer_env.realtimegym.inputs import input_to_action
from computer_env.realtimegym.panel import BACKGROUND, BUTTON_FILL
from tests.harness.helpers.pixels import rgb

GAMES = sorted(SPECS)


@pytest.mark.parametrize("game", GAMES)
def test_one_button_per_action_inside_the_panel(game: str) -> None:
    panel = ControlPanel(game, 400, top=300)
    assert [b.action for b in panel.buttons] == list(SPECS[game].actions)
    boxes = [b.box for b in panel.buttons]
    for x0, y0, x1, y1 in boxes:
        assert 0 <= x0 < x1 <= panel.width and 300 <= y0 < y1 <= 300 + PANEL_HEIGHT
    for (_, _, right, _), (left, _, _, _) in zip(boxes, boxes[1:]):
        assert right <= left  # no overlap, left to right


@pytest.mark.parametrize("game", GAMES)
def test_clicks_on_each_button_pick_its_action(game: str) -> None:
    panel = ControlPanel(game, 540, top=600)
    for button in panel.buttons:
        x0, y0, x1, y1 = button.box
        for x, y in (button.center, (x0, y0), (x1 - 1, y1 - 1)):
            assert panel.action_at(x, y) == button.action
            assert input_to_action(Click(x=x, y=y), game, panel) == button.action
        assert input_to_action(Click(x=x0 + 2, y=y0 + 2, button="right"), game, panel) is None


@pytest.mark.parametrize("game", GAMES)
def test_clicks_outside_buttons_map_to_nothing(game: str) -> None:
    panel = ControlPanel(game, 540, top=600)
    first, last = panel.buttons[0], panel.buttons[-1]
    outside = [
        (10, 10),
        (270, 599),
        (first.box[0] - 1, first.center[1]),
        (last.box[2], last.center[1]),
        (first.center[0], 600 + 2),
        (-5, 650),
    ]
    for x, y in outside:
        assert panel.action_at(x, y) is None
        assert input_to_action(Click(x=x, y=y), game, panel) is None


def test_narrow_frame_gets_a_panel_wide_enough_for_its_buttons() -> None:
    panel = ControlPanel("overcooked", 100, top=50)
    assert panel.width == ControlPanel.min_width("overcooked") > 100
    frame = Image.new("RGB", (100, 50), (255, 0, 0))
    shot = panel.compose(frame)
    assert shot.size == (panel.width, 50 + PANEL_HEIGHT)
    assert shot.getpixel((panel.width // 2, 25)) == (255, 0, 0)  # the frame is centred


@pytest.mark.parametrize("game", GAMES)
def test_rendered_buttons_carry_text(game: str) -> None:
    panel = ControlPanel(game, 540, top=0)
    image = panel.render(status="Turn 3/100   Score 7")
    assert image.size == (540, PANEL_HEIGHT)
    for button in panel.buttons:
        x0, y0, x1, y1 = button.box
        inner = image.crop((x0 + 4, y0 + 4, x1 - 4, y1 - 4))
        colours = {rgb(c): n for n, c in inner.getcolors(maxcolors=100_000) or []}
        assert colours.get(BUTTON_FILL, 0) > inner.width * inner.height // 2  # a button face
        dark = sum(n for c, n in colours.items() if sum(c) < 200)
        assert dark > 20, f"no label drawn on {button.label}"
        assert button.label and button.key_hint
    status_strip = image.crop((0, 0, 300, 20))
    assert any(sum(rgb(c)) > 600 for _, c in status_strip.getcolors(maxcolors=100_000) or [])
    assert panel.render().crop((0, 0, 300, 20)).getcolors() == [(6000, BACKGROUND)]


def test_labels_differ_between_buttons() -> None:
    panel = ControlPanel("snake", 540)
    image = panel.render()
    crops = [image.crop(b.box).tobytes() for b in panel.buttons]
    assert len(set(crops)) == len(crops)


@pytest.mark.parametrize(
    ("key", "freeway", "snake", "overcooked"),
    [
        ("w", "U", "U", "D"),
        ("W", "U", "U", "D"),
        ("up", "U", "U", "D"),
        ("s", "D", "D", "U"),
        ("down", "D", "D", "U"),
        ("a", None, "L", "L"),
        ("left", None, "L", "L"),
        ("d", None, "R", "R"),
        ("right", None, "R", "R"),
        ("f", None, None, "I"),
        ("space", "S", "S", "S"),
        ("enter", None, None, None),
        ("x", None, None, None),
        ("ctrl", None, None, None),
    ],
)
def test_key_to_action(
    key: str, freeway: str | None, snake: str | None, overcooked: str | None
) -> None:
    assert key_to_action(key, "freeway") == freeway
    assert key_to_action(key, "snake") == snake
    assert key_to_action(key, "overcooked") == overcooked


@pytest.mark.parametrize("game", GAMES)
def test_action_to_key_inverts_key_to_action(game: str) -> None:
    for action in SPECS[game].actions:
        assert key_to_action(action_to_key(action, game), game) == action


def test_other_inputs_map_to_nothing_but_single_keys_do() -> None:
    panel = ControlPanel("snake", 400, top=300)
    assert input_to_action(KeyPress(key="left"), "snake", panel) == "L"
    assert input_to_action(Hotkey(keys=["d"]), "snake", panel) == "R"
    assert input_to_action(TypeText(text="w"), "snake", panel) == "U"
    assert input_to_action(Hotkey(keys=["ctrl", "w"]), "snake", panel) is None
    assert input_to_action(TypeText(text="wasd"), "snake", panel) is None
    assert input_to_action(MoveTo(x=1, y=1), "snake", panel) is None


def test_unknown_game_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown game"):
        key_to_action("w", "pacman")


# ----- what a player needs, drawn beside the board (never over a cell) ---------------------


def _changed_box(a: Image.Image, b: Image.Image) -> tuple[int, int, int, int] | None:
    from PIL import ImageChops

    assert a.size == b.size
    return ImageChops.difference(a.convert("RGB"), b.convert("RGB")).getbbox()


def test_snake_button_reads_keep_going() -> None:
    panel = ControlPanel("snake", 600, top=0)
    assert [b.label for b in panel.buttons if panel.action_at(*b.center) == "S"] == ["Keep going"]
    assert [b.label for b in ControlPanel("freeway", 540).buttons] == ["Up", "Down", "Stay"]


def test_freeway_lane_speeds_are_drawn_beside_the_road() -> None:
    from types import SimpleNamespace

    from computer_env.realtimegym.draw import FREEWAY_CELL, draw_freeway, lane_speed

    assert [lane_speed(s) for s in (1, 3, -2, 0.5, -1 / 3)] == [
        "1 cell / turn",
        "1 cell / 3 turns",
        "1 cell / 2 turns",
        "2 cells / turn",
        "3 cells / turn",
    ]
    slow = SimpleNamespace(pos=9, cars=[[2, 3, 0, 3, 1], [None, 5, None, None, None]])
    fast = SimpleNamespace(pos=9, cars=[[2, 3, 0, 1, 1], [None, 5, None, None, None]])
    left = SimpleNamespace(pos=9, cars=[[2, 3, 0, -3, 1], [None, 5, None, None, None]])
    board_right = 9 * FREEWAY_CELL
    box = _changed_box(draw_freeway(slow), draw_freeway(fast))
    assert box is not None and box[0] >= board_right  # only the lane's label changed
    assert 3 * FREEWAY_CELL <= box[1] and box[3] <= 4 * FREEWAY_CELL  # on lane 3's row
    moved = _changed_box(draw_freeway(slow), draw_freeway(left))
    assert moved is not None and moved[0] < board_right  # direction also turns the car


def test_snake_apple_lifespans_are_listed_beside_the_board() -> None:
    from types import SimpleNamespace

    from computer_env.realtimegym.draw import MARGIN, SNAKE_CELL, draw_snake

    def state(life: int) -> SimpleNamespace:
        attrs: list[list[object]] = [[0] * 8 for _ in range(8)]
        attrs[2][5] = (life, 1)
        return SimpleNamespace(
            B=8,
            obstacle=[(4, 4)],
            food=[(2, 5)],
            food_attributes=attrs,
            snake=[(3, 3), (3, 2)],
            dir="U",
        )

    box = _changed_box(draw_snake(state(9)), draw_snake(state(3)))
    assert box is not None and box[0] >= MARGIN + 8 * SNAKE_CELL  # only the side list changed
