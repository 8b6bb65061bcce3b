"""Input confirmed on Qt apps too (VLC, on a real local desktop): Qt answers ``_NET_WM_PING`` to
the root for StructureNotify, where GTK answers for SubstructureNotify. Before both were heard,
every action on VLC waited the whole 5 s ping timeout and was never confirmed, and readiness
(which asks the same ping) could not have passed for VLC. A dialog the input hid never answers:
the delivery confirmation asks the window active after it instead of waiting."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from computer_env.desktop.client import DesktopClient
from computer_env.osworld.prepare.readiness import x_window_state
from tests.harness.helpers.localdesk import local_desktop
from tests.harness.helpers.polling import wait_for

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(
        os.geteuid() != 0 or not shutil.which("bwrap"),
        reason="the local sandbox needs root and bubblewrap",
    ),
    pytest.mark.skipif(not shutil.which("vlc"), reason="VLC is not installed"),
]

CONFIRM = (
    "from Xlib import display\n"
    "from computer_env.desktop.server.input.delivery import confirm_delivered\n"
    "print(confirm_delivered(display.Display()))"
)
PING = (
    "from Xlib import display\n"
    "from computer_env.desktop.server.input.delivery import ping_window\n"
    "print(ping_window(display.Display(), {window}, 10))"
)


@pytest.fixture(scope="module")
def client() -> Iterator[DesktopClient]:
    with local_desktop() as desktop, DesktopClient.from_handle(desktop.handle) as c:
        yield c


def _last_line(client: DesktopClient, code: str) -> str:
    result = client.run_pyautogui(code)
    assert result.ok, result
    return result.output.strip().splitlines()[-1]


def _active(client: DesktopClient, title: str) -> int:
    """Wait until the active window's title holds ``title``; its id."""

    def active() -> int:
        r = client.execute("xdotool getactivewindow getwindowname getactivewindow", shell=True)
        lines = (r.output or "").splitlines()
        return int(lines[1]) if len(lines) == 2 and title in lines[0] else 0

    return wait_for(active, f"{title!r} to be the active window", 60, interval=0.1)


def test_vlc_answers_the_ping_and_a_closed_dialog_is_not_waited_for(client: Any) -> None:
    client.launch("VLC_VERBOSE=-1 vlc --no-audio", shell=True)
    vlc = _active(client, "VLC media player")
    assert x_window_state(client)["pong"] is True  # readiness hears VLC
    assert _last_line(client, CONFIRM) == "True"  # so does each action's confirmation
    assert client.run_pyautogui("pyautogui.hotkey('ctrl', 'p')").ok
    dialog = _active(client, "Simple Preferences")
    assert dialog != vlc
    assert _last_line(client, PING.format(window=dialog)) == "True"
    # Escape hides the dialog: the window active after it confirms, or there is none to ask
    assert _last_line(client, "pyautogui.press('escape')\n" + CONFIRM) in ("True", "None")
    assert _last_line(client, PING.format(window=dialog)) == "None"  # hidden: not waited for
