"""Per-game facts: the actions, the default action, screen directions, the instruction, loads.

Action letters are RealtimeGym's own (``U``/``D``/``L``/``R``/``I``/``S``). On screen the agent
only sees *directions* (up/down/left/right on the rendered frame), interact and stay; each game
maps those to its letters. Freeway and Snake draw "U" as up on screen. Overcooked's renderer
draws the kitchen with row 0 at the top while RealtimeGym's ``U`` means ``SOUTH`` (one row
*down* on screen), so there the on-screen "up" is the game's ``D`` and vice versa.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Intent = Literal["up", "down", "left", "right", "interact", "stay"]
"""What an input asks for, in screen terms."""

GAMES: tuple[str, ...] = ("freeway", "snake", "overcooked")
LOADS: tuple[str, ...] = ("E", "M", "H")
SEEDS: tuple[int, ...] = tuple(range(8))
LOAD_VERSION: dict[str, str] = {"E": "v0", "M": "v1", "H": "v2"}
MAX_TURNS = 100
"""Every RealtimeGym episode ends after at most 100 turns."""


@dataclass(frozen=True)
class GameSpec:
    """What the harness needs to know about one game."""

    name: str
    env_prefix: str
    intents: dict[Intent, str]
    """Screen intent -> game action letter, in the order the buttons are drawn."""
    default_action: str
    instruction: str
    labels: dict[Intent, str] = field(default_factory=dict)
    """Button labels that differ from the intent's name (Snake's S keeps the snake going)."""
    drops_late_actions: bool = True
    """RealtimeGym's planning agent drops plan entries meant for turns that have passed
    (``skip_action`` in its ``agile_eval``): True for Freeway and Snake, False for Overcooked,
    whose late actions are still played."""

    @property
    def actions(self) -> tuple[str, ...]:
        """The game's action letters, in button order."""
        return tuple(self.intents.values())

    def intent_of(self, action: str) -> Intent:
        """The screen intent whose button plays ``action``."""
        for intent, letter in self.intents.items():
            if letter == action:
                return intent
        raise KeyError(f"{self.name} has no action {action!r}")

    def env_id(self, load: str) -> str:
        """RealtimeGym's id for this game at a cognitive load, e.g. ``Freeway-v2``."""
        return f"{self.env_prefix}-{LOAD_VERSION[load]}"


# The default actions follow the reference harness's prompt modules (``DEFAULT_ACTION``):
# Freeway "U", Snake "S" (keep going), Overcooked "S".
SPECS: dict[str, GameSpec] = {
    "freeway": GameSpec(
        name="freeway",
        env_prefix="Freeway",
        intents={"up": "U", "down": "D", "stay": "S"},
        default_action="U",
        instruction=(
            "Play Freeway: get the chicken to the top of the road (the pin) as quickly as "
            "you can without being hit by a car. Being hit sends it back to the bottom."
        ),
    ),
    "snake": GameSpec(
        name="snake",
        env_prefix="Snake",
        intents={"up": "U", "down": "D", "left": "L", "right": "R", "stay": "S"},
        labels={"stay": "Keep going"},
        default_action="S",
        instruction=(
            "Play Snake: steer the snake to eat as many apples as you can before the game "
            "ends, without running into a wall, an obstacle or the snake's own body."
        ),
    ),
    "overcooked": GameSpec(
        name="overcooked",
        env_prefix="Overcooked",
        intents={"up": "D", "down": "U", "left": "L", "right": "R", "interact": "I", "stay": "S"},
        default_action="S",
        drops_late_actions=False,
        instruction=(
            "Play Overcooked as the chef in the blue hat, together with the other chef: "
            "cook onion soup (three onions in a pot) and serve it on a plate at the serving "
            "counter as many times as you can before the game ends."
        ),
    ),
}


def game_spec(game: str) -> GameSpec:
    """The spec of ``game`` (``freeway``, ``snake`` or ``overcooked``)."""
    try:
        return SPECS[game.lower()]
    except KeyError:
        raise ValueError(f"unknown game {game!r}; choose from {', '.join(GAMES)}") from None


def check_load(load: str) -> str:
    """Validate a cognitive load name (``E``/``M``/``H``)."""
    if load not in LOAD_VERSION:
        raise ValueError(f"unknown load {load!r}; choose from {', '.join(LOADS)}")
    return load
