"""The pristine home directory (``/home/user``) every local desktop starts from.

Kept as Python data (not loose dotfiles) so it ships with the package as-is. It holds what makes
the apps start cleanly: LibreOffice without first-start wizard, tip of the day, "what's new"
bar or document recovery; a readable UTF-8 xterm; the XDG user folders (``~/Desktop`` ...);
and what OSWorld's tasks expect of their Ubuntu image: ctrl+alt+t opens gnome-terminal, VLC's
HTTP interface on port 8080 (password ``password``) without the privacy dialog, GIMP without
tips, a PulseAudio sound card (a null sink at 40 % volume, started on demand by ``pactl``),
Google as the browser's default search engine (Chrome's default; Debian's Chromium would
start with DuckDuckGo).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

_LO_ITEMS: list[tuple[str, str, str, str]] = [
    # (path, prop, type, value)
    ("/org.openoffice.Office.Common/Misc", "ShowTipOfTheDay", "boolean", "false"),
    ("/org.openoffice.Office.Common/Misc", "FirstRun", "boolean", "false"),
    ("/org.openoffice.Office.Common/Misc", "UseSystemFileDialog", "boolean", "false"),
    ("/org.openoffice.Office.Common/Misc", "CollectUsageInformation", "boolean", "false"),
    ("/org.openoffice.Office.Common/Save/Document", "WarnAlienFormat", "boolean", "false"),
    ("/org.openoffice.Office.Common/Save/Document", "AutoSave", "boolean", "false"),
    ("/org.openoffice.Office.Recovery/AutoSave", "Enabled", "boolean", "false"),
    ("/org.openoffice.Office.Recovery/RecoveryInfo", "Enabled", "boolean", "false"),
    ("/org.openoffice.Setup/Office", "ooSetupInstCompleted", "boolean", "true"),
    ("/org.openoffice.Setup/First Start", "ShowIntro", "boolean", "false"),
    ("/org.openoffice.Setup/Product", "ooSetupLastVersion", "string", "7.4"),
    ("/org.openoffice.Setup/Product", "LastTimeDonateShown", "long", "1999999999"),
    ("/org.openoffice.Setup/Product", "LastTimeGetInvolvedShown", "long", "1999999999"),
    ("/org.openoffice.Office.Common/Misc", "ShowDonation", "boolean", "false"),
    # `libreoffice --impress` opens an empty presentation, not the template chooser
    ("/org.openoffice.Office.Impress/Misc/NewDoc", "AutoPilot", "boolean", "false"),
    ("/org.openoffice.Office.Common/Security/Scripting", "MacroSecurityLevel", "int", "3"),
    (
        "/org.openoffice.Office.Jobs/Jobs/org.openoffice.Office.Jobs:Job['UpdateCheck']/Arguments",
        "AutoCheckEnabled",
        "boolean",
        "false",
    ),
]


def _registrymodifications() -> str:
    items = "\n".join(
        f'<item oor:path="{path}"><prop oor:name="{prop}" oor:op="fuse">'
        f"<value>{value}</value></prop></item>"
        for path, prop, _type, value in _LO_ITEMS
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<oor:items xmlns:oor="http://openoffice.org/2001/registry" '
        'xmlns:xs="http://www.w3.org/2001/XMLSchema" '
        'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">\n'
        f"{items}\n</oor:items>\n"
    )


_XDEFAULTS = """\
XTerm*faceName: DejaVu Sans Mono
XTerm*faceSize: 12
XTerm*utf8: 1
XTerm*locale: true
XTerm*background: white
XTerm*foreground: black
XTerm*saveLines: 5000
XTerm*scrollBar: true
XTerm*rightScrollBar: true
XTerm*selectToClipboard: true
XTerm*metaSendsEscape: true
XTerm*termName: xterm-256color
"""

# Google as the default search engine, stored as Chrome stores a user's choice (the profile's
# Preferences, which Chrome completes on first start; a task may still change it). Google is
# Chrome's built-in engine 1 (prepopulate_id); the URLs are Chrome's own for it.
_GOOGLE_SEARCH = {
    "default_search_provider_data": {
        "template_url_data": {
            "id": "2",
            "short_name": "Google",
            "keyword": "google.com",
            "prepopulate_id": 1,
            "url": "{google:baseURL}search?q={searchTerms}&{google:RLZ}"
            "{google:originalQueryForSuggestion}{google:assistedQueryStats}"
            "{google:searchFieldtrialParameter}{google:searchClient}{google:sourceId}"
            "ie={inputEncoding}",
            "suggestions_url": "{google:baseSuggestURL}search?{google:searchFieldtrialParameter}"
            "client={google:suggestClient}&gs_ri={google:suggestRID}&xssi=t&"
            "q={searchTerms}&{google:inputType}{google:cursorPosition}"
            "{google:currentPageUrl}{google:pageClassification}"
            "{google:searchVersion}{google:sessionToken}{google:prefetchQuery}"
            "sugkey={google:suggestAPIKeyParameter}",
            "favicon_url": "https://www.google.com/favicon.ico",
            "input_encodings": ["UTF-8"],
            "safe_for_autoreplace": True,
            "created_by_policy": 0,
        }
    }
}
_CHROME_PREFERENCES = json.dumps(_GOOGLE_SEARCH, indent=1) + "\n"

_USER_DIRS = """\
XDG_DESKTOP_DIR="$HOME/Desktop"
XDG_DOWNLOAD_DIR="$HOME/Downloads"
XDG_DOCUMENTS_DIR="$HOME/Documents"
XDG_MUSIC_DIR="$HOME/Music"
XDG_PICTURES_DIR="$HOME/Pictures"
XDG_VIDEOS_DIR="$HOME/Videos"
XDG_TEMPLATES_DIR="$HOME/Templates"
XDG_PUBLICSHARE_DIR="$HOME/Public"
"""

_BASHRC = """\
export PS1='user@desktop:\\w\\$ '
# gnome-terminal's title is "user@host: dir" as with Ubuntu's .bashrc, plus " - Terminal" (the
# name OSWorld's setups activate it by); xterm keeps its own title
if [ -n "${VTE_VERSION:-}" ]; then PS1="\\[\\e]0;\\u@\\h: \\w - Terminal\\a\\]$PS1"; fi
export LANG=C.UTF-8
alias ll='ls -l'
"""

# the video types whose default OSWorld's default_video_player getter asks xdg-mime about; as on
# Ubuntu, the default video player is Totem (GNOME Videos), not VLC
_VIDEO_TYPES = (
    "3gp 3gpp 3gpp2 avi divx dv fli flv mp2t mp4 mp4v-es mpeg mpeg-system msvideo ogg "
    "quicktime vnd.divx vnd.mpegurl vnd.rn-realvideo webm x-anim x-avi x-flc x-fli "
    "x-flv x-m4v x-matroska x-mpeg x-mpeg-system x-mpeg2 x-ms-asf x-ms-asf-plugin "
    "x-ms-asx x-ms-wm x-ms-wmv x-ms-wmx x-ms-wvx x-msvideo x-nsv x-ogm x-ogm+ogg "
    "x-theora x-theora+ogg"
).split()

_MIMEAPPS = """\
[Default Applications]
text/plain=org.xfce.mousepad.desktop
text/csv=libreoffice-calc.desktop
application/vnd.oasis.opendocument.spreadsheet=libreoffice-calc.desktop
application/vnd.openxmlformats-officedocument.spreadsheetml.sheet=libreoffice-calc.desktop
application/vnd.oasis.opendocument.text=libreoffice-writer.desktop
application/vnd.openxmlformats-officedocument.wordprocessingml.document=libreoffice-writer.desktop
text/html=chromium.desktop
x-scheme-handler/http=chromium.desktop
x-scheme-handler/https=chromium.desktop
application/vnd.oasis.opendocument.presentation=libreoffice-impress.desktop
application/vnd.openxmlformats-officedocument.presentationml.presentation=libreoffice-impress.desktop
application/vnd.ms-powerpoint=libreoffice-impress.desktop
inode/directory=org.gnome.Nautilus.desktop
audio/mpeg=vlc.desktop
image/png=gimp.desktop
image/jpeg=gimp.desktop
x-scheme-handler/mailto=thunderbird.desktop
"""
_MIMEAPPS += "".join(f"video/{t}=org.gnome.Totem.desktop\n" for t in _VIDEO_TYPES)

_VLCRC = """\
[qt]
qt-privacy-ask=0
qt-updates-notif=0
[core]
extraintf=http
http-port=8080
metadata-network-access=0
[lua]
http-password=password
"""

_GIMPRC = "(show-tips no)\n"

# The sound card of the desktop: a null sink (no hardware in a sandbox), 40 % volume, kept
# running once started (``pactl`` starts it on demand; volumes persist in ~/.config/pulse).
_PULSE_DEFAULT_PA = """\
.fail
load-module module-device-restore
load-module module-stream-restore
load-module module-card-restore
load-module module-augment-properties
load-module module-native-protocol-unix
load-module module-null-sink sink_name=speakers sink_properties=device.description=Speakers
load-module module-default-device-restore
load-module module-always-sink
load-module module-intended-roles
load-module module-position-event-sounds
set-default-sink speakers
set-sink-volume speakers 26214
"""

_PULSE_DAEMON_CONF = "exit-idle-time = -1\nflat-volumes = no\n"

_TERMINAL_KEY = (
    '  <keybind key="C-A-t"><action name="Execute">'
    "<command>gnome-terminal</command></action></keybind>\n"
)


def _openbox_rc() -> str | None:
    """The system openbox configuration plus ctrl+alt+t (gnome-terminal, as on Ubuntu)."""
    path = Path("/etc/xdg/openbox/rc.xml")
    try:
        text = path.read_text()
    except OSError:
        return None
    return text.replace("</keyboard>", _TERMINAL_KEY + "</keyboard>", 1)


FILES: dict[str, str] = {
    ".config/libreoffice/4/user/registrymodifications.xcu": _registrymodifications(),
    ".Xdefaults": _XDEFAULTS,
    ".config/user-dirs.dirs": _USER_DIRS,
    ".config/mimeapps.list": _MIMEAPPS,
    ".bashrc": _BASHRC,
    ".profile": ". ~/.bashrc\n",
    ".config/vlc/vlcrc": _VLCRC,
    ".config/GIMP/2.10/gimprc": _GIMPRC,
    ".config/pulse/default.pa": _PULSE_DEFAULT_PA,
    ".config/pulse/daemon.conf": _PULSE_DAEMON_CONF,
    ".config/google-chrome/Default/Preferences": _CHROME_PREFERENCES,
    ".config/chromium/Default/Preferences": _CHROME_PREFERENCES,
}
if (_rc := _openbox_rc()) is not None:
    FILES[".config/openbox/rc.xml"] = _rc
DIRS: tuple[str, ...] = (
    "Desktop",
    "Documents",
    "Downloads",
    "Music",
    "Pictures",
    "Videos",
    "Templates",
    "Public",
    ".cache",
    ".local/share",
    ".config/autostart",
)


def _fingerprint() -> str:
    h = hashlib.sha256()
    for name in sorted(FILES):
        h.update(name.encode() + b"\0" + FILES[name].encode() + b"\0")
    h.update("\0".join(DIRS).encode())
    return h.hexdigest()[:12]


def write_template(dest: Path) -> None:
    """Write the template tree into ``dest`` (which must not exist yet)."""
    for d in DIRS:
        (dest / d).mkdir(parents=True, exist_ok=True)
    for rel, text in FILES.items():
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for root, dirs, files in os.walk(dest):
        for name in dirs:
            os.chmod(Path(root, name), 0o755)
        for name in files:
            os.chmod(Path(root, name), 0o644)
    os.chmod(dest, 0o755)


def build_once(target: Path, build: Callable[[Path], None]) -> Path:
    """``target``, built by ``build(path)`` into a fresh path beside it and renamed into place
    (atomic: concurrent callers see either nothing or the complete folder; a loser of the race
    keeps the winner's)."""
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        shutil.rmtree(tmp)  # build() creates its folder itself
        build(tmp)
        os.rename(tmp, target)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        if not target.is_dir():
            raise
    return target


def ensure_template(base: Path) -> Path:
    """The template directory under ``base`` (read-only for everyone), created once, atomically."""
    return build_once(base / f"home-template-{_fingerprint()}", write_template)
