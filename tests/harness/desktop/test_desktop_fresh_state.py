"""The local desktop starts as OSWorld's Ubuntu image does in the respects its evaluators read,
so that no task is satisfied before anyone acts: the default video player is Totem (GNOME
Videos), not VLC (multi_apps/937087b6 asks to make VLC the default), and a fresh Chrome profile
has no ``profile.default_content_setting_values`` (chrome/99146c54's getter reads its presence
as "delete data on close" being on). Real sandbox, real xdg-mime, real Chromium."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator

import pytest

from computer_env.desktop.providers.base import DesktopHandle
from computer_env.desktop.providers.local.provider import LocalSandboxProvider
from tests.harness.helpers.localdesk import guest_sh, local_desktop
from tests.harness.helpers.polling import wait_for

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(
        os.geteuid() != 0 or not shutil.which("bwrap"),
        reason="the local sandbox needs root and bubblewrap",
    ),
]

PREFS = "~/.config/google-chrome/Default/Preferences"


@pytest.fixture(scope="module")
def desktop() -> Iterator[LocalSandboxProvider]:
    with local_desktop(width=1280, height=800) as provider:
        yield provider


@pytest.fixture()
def handle(desktop: LocalSandboxProvider) -> DesktopHandle:
    return desktop.reset()


def test_default_video_player_is_not_vlc(handle: DesktopHandle) -> None:
    for mime in ("video/mp4", "video/x-matroska", "video/webm", "video/x-msvideo"):
        out = guest_sh(handle, f"xdg-mime query default {mime}")
        assert out["returncode"] == 0, out
        assert out["output"].strip() == "org.gnome.Totem.desktop", (mime, out)
    # Totem is really there, and making VLC the default (the task) still works
    assert guest_sh(handle, "command -v totem")["returncode"] == 0
    assert guest_sh(handle, "xdg-mime default vlc.desktop video/mp4")["returncode"] == 0
    assert guest_sh(handle, "xdg-mime query default video/mp4")["output"].strip() == "vlc.desktop"


def test_fresh_chrome_profile_has_no_default_content_settings(handle: DesktopHandle) -> None:
    out = guest_sh(handle, "google-chrome --remote-debugging-port=1337 >/dev/null 2>&1 &")
    assert out["returncode"] == 0, out
    wait_for(
        lambda: guest_sh(handle, "curl -s -m 2 http://127.0.0.1:1337/json/version")["output"],
        "Chrome's debugging port",
        timeout=90,
    )
    # Chrome writes its Preferences on exit too: once it has written its profile, stop it as
    # OSWorld's postconfig does (pkill chrome), then read what a restart would find
    wait_for(
        lambda: '"profile"' in guest_sh(handle, f"cat {PREFS} 2>/dev/null")["output"],
        "Chrome to write its profile's Preferences",
        timeout=60,
    )
    guest_sh(handle, "pkill chrome")
    wait_for(
        lambda: guest_sh(handle, "pgrep -x chrome")["returncode"] == 1,
        "Chrome to exit after pkill chrome",
        timeout=60,
    )
    text = guest_sh(handle, f"cat {PREFS}")["output"]
    profile = json.loads(text)["profile"]
    assert "default_content_setting_values" not in profile, profile.get(
        "default_content_setting_values"
    )
