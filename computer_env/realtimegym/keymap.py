"""Keyboard mapping: W/A/S/D and arrows move, F interacts, Space stays."""

from __future__ import annotations

from computer_env.realtimegym.games import Intent, game_spec

KEY_INTENTS: dict[str, Intent] = {
    "w": "up",
    "up": "up",
    "arrowup": "up",
    "s": "down",
    "down": "down",
    "arrowdown": "down",
    "a": "left",
    "left": "left",
    "arrowleft": "left",
    "d": "right",
    "right": "right",
    "arrowright": "right",
    "f": "interact",
    "space": "stay",
    " ": "stay",
}
"""Key name (pyautogui style, case-insensitive) -> screen intent."""

INTENT_KEYS: dict[Intent, str] = {
    "up": "w",
    "down": "s",
    "left": "a",
    "right": "d",
    "interact": "f",
    "stay": "space",
}
"""The canonical key for each intent (shown on the buttons, used by the reference player)."""


def key_to_action(key: str, game: str) -> str | None:
    """The game action a key plays, or None when the key means nothing in ``game``."""
    intent = KEY_INTENTS.get(key.strip().lower() if key.strip() else key)
    if intent is None:
        return None
    return game_spec(game).intents.get(intent)


def action_to_key(action: str, game: str) -> str:
    """The canonical key that plays ``action`` in ``game`` (inverse of :func:`key_to_action`)."""
    return INTENT_KEYS[game_spec(game).intent_of(action)]
