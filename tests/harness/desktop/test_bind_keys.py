"""The keymap plan of the fallback typing's in-desktop script (pure: no X server here; the
script itself runs in ``test_desktop_client.test_falls_back_to_osworld_api_without_capabilities``)."""

from __future__ import annotations

from computer_env.desktop.client._bind_keys import plan
from computer_env.desktop.keysyms import keysym_for

EURO, E_ACUTE, A = keysym_for("€"), keysym_for("é"), keysym_for("a")


def test_missing_keysyms_take_unused_keycodes_after_the_scratch_one() -> None:
    rows = {8: [0, 0], 9: [0xFF1B, 0], 38: [A, 0x41], 93: [0, 0], 97: [0, 0]}
    binding, left = plan(rows, [EURO, A, E_ACUTE, EURO])
    assert binding == {93: EURO, 97: E_ACUTE}  # 8, the first unused, stays xdotool's scratch
    assert left == []


def test_a_keysym_bound_before_is_not_bound_again() -> None:
    rows = {8: [0, 0], 93: [EURO, EURO], 97: [0, 0]}
    assert plan(rows, [EURO]) == ({}, [])


def test_keysyms_beyond_the_unused_keycodes_are_left_and_named() -> None:
    rows = {8: [0, 0], 93: [0, 0]}
    binding, left = plan(rows, [EURO, E_ACUTE])
    assert binding == {93: EURO} and left == [E_ACUTE]


def test_keysyms_follow_x11s_rule_latin1_as_is_others_offset() -> None:
    assert keysym_for("é") == 0xE9 and keysym_for("€") == 0x010020AC
