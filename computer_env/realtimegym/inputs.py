"""Turning an agent's ``InputEvent`` into a game action (keys and panel clicks)."""

from __future__ import annotations

from computer_env.base import Click, Hotkey, KeyPress, TypeText, describe
from computer_env.realtimegym.keymap import key_to_action
from computer_env.realtimegym.panel import ControlPanel

__all__ = ["describe", "input_to_action"]  # describe: the contract's, re-exported


def input_to_action(event: object, game: str, panel: ControlPanel) -> str | None:
    """The action an input plays, or None when it maps to nothing.

    Keys (``KeyPress``, a one-key ``Hotkey``, or typing exactly one character) go through
    :func:`key_to_action`; a left click on a panel button plays that button's action.
    """
    if isinstance(event, KeyPress):
        return key_to_action(event.key, game)
    if isinstance(event, Hotkey) and len(event.keys) == 1:
        return key_to_action(event.keys[0], game)
    if isinstance(event, TypeText) and len(event.text) == 1 and not event.press_enter:
        return key_to_action(event.text, game)
    if isinstance(event, Click) and event.button == "left":
        return panel.action_at(event.x, event.y)
    return None
