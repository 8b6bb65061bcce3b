"""The on-screen control panel drawn below the game: one labelled button per action."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from computer_env.realtimegym.games import game_spec
from computer_env.realtimegym.keymap import INTENT_KEYS

PANEL_HEIGHT = 90
STATUS_HEIGHT = 24
MIN_BUTTON_WIDTH = 60
GAP = 6
BACKGROUND = (32, 34, 40)
BUTTON_FILL = (222, 226, 235)
BUTTON_EDGE = (120, 126, 140)
TEXT = (20, 20, 24)
STATUS_TEXT = (240, 240, 240)
_FONT_FILES = (
    "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Bold.ttf",
)


@lru_cache(maxsize=8)
def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    for name in _FONT_FILES:
        if Path(name).is_file():
            return ImageFont.truetype(name, size)
    return ImageFont.load_default(size=size)


@dataclass(frozen=True)
class Button:
    """One button: the game action it plays and its box ``(x0, y0, x1, y1)``, ends exclusive."""

    action: str
    intent: str
    label: str
    key_hint: str
    box: tuple[int, int, int, int]

    def contains(self, x: int, y: int) -> bool:
        """Whether the pixel ``(x, y)`` is on this button."""
        x0, y0, x1, y1 = self.box
        return x0 <= x < x1 and y0 <= y < y1

    @property
    def center(self) -> tuple[int, int]:
        """The button's centre pixel."""
        x0, y0, x1, y1 = self.box
        return (x0 + x1) // 2, (y0 + y1) // 2


class ControlPanel:
    """Layout, rendering and hit-testing of a game's control panel.

    Coordinates are pixels of the composed screenshot: the panel occupies rows
    ``top .. top + height`` and the full ``width``.
    """

    def __init__(self, game: str, width: int, *, top: int = 0, height: int = PANEL_HEIGHT) -> None:
        spec = game_spec(game)
        self.game = spec.name
        self.width = max(width, self.min_width(spec.name))
        self.top = top
        self.height = height
        n = len(spec.intents)
        button_w = (self.width - GAP * (n + 1)) // n
        y0, y1 = top + STATUS_HEIGHT, top + height - GAP
        self.buttons: list[Button] = []
        for i, (intent, action) in enumerate(spec.intents.items()):
            x0 = GAP + i * (button_w + GAP)
            self.buttons.append(
                Button(
                    action=action,
                    intent=intent,
                    label=spec.labels.get(intent, intent.capitalize()),
                    key_hint=INTENT_KEYS[intent].capitalize(),
                    box=(x0, y0, x0 + button_w, y1),
                )
            )

    @staticmethod
    def min_width(game: str) -> int:
        """The narrowest panel that fits every button of ``game``."""
        n = len(game_spec(game).intents)
        return n * MIN_BUTTON_WIDTH + (n + 1) * GAP

    def action_at(self, x: int, y: int) -> str | None:
        """The action of the button under pixel ``(x, y)``, or None when no button is there."""
        for button in self.buttons:
            if button.contains(x, y):
                return button.action
        return None

    def render(self, status: str = "") -> Image.Image:
        """The panel alone, ``width x height`` RGB, with ``status`` written on its top strip."""
        image = Image.new("RGB", (self.width, self.height), BACKGROUND)
        draw = ImageDraw.Draw(image)
        if status:
            draw.text(
                (GAP, STATUS_HEIGHT // 2), status, fill=STATUS_TEXT, font=_font(14), anchor="lm"
            )
        for button in self.buttons:
            x0, y0, x1, y1 = button.box
            box = (x0, y0 - self.top, x1 - 1, y1 - 1 - self.top)
            draw.rounded_rectangle(box, radius=6, fill=BUTTON_FILL, outline=BUTTON_EDGE, width=2)
            cx, cy = (x0 + x1) // 2, (y0 + y1) // 2 - self.top
            draw.text((cx, cy - 8), button.label, fill=TEXT, font=_font(14), anchor="mm")
            draw.text((cx, cy + 11), f"[{button.key_hint}]", fill=TEXT, font=_font(11), anchor="mm")
        return image

    def compose(self, frame: Image.Image, status: str = "") -> Image.Image:
        """The screenshot: ``frame`` centred above the panel (the panel must start at its bottom)."""
        canvas = Image.new("RGB", (self.width, self.top + self.height), BACKGROUND)
        canvas.paste(frame.convert("RGB"), ((self.width - frame.width) // 2, 0))
        canvas.paste(self.render(status), (0, self.top))
        return canvas
