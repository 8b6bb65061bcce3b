"""Typing any Unicode text with ``xdotool type`` (``pyautogui.write`` drops non-ASCII)."""

from __future__ import annotations

import subprocess


class TypingError(Exception):
    """xdotool failed or is missing."""


def type_text(text: str, *, delay_ms: int = 12, timeout: float | None = None) -> None:
    """Type ``text`` into the focused window; newlines become Return presses."""
    if timeout is None:
        timeout = 30.0 + len(text) * (delay_ms + 5) / 1000.0
    try:
        result = subprocess.run(
            ["xdotool", "type", "--clearmodifiers", "--delay", str(delay_ms), "--file", "-"],
            input=text.encode("utf-8"),
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError:
        raise TypingError("xdotool is not installed") from None
    except subprocess.TimeoutExpired:
        raise TypingError(f"typing did not finish within {timeout:g} s") from None
    if result.returncode != 0:
        raise TypingError(f"xdotool failed ({result.returncode}): {result.stderr.decode(errors='replace').strip()}")
