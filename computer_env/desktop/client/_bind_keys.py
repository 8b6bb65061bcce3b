"""Bind characters to unused keycodes of the desktop's X keymap for good, so that ``xdotool type``
finds each one there and never remaps a scratch key.

This file is a script that the client runs *in the desktop* when the server is an upstream
OSWorld one (no ``/type``): its source goes through ``/execute`` as ``python -c SOURCE
KEYSYM...``. It imports only python-xlib (pyautogui brings it wherever OSWorld's actions run)
and nothing of this project.

Why: ``xdotool type`` binds a character missing from the keymap to a scratch keycode, presses
it and reverts the binding at once. Toolkits fetch the keymap lazily, after the MappingNotify,
so an app that handles the key press after the revert reads the old keymap and the character
is lost (xterm typed ``echo  > f`` for ``echo € > f``). A binding that stays is read in order:
the app handles the MappingNotify before the key press, and the keymap it then fetches still
holds the character. The guest server's own typing does the same with recycling
(``computer_env.desktop.server.input.text_input``); here places are only taken, never
rebound, so a character bound once stays typeable for the desktop's life.

Arguments: keysyms in decimal. Prints ``bound N left M``: M keysyms found no unused keycode
(xdotool's scratch key types those, with the race). The first unused keycode is left free for
xdotool's scratch key.
"""

from __future__ import annotations

import sys

RESERVE_KEYCODES = 1


def plan(rows: dict[int, list[int]], keysyms: list[int]) -> tuple[dict[int, int], list[int]]:
    """Which unused keycode takes which missing keysym; and the keysyms no keycode is left for."""
    present = {k for row in rows.values() for k in row if k}
    free = [kc for kc in sorted(rows) if not any(rows[kc])][RESERVE_KEYCODES:]
    missing = [k for k in dict.fromkeys(keysyms) if k not in present]
    return dict(zip(free, missing)), missing[len(free) :]


def main(argv: list[str]) -> int:
    from Xlib import display  # the desktop's python-xlib

    dpy = display.Display()
    low, high = dpy.display.info.min_keycode, dpy.display.info.max_keycode
    full = dpy.get_keyboard_mapping(low, high - low + 1)
    rows = {low + i: [int(k) for k in row] for i, row in enumerate(full)}
    binding, left = plan(rows, [int(a) for a in argv])
    for keycode, keysym in binding.items():
        dpy.change_keyboard_mapping(keycode, [[keysym, keysym]])  # both levels: Shift types it too
    dpy.sync()
    print(f"bound {len(binding)} left {len(left)}")
    dpy.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
