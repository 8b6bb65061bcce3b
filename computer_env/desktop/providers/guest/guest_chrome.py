"""Chromium as OSWorld's tasks expect Google Chrome, in the local desktop and the guest image.

- ``google-chrome`` / ``google-chrome-stable``: Chromium with Chrome's profile folder
  (``~/.config/google-chrome``) and quiet-start flags; the process is called ``chrome`` (so
  OSWorld's ``pkill chrome`` ends it; see :func:`make_chrome_dir`) and its first window
  "Google Chrome" (the name tasks activate it by). ``chromium``: the same browser under its own name.
  Both run with ``--no-sandbox``: the desktop forbids nested user namespaces, which Chromium's
  own sandbox needs; the desktop's sandbox is the boundary.
- ``google-chrome.desktop``: the menu entry (``xdg-open`` of a web page).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from computer_env import guest_programs
from computer_env.desktop.providers.guest.home_template import build_once

GUEST_CHROME_DIR = "/opt/desktop/chrome"  # see make_chrome_dir()
CHROME_LINK = f"{GUEST_CHROME_DIR}/chrome"
CHROMIUM_DIR = Path("/usr/lib/chromium")
CHROMIUM_BINARY = str(CHROMIUM_DIR / "chromium")

CHROME_SCRIPTS: dict[str, str] = {
    "chromium": guest_programs.fill("chromium.sh", CHROMIUM_BINARY=CHROMIUM_BINARY),
    "google-chrome": guest_programs.fill("google-chrome.sh", CHROME_LINK=CHROME_LINK),
    "google-chrome-stable": guest_programs.fill("google-chrome.sh", CHROME_LINK=CHROME_LINK),
}
"""The launchers in the desktop's ``/opt/desktop/bin``, by name."""

CHROME_DESKTOP_ENTRY = """\
[Desktop Entry]
Version=1.0
Name=Google Chrome
GenericName=Web Browser
Comment=Access the Internet
Exec=/usr/bin/google-chrome-stable %U
StartupNotify=true
Terminal=false
Icon=chromium
Type=Application
Categories=Network;WebBrowser;
MimeType=text/html;text/xml;application/xhtml+xml;x-scheme-handler/http;x-scheme-handler/https;
StartupWMClass=Chromium
"""


def make_chrome_dir(dest: Path) -> None:
    """Chromium's program folder with the binary under the name ``chrome``.

    Chromium names its process after the file it runs from (``/proc/self/exe``), so a symlink
    is not enough for ``pkill chrome``: ``dest/chrome`` is a hard link to (or, across file
    systems, a copy of) Chromium's binary, every other entry a symlink to the original."""
    dest.mkdir(parents=True)
    for entry in CHROMIUM_DIR.iterdir():
        if entry.name != "chromium":
            os.symlink(entry, dest / entry.name)
    try:
        os.link(CHROMIUM_BINARY, dest / "chrome")
    except OSError:
        shutil.copy2(CHROMIUM_BINARY, dest / "chrome")
    os.chmod(dest, 0o755)


def ensure_chrome_dir(base: Path) -> Path | None:
    """:func:`make_chrome_dir` under ``base`` (on the disk, not in memory), for the installed
    Chromium (a new version gets a new folder, old ones are removed); None without Chromium."""
    try:
        st = os.stat(CHROMIUM_BINARY)
    except OSError:
        return None
    target = base / f"chrome-{st.st_ino}-{int(st.st_mtime)}"
    if target.is_dir():
        return target
    for old in base.glob("chrome-*"):
        shutil.rmtree(old, ignore_errors=True)
    return build_once(target, make_chrome_dir)
