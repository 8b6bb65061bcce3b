"""OSWorld's app set on the local desktop: the programs its tasks launch and the commands its
evaluators run, exercised the way the tasks do (real sandbox, real apps, real D-Bus/dconf,
PulseAudio and accessibility bus)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import httpx
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

# What OSWorld's task files launch/execute and their evaluators run (examples/*/*.json).
PROGRAMS = (
    "google-chrome",
    "google-chrome-stable",
    "chromium",
    "socat",
    "libreoffice",
    "soffice",
    "gimp",
    "vlc",
    "thunderbird",
    "/usr/bin/thunderbird",
    "gnome-terminal",
    "nautilus",
    "gedit",
    "sudo",
    "pactl",
    "pulseaudio",
    "expect",
    "gsettings",
    "dconf",
    "xdg-open",
    "gio",
    "unzip",
    "zip",
    "tar",
    "git",
    "jq",
    "bc",
    "xsel",
    "wmctrl",
    "update-desktop-database",
    "dpkg",
    "apt",
)
BUS = "export DBUS_SESSION_BUS_ADDRESS='unix:path=/run/user/1000/bus'\n"


def _client(handle: DesktopHandle) -> httpx.Client:
    return httpx.Client(
        base_url=handle.url, headers={"Authorization": f"Bearer {handle.token}"}, timeout=120.0
    )


sh = guest_sh


def launch(handle: DesktopHandle, command: str | list[str]) -> None:
    with _client(handle) as c:
        resp = c.post("/setup/launch", json={"command": command, "shell": isinstance(command, str)})
    assert resp.status_code == 200, resp.text


def windows(handle: DesktopHandle) -> str:
    return sh(handle, "wmctrl -lx")["output"]


@pytest.fixture(scope="module")
def desktop() -> Iterator[LocalSandboxProvider]:
    with local_desktop(width=1280, height=800) as provider:
        yield provider


@pytest.fixture()
def handle(desktop: LocalSandboxProvider) -> DesktopHandle:
    return desktop.reset()


def test_osworld_programs_are_on_path(handle: DesktopHandle) -> None:
    out = sh(
        handle,
        "for p in "
        + " ".join(PROGRAMS)
        + "; do command -v $p >/dev/null || echo MISSING $p; done; echo checked",
    )["output"]
    assert out.strip() == "checked", out


def test_sudo_takes_osworld_password(handle: DesktopHandle) -> None:
    """Task e0df059f's setup (`echo password | sudo -S mkdir ...`) works; wrong passwords and
    missing ones are refused as sudo refuses them."""
    ok = sh(handle, "echo password | sudo -S mkdir ~/Desktop/todo_list_Jan_1")
    assert ok["returncode"] == 0, ok
    assert sh(handle, "test -d ~/Desktop/todo_list_Jan_1")["returncode"] == 0
    bad = sh(handle, "echo wrong | sudo -S -k true")
    assert bad["returncode"] != 0 and "Sorry, try again." in bad["error"], bad
    quiet = sh(handle, "sudo -k; sudo -n true")
    assert quiet["returncode"] != 0 and "a password is required" in quiet["error"], quiet
    no_tty = sh(handle, "sudo -k; sudo true </dev/null")
    assert no_tty["returncode"] != 0 and "terminal is required" in no_tty["error"], no_tty
    assert sh(handle, "echo password | sudo -S -u nobody true")["returncode"] != 0
    listed = sh(handle, "echo password | sudo -S -l")["output"]
    assert "(ALL : ALL) ALL" in listed


def test_gsettings_schemas_and_dconf(handle: DesktopHandle) -> None:
    """The keys OSWorld's os tasks set and read, over the bus address the tasks export."""
    cmds = [
        ("org.gnome.desktop.session idle-delay", "300", "uint32 300"),
        ("org.gnome.desktop.screensaver lock-enabled", "false", "false"),
        ("org.gnome.desktop.notifications show-banners", "true", "true"),
        ("org.gnome.shell favorite-apps", "\"['thunderbird.desktop']\"", "['thunderbird.desktop']"),
        ("org.gnome.desktop.interface text-scaling-factor", "1.25", "1.25"),
    ]
    for key, value, shown in cmds:
        res = sh(handle, f"{BUS}gsettings set {key} {value} && gsettings get {key}")
        assert res["returncode"] == 0 and res["output"].strip() == shown, (key, res)
    for key in (
        "org.gnome.settings-daemon.plugins.power idle-dim",
        "org.gnome.desktop.a11y.applications screen-magnifier-enabled",
        "org.gnome.desktop.a11y.magnifier mag-factor",
        "org.gnome.desktop.interface gtk-theme",
    ):
        assert sh(handle, f"gsettings get {key}")["returncode"] == 0, key
    # stored by dconf in the home: a new process reads the value back
    assert (
        sh(handle, "dconf read /org/gnome/desktop/session/idle-delay")["output"].strip()
        == "uint32 300"
    )


def test_pactl_volume_as_task_28cc3b7e_reads_it(handle: DesktopHandle) -> None:
    check = (
        "pulseaudio --start\npactl list sinks | grep '^[[:space:]]Volume:' | head -n 1 | "
        "awk '{print $5}' | sed 's/%//g'"
    )
    before = sh(handle, check)
    assert before["output"] == "40\n", before  # not already at the answer
    assert sh(handle, "pactl set-sink-volume @DEFAULT_SINK@ 100%")["returncode"] == 0
    assert sh(handle, check)["output"] == "100\n"


def test_package_database_is_visible(handle: DesktopHandle) -> None:
    out = sh(
        handle,
        "apt list --installed 2>/dev/null | grep -E '^(libreoffice-impress|gimp|"
        "chromium)/' | cut -d/ -f1 | sort",
    )["output"].split()
    assert out == ["chromium", "gimp", "libreoffice-impress"], out
    assert "Status: install ok installed" in sh(handle, "dpkg -s vlc")["output"]


def test_google_chrome_as_osworld_launches_it(handle: DesktopHandle) -> None:
    """`google-chrome --remote-debugging-port=1337` + socat 9222 -> 1337 (OSWorld's setup),
    Chrome's profile folder, and `pkill chrome` ends it (task 030eeff7's postconfig)."""
    launch(handle, ["google-chrome", "--remote-debugging-port=1337"])
    launch(handle, ["socat", "tcp-listen:9222,fork", "tcp:localhost:1337"])
    version = wait_for(
        lambda: sh(handle, "curl -s -m 2 http://127.0.0.1:9222/json/version")["output"],
        "Chrome's CDP through socat on 9222",
        timeout=60,
    )
    assert '"Browser"' in version
    assert sh(handle, "test -d ~/.config/google-chrome/Default")["returncode"] == 0
    assert "Google-chrome" in wait_for(lambda: windows(handle), "a Chrome window")
    with _client(handle) as c:  # tasks activate it by OSWorld's name for it
        activated = c.post("/setup/activate_window", json={"window_name": "Google Chrome"})
    assert activated.json().get("status") != "not_found", activated.text
    assert sh(handle, "pgrep -x chrome")["returncode"] == 0  # the browser is named chrome
    assert sh(handle, "pkill chrome")["returncode"] == 0
    wait_for(
        lambda: sh(handle, "pgrep -x chrome")["returncode"] == 1,
        "Chrome to exit after pkill chrome",
        timeout=30,
    )


APPS = {  # command -> the WM_CLASS its main window must show
    "gnome-terminal": "gnome-terminal-server.Gnome-terminal",
    "nautilus /home/user/Desktop": "org.gnome.Nautilus.Org.gnome.Nautilus",
    "gedit": "gedit.Gedit",
    "VLC_VERBOSE=-1 vlc --no-audio --no-video-title-show": "vlc.vlc",
    "gimp": "gimp",
    "/usr/bin/thunderbird": "Mail.thunderbird",
    "libreoffice --impress": "libreoffice-impress",
}
TITLES = ("Untitled 1 - LibreOffice Impress",)  # not the template chooser


def test_osworld_apps_open_their_windows(handle: DesktopHandle) -> None:
    """Each app OSWorld's tasks launch opens its main window, no first-run dialog of ours in
    the way (VLC's privacy question, GIMP's tips, LibreOffice's wizard)."""
    for command in APPS:
        launch(handle, command)

    def all_up() -> str:
        out = windows(handle)
        return out if all(cls.lower() in out.lower() for cls in APPS.values()) else ""

    out = wait_for(
        all_up, "every app's window: " + ", ".join(APPS.values()), timeout=180, interval=1.0
    )
    wait_for(lambda: all(t in windows(handle) for t in TITLES), f"windows {TITLES}", timeout=60)
    for unwanted in (
        "Privacy and Network",
        "Tip of the Day",
        "GIMP Tip",
        "Welcome to",
        "Select a Template",
    ):
        assert unwanted not in out, out
    status = sh(handle, "curl -s -m 5 -u :password http://127.0.0.1:8080/requests/status.xml")
    assert "<state>" in status["output"], status  # VLC's HTTP interface (OSWorld's getters)


def test_gnome_terminal_output_is_readable(handle: DesktopHandle) -> None:
    """ctrl+alt+t opens gnome-terminal (task 13584542's postconfig) and /terminal returns its
    text (OSWorld's get_terminal_output)."""

    def pressed_and_opened() -> bool:  # openbox grabs its keys just after it owns the screen
        if "Gnome-terminal" not in windows(handle):
            sh(handle, "xdotool key ctrl+alt+t; sleep 3")
        return "Gnome-terminal" in windows(handle)

    wait_for(pressed_and_opened, "gnome-terminal from ctrl+alt+t", timeout=90)

    def focused() -> bool:
        sh(handle, "wmctrl -x -a gnome-terminal-server.Gnome-terminal")
        active = sh(handle, "xprop -root _NET_ACTIVE_WINDOW")["output"].split()[-1]
        return active.startswith("0x") and int(active, 16) == int(
            sh(handle, "wmctrl -lx | grep Gnome-terminal | head -1")["output"].split()[0], 16
        )

    wait_for(focused, "the terminal to have the focus", timeout=30, interval=0.5)
    sh(handle, "xdotool type --delay 20 'echo osworld-$((6*7))'; xdotool key Return")
    with _client(handle) as c:
        text = wait_for(
            lambda: (lambda o: o if o and "osworld-42" in o else "")(
                c.get("/terminal").json().get("output")
            ),
            "the terminal's text via /terminal",
            timeout=60,
        )
    assert "echo osworld-$((6*7))" in text
    title = windows(handle)
    assert "user@desktop: ~ - Terminal" in title, title  # Ubuntu-like title (48c46dc7 reads it)
    with _client(handle) as c:  # and OSWorld's setups activate it by "Terminal" (4783cc41)
        activated = c.post("/setup/activate_window", json={"window_name": "Terminal"})
    assert activated.json().get("status") != "not_found", activated.text


def test_a_port_can_be_listened_on_again(desktop: LocalSandboxProvider) -> None:
    """OSWorld's `socat tcp-listen:9222,fork ...` (no reuseaddr) binds again in the next task:
    closed connections leave no TIME_WAIT behind in the desktop's network namespace (which
    outlives resets)."""
    for attempt in range(2):
        handle = desktop.reset()
        launch(handle, ["socat", "tcp-listen:9333,fork", "SYSTEM:echo listening"])
        got = wait_for(
            lambda: sh(handle, "curl -s -m 2 telnet://127.0.0.1:9333 </dev/null")["output"],  # noqa: B023
            f"socat's answer on 9333 (task {attempt + 1})",
            timeout=30,
            interval=0.5,
        )
        assert "listening" in got


_WHEEL = """python - <<'PY'
import zipfile
with zipfile.ZipFile("/tmp/osw_probe-1.0-py3-none-any.whl", "w") as z:
    z.writestr("osw_probe/__init__.py", "V = 42\\n")
    z.writestr("osw_probe-1.0.dist-info/METADATA",
               "Metadata-Version: 2.1\\nName: osw_probe\\nVersion: 1.0\\n")
    z.writestr("osw_probe-1.0.dist-info/WHEEL",
               "Wheel-Version: 1.0\\nGenerator: t\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n")
    z.writestr("osw_probe-1.0.dist-info/RECORD", "")
PY"""


def test_pip_install_works_like_a_user_install(handle: DesktopHandle) -> None:
    """Task d38192b0's setup `pip install <wheel>`: installed into ~/.local (the interpreter's
    own environment is read-only) and importable by `python`, next to pyautogui."""
    assert sh(handle, _WHEEL)["returncode"] == 0
    res = sh(handle, "pip install /tmp/osw_probe-1.0-py3-none-any.whl")
    assert res["returncode"] == 0, res
    out = sh(
        handle,
        "cd / && python -c 'import osw_probe, pyautogui; print(osw_probe.V, osw_probe.__file__)'",
    )["output"]
    assert out.startswith("42 /home/user/.local/lib/python3"), out
