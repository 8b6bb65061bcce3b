"""The persistent pyautogui interpreter: a child process that runs code blocks on request.

Protocol (one JSON object a line): the parent writes ``{"code": "..."}`` on stdin; the worker
answers ``{"started": true}`` when it has taken the block, then ``{"status", "output", "error",
"returncode"}`` on its original stdout. ``pyautogui`` is
imported once; every block gets a fresh namespace in which OSWorld's prefix ran
(``PYAUTOGUI_PREFIX``: ``pyautogui`` and ``time`` imported, ``FAILSAFE = False``), and
``pyautogui.PAUSE = 0`` is restored before each block.
"""

from __future__ import annotations

import io
import json
import os
import sys
import traceback
from contextlib import redirect_stderr, redirect_stdout
from typing import Any

from computer_env.desktop.prefix import PYAUTOGUI_PREFIX

_PREFIX = compile(PYAUTOGUI_PREFIX, "<prefix>", "exec")


def _run_block(code: str, pyautogui: Any) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec(_PREFIX, namespace)  # noqa: S102 - OSWorld's own prefix
    pyautogui.PAUSE = 0
    out, err = io.StringIO(), io.StringIO()
    returncode = 0
    try:
        compiled = compile(code, "<actions>", "exec")
        with redirect_stdout(out), redirect_stderr(err):
            exec(compiled, namespace)  # noqa: S102 - running the agent's code is the point
    except SystemExit as exc:
        returncode = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException as exc:  # noqa: BLE001 - report anything the code raised
        tb = exc.__traceback__.tb_next if exc.__traceback__ else None  # drop this frame
        err.write("".join(traceback.format_exception(type(exc), exc, tb)))
        returncode = 1
    return {
        "status": "success" if returncode == 0 else "error",
        "output": out.getvalue(),
        "error": err.getvalue(),
        "returncode": returncode,
    }


def _confirm(pyautogui: Any, dpy: Any) -> Any:
    """After a block: wait until the focused app has handled its input (XSync and a
    ``_NET_WM_PING`` round trip, see ``delivery.confirm_delivered``); returns the display
    (opened on first use), None when there is no X display."""
    try:
        from Xlib import display as xdisplay

        from computer_env.desktop.server.input.delivery import confirm_delivered

        dpy = dpy or xdisplay.Display()
        confirm_delivered(dpy)
        return dpy
    except Exception:  # noqa: BLE001 - confirmation is best effort; the block's result stands
        traceback.print_exc()
        return None


def main() -> None:
    """Serve code blocks until stdin closes."""
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # stray C-level writes must not corrupt the protocol
    sys.stdout = sys.stderr
    import pyautogui

    dpy = None
    channel.write(json.dumps({"ready": True}) + "\n")
    channel.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        channel.write(json.dumps({"started": True}) + "\n")  # the block is taken: see actions.py
        channel.flush()
        result = _run_block(request["code"], pyautogui)
        dpy = _confirm(pyautogui, dpy)
        channel.write(json.dumps(result) + "\n")
        channel.flush()


if __name__ == "__main__":
    main()
