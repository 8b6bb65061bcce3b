"""The AT-SPI tree, produced by ``atspi_dump.py`` under Debian's Python (the venv has no ``gi``)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from computer_env.desktop.providers.guest.guest_chrome import CHROME_LINK

SYSTEM_PYTHON = Path("/usr/bin/python3")
HELPER = Path(__file__).with_name("atspi_dump.py")


class AccessibilityUnavailable(Exception):
    """No session bus / a11y bus, or the AT-SPI bindings are missing."""


def _run_helper(args: list[str], timeout: float) -> str:
    if not os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
        raise AccessibilityUnavailable(
            "no D-Bus session (DBUS_SESSION_BUS_ADDRESS unset): the accessibility tree needs the "
            "desktop to run under a session bus with at-spi2-core"
        )
    if not SYSTEM_PYTHON.exists():
        raise AccessibilityUnavailable(f"{SYSTEM_PYTHON} is missing (needs python3-gi)")
    try:
        result = subprocess.run(
            [str(SYSTEM_PYTHON), "-I", str(HELPER), *args],
            capture_output=True,
            text=True,
            errors="replace",  # app names and texts are whatever the apps say
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise AccessibilityUnavailable(f"the AT-SPI walk took longer than {timeout:g} s") from None
    if result.returncode != 0:
        reason = result.stderr.strip().splitlines()[-1:] or [f"exit code {result.returncode}"]
        raise AccessibilityUnavailable(f"AT-SPI helper failed: {reason[0]}")
    return result.stdout


def accessibility_tree(timeout: float = 90.0) -> str:
    """OSWorld's ``desktop-frame`` XML of every application on the a11y bus; the desktop's
    ``google-chrome`` (Chromium run from ``CHROME_LINK``) is the application "Google Chrome"
    there, as on OSWorld's image (see ``atspi_dump.app_name``)."""
    return _run_helper([f"--chrome-program={CHROME_LINK}"], timeout)


def terminal_output(timeout: float = 30.0) -> str | None:
    """Text of the focused terminal in the active window, if an accessible terminal has it."""
    return json.loads(_run_helper(["--terminal"], timeout))["output"]
