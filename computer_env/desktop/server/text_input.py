"""Typing any Unicode text with ``xdotool type`` (``pyautogui.write`` drops non-ASCII).

Newlines are sent as Return key presses: ``xdotool type`` turns ``\\n`` into a Linefeed
keysym, which xterm accepts but GTK dialogs and LibreOffice ignore.
"""

from __future__ import annotations

import subprocess
import time


class TypingError(Exception):
    """xdotool failed or is missing."""


def _xdotool(args: list[str], stdin: bytes | None, deadline: float) -> None:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TypingError("typing did not finish in time")
    try:
        result = subprocess.run(
            ["xdotool", *args], input=stdin, capture_output=True, timeout=left, check=False
        )
    except FileNotFoundError:
        raise TypingError("xdotool is not installed") from None
    except subprocess.TimeoutExpired:
        raise TypingError("typing did not finish in time") from None
    if result.returncode != 0:
        message = result.stderr.decode(errors="replace").strip()
        raise TypingError(f"xdotool failed ({result.returncode}): {message}")


def type_text(text: str, *, delay_ms: int = 12, timeout: float | None = None) -> None:
    """Type ``text`` into the focused window; each newline is a Return press."""
    if timeout is None:
        timeout = 30.0 + len(text) * (delay_ms + 5) / 1000.0
    deadline = time.monotonic() + timeout
    lines = text.replace("\r\n", "\n").split("\n")
    for i, line in enumerate(lines):
        if line:
            _xdotool(
                ["type", "--clearmodifiers", "--delay", str(delay_ms), "--file", "-"],
                line.encode("utf-8"),
                deadline,
            )
        if i < len(lines) - 1:
            _xdotool(["key", "--clearmodifiers", "Return"], None, deadline)
