"""Programs and files the local desktop adds on top of the host's read-only ``/usr``.

OSWorld's tasks call programs by the names they have on its Ubuntu image. Inside the sandbox
these come first on ``PATH`` (``/opt/desktop/bin``):

- ``google-chrome`` / ``google-chrome-stable`` and ``chromium``: Chromium as OSWorld's tasks
  expect Chrome (see :mod:`.guest_chrome`).
- ``sudo``: OSWorld's user/password semantics (user ``user``, password ``password``; ``-S``
  reads it from stdin, wrong passwords are refused like sudo does). The sandbox has no root to
  give, so the command then runs as the desktop user; what needs real root (installing
  packages, adding users) fails as it would for an unprivileged user.

- ``pip install`` (the server's interpreter is a read-only virtual environment) installs into
  ``~/.local/lib/pythonX.Y/site-packages``, as Ubuntu's pip falls back to a user installation;
  ``python`` imports from there after its own packages (``sitecustomize`` in
  ``/opt/desktop/python``).

``/usr/share/applications`` is replaced by a copy of the host's plus ``google-chrome.desktop``.
The session's D-Bus also listens on ``/run/user/1000/bus`` (OSWorld's tasks export that
address before ``gsettings`` and ``gnome-terminal``).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
from pathlib import Path

# CHROME_LINK, GUEST_CHROME_DIR, make_chrome_dir: also reached from here (docker/Dockerfile)
from computer_env import guest_programs
from computer_env.desktop.providers.guest.guest_chrome import (
    CHROME_DESKTOP_ENTRY,
    CHROME_LINK,
    CHROME_SCRIPTS,
    GUEST_CHROME_DIR,
    make_chrome_dir,
)
from computer_env.desktop.providers.guest.home_template import build_once

GUEST_TOOLS = "/opt/desktop/bin"
GUEST_PASSWORD = "password"  # OSWorld's CLIENT_PASSWORD
GUEST_PYTHON_DIR = "/opt/desktop/python"  # on PYTHONPATH: sitecustomize.py only

# Programs OSWorld's tasks use that no desktop here carries, and why (for `needs:` skips).
UNAVAILABLE: dict[str, str] = {
    "code": (
        "VS Code is not available offline here: Debian has no package, and no build reachable "
        "from apt, pip or npm behaves as the tasks expect (npm's electron and "
        "@vscode/test-electron download their binaries from the internet at install/run "
        "time; code-server is a browser-served VS Code with settings under "
        "~/.local/share/code-server instead of ~/.config/Code, windows titled 'code-server' "
        "instead of 'Visual Studio Code', and extensions from Open VSX over the internet)"
    ),
}

_SITECUSTOMIZE = '''"""Packages the desktop's user installs with pip (PIP_TARGET) are importable, after the
interpreter's own (a user site-packages for the read-only virtual environment)."""
import os
import site
import sys

site.addsitedir(os.path.expanduser(
    f"~/.local/lib/python{sys.version_info[0]}.{sys.version_info[1]}/site-packages"))
'''


def user_site(home: str) -> str:
    """Where ``pip install`` puts packages inside the desktop (see :data:`_SITECUSTOMIZE`)."""
    return f"{home}/.local/lib/python{sys.version_info[0]}.{sys.version_info[1]}/site-packages"


SCRIPTS: dict[str, str] = {
    **CHROME_SCRIPTS,
    "sudo": guest_programs.fill("sudo.sh", PASSWORD=GUEST_PASSWORD),
}


def session_bus_config(guest_uid: int) -> str:
    """The standard session bus configuration, listening on ``/run/user/<uid>/bus``."""
    path = Path("/usr/share/dbus-1/session.conf")
    text = (
        path.read_text()
        if path.exists()
        else (
            '<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN" '
            '"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">\n<busconfig>\n'
            "<type>session</type>\n<listen>unix:tmpdir=/tmp</listen>\n"
            '<standard_session_servicedirs />\n<policy context="default">\n'
            '<allow send_destination="*" eavesdrop="true"/>\n<allow eavesdrop="true"/>\n'
            '<allow own="*"/>\n</policy>\n</busconfig>\n'
        )
    )
    listen = f"<listen>unix:path=/run/user/{guest_uid}/bus</listen>"
    text, n = re.subn(r"<listen>[^<]*</listen>", listen, text, count=1)
    if not n:
        text = text.replace("</busconfig>", f"{listen}\n</busconfig>")
    # session.conf's relative <include>s resolve against the config file's folder
    return text.replace(
        '<include ignore_missing="yes">session.conf',
        '<include ignore_missing="yes">/usr/share/dbus-1/session.conf',
    ).replace(
        "<includedir>session.d</includedir>", "<includedir>/usr/share/dbus-1/session.d</includedir>"
    )


def _fingerprint() -> str:
    h = hashlib.sha256()
    for name in sorted(SCRIPTS):
        h.update(name.encode() + b"\0" + SCRIPTS[name].encode() + b"\0")
    h.update(CHROME_DESKTOP_ENTRY.encode() + _SITECUSTOMIZE.encode())
    apps = Path("/usr/share/applications")
    if apps.is_dir():  # a new package adds .desktop files: rebuild
        h.update("\0".join(sorted(os.listdir(apps))).encode())
    return h.hexdigest()[:12]


def write_tools(dest: Path) -> None:
    """``dest/bin`` (the scripts), ``dest/python`` and ``dest/applications``."""
    (dest / "bin").mkdir(parents=True)
    for name, text in SCRIPTS.items():
        path = dest / "bin" / name
        path.write_text(text)
        path.chmod(0o755)
    (dest / "python").mkdir()
    (dest / "python" / "sitecustomize.py").write_text(_SITECUSTOMIZE)
    apps = dest / "applications"
    host_apps = Path("/usr/share/applications")
    if host_apps.is_dir():
        shutil.copytree(host_apps, apps, symlinks=True)
    else:
        apps.mkdir()
    (apps / "google-chrome.desktop").write_text(CHROME_DESKTOP_ENTRY)
    for root, dirs, files in os.walk(dest):
        for name in dirs:
            os.chmod(Path(root, name), 0o755)
        for name in files:
            if not Path(root, name).is_symlink():
                os.chmod(Path(root, name), 0o755 if root.endswith("/bin") else 0o644)
    os.chmod(dest, 0o755)


def ensure_tools(base: Path) -> Path:
    """The tools directory under ``base`` (read-only for everyone), created once, atomically."""
    return build_once(base / f"desktop-tools-{_fingerprint()}", write_tools)


__all__ = [
    "CHROME_LINK",
    "GUEST_CHROME_DIR",
    "GUEST_PASSWORD",
    "GUEST_PYTHON_DIR",
    "GUEST_TOOLS",
    "SCRIPTS",
    "UNAVAILABLE",
    "ensure_tools",
    "make_chrome_dir",
    "session_bus_config",
    "user_site",
    "write_tools",
]
