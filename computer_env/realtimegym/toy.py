"""A tiny scripted game for tests and demos of the pacing clock (no RealtimeGym needed).

The game is a counter on a track: ``U`` moves the marker one step up, ``D`` one step down, any
other action keeps it. The score is the marker's height; the game ends when the marker reaches
``goal`` or after ``max_turns`` turns. Every action the game received is kept in ``applied``
(index ``k`` = turn ``k + 1``), so a test can check which action landed on which turn.
Build it through :func:`toy_factory` as ``GameComputerEnv(..., game_factory=toy_factory())``.
"""

from __future__ import annotations

from typing import Any

from PIL import Image, ImageDraw

from computer_env.realtimegym.backend import GameBackend, GameFactory
from computer_env.realtimegym.games import MAX_TURNS


class ScriptedGame:
    """The toy game (see the module docstring)."""

    def __init__(
        self, *, goal: int = 5, max_turns: int = MAX_TURNS, size: tuple[int, int] = (360, 240)
    ) -> None:
        self.goal = goal
        self.max_turns = max_turns
        self.size = size
        self.applied: list[str] = []
        self.height = 0
        self.turn = 0
        self.terminal = False
        self.raw = self

    @property
    def score(self) -> float:
        """The marker's height."""
        return float(self.height)

    def reset(self) -> None:
        """Start over."""
        self.applied.clear()
        self.height = 0
        self.turn = 0
        self.terminal = False

    def advance(self, action: str) -> None:
        """Play one turn."""
        if self.terminal:
            raise RuntimeError("the toy game is over")
        self.applied.append(action)
        self.height += {"U": 1, "D": -1}.get(action, 0)
        self.turn += 1
        self.terminal = self.height >= self.goal or self.turn >= self.max_turns

    def render(self) -> Image.Image:
        """A striped track with the marker and the turn number."""
        w, h = self.size
        image = Image.new("RGB", (w, h), (30, 90, 40))
        draw = ImageDraw.Draw(image)
        for i in range(0, h, 20):
            draw.rectangle((0, i, w, i + 9), fill=(60, 140, 70))
        y = int(h - 20 - (h - 40) * max(0, min(self.height, self.goal)) / self.goal)
        draw.ellipse((w // 2 - 12, y - 12, w // 2 + 12, y + 12), fill=(250, 220, 40))
        draw.text((8, 8), f"Turn {self.turn}", fill=(255, 255, 255))
        return image


def toy_factory(**kwargs: Any) -> GameFactory:
    """A ``game_factory`` that builds :class:`ScriptedGame` (``kwargs`` go to its constructor).

    The factory keeps the games it built in ``factory.games`` for inspection.
    """
    games: list[ScriptedGame] = []

    def factory(game: str, load: str, seed: int) -> GameBackend:
        made = ScriptedGame(**kwargs)
        games.append(made)
        return made

    factory.games = games  # type: ignore[attr-defined]
    return factory
