"""What pyautogui types arrives as typed: every printable ASCII character through
``pyautogui.typewrite`` (OSWorld's action space, run by the desktop's server) into a real
terminal on a real local desktop. On X's default pc105 keymap, "<" came out as ">" (pyautogui
pressed shift + keycode 94, the first key carrying ``less``): a model could not type it."""

from __future__ import annotations

import os
import shutil
import string

import pytest

from computer_env.desktop.client import DesktopClient
from tests.harness.helpers.localdesk import guest_sh, local_desktop
from tests.harness.helpers.polling import wait_for

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(
        os.geteuid() != 0 or not shutil.which("bwrap"),
        reason="the local sandbox needs root and bubblewrap",
    ),
]

TEXT = "".join(c for c in string.printable if c.isprintable())


def test_every_printable_character_arrives() -> None:
    with local_desktop(skip_unavailable=True) as provider:
        handle = provider.handle
        assert handle is not None
        client = DesktopClient.from_handle(handle)
        try:
            guest_sh(
                handle,
                "nohup xterm -title keys -e sh -c "
                "'stty -icanon -echo; cat > /tmp/keys.out' >/dev/null 2>&1 &",
            )
            wait_for(
                lambda: "keys" in guest_sh(handle, "wmctrl -l")["output"],
                timeout=60,
                what="the terminal window",
            )
            guest_sh(handle, "wmctrl -a keys")
            code = f"import pyautogui\npyautogui.typewrite({TEXT!r})\n"
            answer = client.run_python(code, timeout=120)
            assert answer.get("return_code") == 0, answer
            wait_for(
                lambda: len(guest_sh(handle, "cat /tmp/keys.out")["output"]) >= len(TEXT),
                timeout=60,
                what="every character in the file",
            )
            typed = guest_sh(handle, "cat /tmp/keys.out")["output"]
            wrong = [(want, got) for want, got in zip(TEXT, typed) if want != got]
            assert typed == TEXT, wrong[:10]
        finally:
            client.close()
