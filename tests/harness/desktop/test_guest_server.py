"""The guest server against a real Xvfb desktop, driven the way OSWorld's controllers drive it.

Requests are sent with ``requests`` exactly as ``PythonController``/``SetupController`` send them
(``json.dumps`` bodies with a JSON content type, form fields, multipart uploads), plus the bearer
token. Tests that start real apps (mousepad, LibreOffice) are marked ``desktop``.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import threading
import time
import zipfile
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests
from PIL import Image

from computer_env.desktop.client import DesktopClient
from computer_env.osworld.prepare.readiness import (
    AppExpectation,
    office_problem,
    office_state,
    window_problem,
    x_window_state,
)
from tests.harness.helpers.polling import wait_for
from tests.harness.helpers.xdesktop import GuestServer, XDesktop, wait_for_window

JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def desk() -> Iterator[XDesktop]:
    with XDesktop(1280, 720, a11y=True) as d:
        yield d


@pytest.fixture(scope="module")
def server(desk: XDesktop, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GuestServer]:
    with GuestServer(desk.env, tmp_path_factory.mktemp("guest") / "home") as s:
        yield s


def post(s: GuestServer, path: str, payload: Any = None, **kw: Any) -> requests.Response:
    """POST like OSWorld's controllers: a json.dumps body with a JSON content type."""
    headers = {**s.headers, **JSON} if payload is not None else dict(s.headers)
    data = json.dumps(payload) if payload is not None else kw.pop("data", None)
    return requests.post(
        s.url + path, headers=headers, data=data, timeout=kw.pop("timeout", 60), **kw
    )


def get(s: GuestServer, path: str, **kw: Any) -> requests.Response:
    return requests.get(s.url + path, headers=s.headers, timeout=kw.pop("timeout", 60), **kw)


def assert_bad(r: requests.Response, status: int, field: str) -> None:
    """An error answer: the status, a JSON message naming the field, no stack trace."""
    assert r.status_code == status, r.text
    assert field in r.json()["message"]
    assert "Traceback" not in r.text


def pids_matching(pattern: str) -> list[int]:
    out = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


# -- auth and errors ----------------------------------------------------------------------------


def test_token_is_required_on_every_request(server: GuestServer) -> None:
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": server.token}):
        r = requests.get(server.url + "/platform", headers=headers, timeout=10)
        assert r.status_code == 403
        assert r.json()["status"] == "error"
    r = requests.post(server.url + "/execute", json={"command": ["true"]}, timeout=10)
    assert r.status_code == 403
    assert requests.get(server.url + "/nope", timeout=10).status_code == 403
    assert get(server, "/platform").status_code == 200


def test_unknown_path_and_method_answer_json(server: GuestServer) -> None:
    r = get(server, "/no/such/endpoint")
    assert r.status_code == 404 and "/no/such/endpoint" in r.json()["message"]
    r = get(server, "/execute")
    assert r.status_code == 405 and r.json()["status"] == "error"


def test_invalid_json_body_is_a_400(server: GuestServer) -> None:
    r = requests.post(
        server.url + "/execute", headers={**server.headers, **JSON}, data="{nope", timeout=10
    )
    assert_bad(r, 400, "JSON")
    r = post(server, "/execute", ["a", "list"])
    assert_bad(r, 400, "JSON object")


# -- small queries ------------------------------------------------------------------------------


def test_platform_capabilities_sizes_cursor(server: GuestServer) -> None:
    assert get(server, "/platform").text == "Linux"
    caps = get(server, "/capabilities").json()
    assert caps["fast_actions"] is True and caps["type_text"] is True
    assert caps["formats"] == ["png", "jpeg", "webp"] and caps["version"]
    assert post(server, "/screen_size").json() == {"width": 1280, "height": 720}
    r = post(server, "/actions", {"code": "pyautogui.moveTo(321, 123)"})
    assert r.json()["returncode"] == 0
    assert get(server, "/cursor_position").json() == [321, 123]
    desktop = post(server, "/desktop_path").json()["desktop_path"]
    assert desktop == str(server.home / "Desktop")
    assert get(server, "/terminal").json() == {"output": None, "status": "success"}


@pytest.mark.parametrize(
    ("fmt", "magic", "pil"),
    [
        ("png", b"\x89PNG", "PNG"),
        ("jpeg", b"\xff\xd8\xff", "JPEG"),
        ("webp", b"RIFF", "WEBP"),
    ],
)
def test_screenshot_formats_decode_at_screen_size(
    server: GuestServer, fmt: str, magic: bytes, pil: str
) -> None:
    params = {} if fmt == "png" else {"format": fmt, "quality": 70}
    r = get(server, "/screenshot", params=params)
    assert r.status_code == 200 and r.headers["Content-Type"] == f"image/{fmt}"
    assert r.content.startswith(magic)
    image = Image.open(io.BytesIO(r.content))
    assert image.format == pil and image.size == (1280, 720)


def test_screenshot_draws_the_cursor(server: GuestServer) -> None:
    post(server, "/actions", {"code": "pyautogui.moveTo(640, 360)"})
    image = Image.open(io.BytesIO(get(server, "/screenshot").content)).convert("RGB")
    # The bare root window is one colour; the cursor makes the area around its hotspot differ.
    patch = image.crop((630, 350, 660, 380))
    assert len(patch.getcolors(4096) or []) > 1


def test_screenshot_bad_parameters(server: GuestServer) -> None:
    assert_bad(get(server, "/screenshot", params={"format": "gif"}), 400, "format")
    assert_bad(
        get(server, "/screenshot", params={"format": "jpeg", "quality": "x"}), 400, "quality"
    )
    assert_bad(get(server, "/screenshot", params={"format": "jpeg", "quality": 0}), 400, "quality")


# -- commands -----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/execute", "/setup/execute"])
def test_execute_like_osworld(server: GuestServer, path: str) -> None:
    r = post(
        server,
        path,
        {
            "command": [
                "python",
                "-c",
                "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)",
            ],
            "shell": False,
        },
    )
    assert r.status_code == 200
    assert r.json() == {"status": "success", "output": "out\n", "error": "err\n", "returncode": 3}
    r = post(server, path, {"command": "echo $HOME | tr a-z A-Z", "shell": True})
    assert r.json()["output"] == str(server.home).upper() + "\n"
    r = post(server, path, {"command": "ls -d ~/Desktop", "shell": False})  # shlex split + ~/
    assert r.json()["output"].strip() == str(server.home / "Desktop")


def test_execute_with_verification_like_osworld(server: GuestServer) -> None:
    """OSWorld's /setup/execute_with_verification: the command's result, then the check polled
    (``command_success``, ``window_exists``) up to ``max_wait_time``; 500 when it never holds."""
    r = post(
        server,
        "/setup/execute_with_verification",
        {
            "command": "sleep 0.3 && touch ~/verified &",
            "shell": True,
            "verification": {"command_success": "test -f ~/verified"},
            "max_wait_time": 20,
            "check_interval": 0.2,
        },
    )
    assert r.status_code == 200 and r.json()["verification"] == "passed"
    assert r.json()["returncode"] == 0
    r = post(
        server,
        "/setup/execute_with_verification",
        {
            "command": ["true"],
            "verification": {"window_exists": "no such window title"},
            "max_wait_time": 0.5,
            "check_interval": 0.1,
        },
    )
    assert r.status_code == 500 and r.json()["status"] == "verification_failed"
    r = post(server, "/execute_with_verification", {"command": ["echo", "hi"]})
    assert r.status_code == 200 and r.json()["output"] == "hi\n"


def test_execute_bad_input(server: GuestServer) -> None:
    assert_bad(post(server, "/execute", {"shell": False}), 400, "command")
    assert_bad(post(server, "/execute", {"command": 42}), 400, "command")
    assert_bad(post(server, "/execute", {"command": ["ls"], "shell": "maybe"}), 400, "shell")
    r = post(server, "/execute", {"command": ["no-such-program-xyz"]})
    assert r.status_code == 500 and "no-such-program-xyz" in r.json()["message"]
    assert "Traceback" not in r.text
    r = post(server, "/execute", {"command": "sleep 5", "shell": True, "timeout": 0.5})
    assert r.status_code == 500 and "timed out" in r.json()["message"]


def test_run_python(server: GuestServer) -> None:
    r = post(server, "/run_python", {"code": "import pyautogui\nprint(pyautogui.size())"})
    body = r.json()
    assert r.status_code == 200 and body["status"] == "success" and body["return_code"] == 0
    assert "1280" in body["output"] and body["need_more"] is False
    body = post(server, "/run_python", {"code": "raise SystemExit(4)"}).json()
    assert body["status"] == "error" and body["return_code"] == 4
    assert_bad(post(server, "/run_python", {}), 400, "code")


def test_run_bash_script(server: GuestServer, tmp_path: Path) -> None:
    r = post(
        server,
        "/run_bash_script",
        {
            "script": "echo one\necho two >&2\npwd\nexit 2",
            "timeout": 20,
            "working_dir": str(tmp_path),
        },
    )
    assert r.status_code == 200
    assert r.json() == {
        "status": "error",
        "output": f"one\ntwo\n{tmp_path}\n",
        "error": "",
        "returncode": 2,
    }
    assert post(server, "/run_bash_script", {"script": "true"}).json()["status"] == "success"
    r = post(server, "/run_bash_script", {"script": "true", "working_dir": "/no/such/dir"})
    assert r.status_code == 400 and "does not exist" in r.json()["output"]
    r = post(server, "/run_bash_script", {"timeout": 3})
    assert r.status_code == 400 and "script" in r.json()["output"] and r.json()["returncode"] == -1
    r = post(server, "/run_bash_script", {"script": "sleep 5", "timeout": 0.5})
    assert r.status_code == 500 and "timed out" in r.json()["output"]


def test_actions_persistent_interpreter(server: GuestServer) -> None:
    r = post(
        server,
        "/actions",
        {"code": "import os\nprint(pyautogui.PAUSE, pyautogui.FAILSAFE, os.getpid())"},
    )
    first = r.json()
    assert first["status"] == "success" and first["output"].startswith("0 False")
    pid = first["output"].split()[-1]
    again = post(
        server, "/actions", {"code": "import os; pyautogui.PAUSE = 1; print(os.getpid())"}
    ).json()
    assert again["output"].strip() == pid  # the same process: pyautogui imported once
    assert post(server, "/actions", {"code": "print(pyautogui.PAUSE)"}).json()["output"] == "0\n"
    err = post(server, "/actions", {"code": "pyautogui.click(1, 2)\nundefined_name"}).json()
    assert err["status"] == "error" and err["returncode"] == 1
    assert "NameError" in err["error"] and '"<actions>", line 2' in err["error"]
    timeout = post(server, "/actions", {"code": "time.sleep(10)", "timeout": 0.5}).json()
    assert timeout["returncode"] == -1 and "0.5" in timeout["error"]
    assert post(server, "/actions", {"code": "print('back')"}).json()["output"] == "back\n"
    assert_bad(post(server, "/actions", {}), 400, "code")
    assert_bad(post(server, "/actions", {"code": "1", "timeout": "soon"}), 400, "timeout")


def test_type_bad_input(server: GuestServer) -> None:
    assert_bad(post(server, "/type", {}), 400, "text")
    assert_bad(post(server, "/type", {"text": 5}), 400, "text")


# -- launch, windows ----------------------------------------------------------------------------


def test_launch_and_window_management(server: GuestServer, desk: XDesktop) -> None:
    r = post(
        server,
        "/setup/launch",
        {"command": ["xterm", "-T", "gs-window-1", "-class", "GsTerm"], "shell": False},
    )
    assert r.status_code == 200 and "launched successfully" in r.text
    wait_for_window(desk.env, "gs-window-1", 15)
    size = requests.post(
        server.url + "/window_size",
        headers=server.headers,
        data={"app_class_name": "gsterm"},
        timeout=10,
    )
    assert size.status_code == 200 and size.json()["width"] > 0 and size.json()["height"] > 0
    r = post(
        server,
        "/setup/activate_window",
        {"window_name": "gs-window-1", "strict": False, "by_class": False},
    )
    assert r.status_code == 200 and "activated" in r.text
    assert (
        post(
            server, "/setup/activate_window", {"window_name": "GsTerm", "by_class": True}
        ).status_code
        == 200
    )
    listed = get(server, "/windows").json()
    assert any(w["title"] == "gs-window-1" for w in listed)
    r = post(server, "/setup/close_window", {"window_name": "gs-window-1", "strict": True})
    assert r.status_code == 200
    wait_for(
        lambda: not any(w["title"] == "gs-window-1" for w in get(server, "/windows").json()),
        "xterm to close",
        10,
    )


def test_window_endpoints_bad_input(server: GuestServer) -> None:
    assert_bad(post(server, "/setup/launch", {"shell": False}), 400, "command")
    assert_bad(post(server, "/setup/activate_window", {"strict": True}), 400, "window_name")
    assert_bad(post(server, "/setup/close_window", {}), 400, "window_name")
    # OSWorld's server answers 200 for a missing window (it runs wmctrl unchecked); this one too,
    # saying so in its body (the harness turns it into a setup failure)
    r = post(server, "/setup/activate_window", {"window_name": "no window has this title"})
    assert r.status_code == 200 and r.json()["status"] == "not_found"
    assert "no window has this title" in r.json()["message"]
    r = post(server, "/setup/close_window", {"window_name": "no window has this title"})
    assert r.status_code == 200 and r.json()["status"] == "not_found"
    r = requests.post(server.url + "/window_size", headers=server.headers, data={}, timeout=10)
    assert_bad(r, 400, "app_class_name")
    r = requests.post(
        server.url + "/window_size",
        headers=server.headers,
        data={"app_class_name": "nothing-like-this"},
        timeout=10,
    )
    assert r.status_code == 500  # as OSWorld's server (its route returns None)


def test_open_app_by_name_waits_for_its_window(server: GuestServer) -> None:
    r = post(server, "/setup/open_file", {"path": "xterm"})
    assert r.status_code == 200 and "activated" in r.text
    assert (
        post(server, "/setup/close_window", {"window_name": "xterm", "strict": True}).status_code
        == 200
    )
    r = post(server, "/setup/open_file", {"path": "~/Desktop/missing.docx"})
    assert r.status_code == 404 and "missing.docx" in r.json()["message"]
    assert_bad(post(server, "/setup/open_file", {}), 400, "path")


# -- files --------------------------------------------------------------------------------------


def test_upload_read_list_like_setup_controller(server: GuestServer) -> None:
    payload = "grüße\n".encode() + bytes(range(256))
    r = requests.post(
        server.url + "/setup/upload",
        headers=server.headers,
        data={"file_path": "~/Desktop/sub/dir/data.bin"},
        files={"file_data": ("data.bin", payload)},
        timeout=30,
    )
    assert r.status_code == 200 and r.text.startswith("File Uploaded")
    assert (server.home / "Desktop/sub/dir/data.bin").read_bytes() == payload
    r = requests.post(
        server.url + "/file",
        headers=server.headers,
        data={"file_path": "~/Desktop/sub/dir/data.bin"},
        timeout=30,
    )
    assert r.status_code == 200 and r.content == payload
    r = requests.post(
        server.url + "/file",
        headers=server.headers,
        data={"file_path": "~/Desktop/none.txt"},
        timeout=30,
    )
    assert r.status_code == 404
    tree = post(server, "/list_directory", {"path": str(server.home / "Desktop")}).json()[
        "directory_tree"
    ]
    assert tree["type"] == "directory" and tree["name"] == "Desktop"
    sub = next(c for c in tree["children"] if c["name"] == "sub")
    assert sub["children"][0]["children"] == [{"type": "file", "name": "data.bin"}]


def test_file_endpoints_bad_input(server: GuestServer) -> None:
    assert_bad(
        requests.post(server.url + "/file", headers=server.headers, data={}, timeout=10),
        400,
        "file_path",
    )
    assert_bad(
        requests.post(
            server.url + "/file", headers=server.headers, data={"file_path": "~"}, timeout=10
        ),
        400,
        "file_path",
    )
    r = requests.post(
        server.url + "/setup/upload", headers=server.headers, data={"file_path": "~/x"}, timeout=10
    )
    assert_bad(r, 400, "file_data")
    r = requests.post(
        server.url + "/setup/upload",
        headers=server.headers,
        files={"file_data": ("x", b"1")},
        timeout=10,
    )
    assert_bad(r, 400, "file_path")
    assert_bad(post(server, "/list_directory", {}), 400, "path")
    assert_bad(post(server, "/list_directory", {"path": "/no/such/dir"}), 400, "path")
    assert_bad(post(server, "/setup/download_file", {"path": "~/x"}), 400, "url")
    assert_bad(
        post(server, "/setup/download_file", {"url": "ftp://x/y", "path": "~/x"}), 400, "url"
    )
    assert_bad(post(server, "/setup/download_file", {"url": "http://127.0.0.1/x"}), 400, "path")


@pytest.fixture()
def http_root(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    root = tmp_path / "www"
    root.mkdir()

    class Quiet(SimpleHTTPRequestHandler):
        def __init__(self, *a: Any, **kw: Any) -> None:
            super().__init__(*a, directory=str(root), **kw)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", root
    httpd.shutdown()
    httpd.server_close()


def test_download_file(server: GuestServer, http_root: tuple[str, Path]) -> None:
    base, root = http_root
    (root / "book.csv").write_bytes(b"a,b\n1,2\n")
    r = post(
        server, "/setup/download_file", {"url": f"{base}/book.csv", "path": "~/Downloads/book.csv"}
    )
    assert r.status_code == 200 and "successfully" in r.text
    assert (server.home / "Downloads/book.csv").read_bytes() == b"a,b\n1,2\n"
    r = post(
        server, "/setup/download_file", {"url": f"{base}/missing.csv", "path": "~/Downloads/m.csv"}
    )
    assert r.status_code == 500 and "missing.csv" in r.text
    assert not (server.home / "Downloads/m.csv").exists()


def test_wallpaper_default_and_remembered(server: GuestServer) -> None:
    default = post(server, "/wallpaper")  # like OSWorld's GNOME desktop: always a wallpaper
    assert default.status_code == 200
    assert Image.open(io.BytesIO(default.content)).size == (1280, 720)
    png = io.BytesIO()
    Image.new("RGB", (4, 4), "red").save(png, "PNG")
    (server.home / "wall.png").write_bytes(png.getvalue())
    r = post(server, "/setup/change_wallpaper", {"path": "~/wall.png"})
    assert r.status_code == 200 and "no-op" in r.text
    assert post(server, "/wallpaper").content == png.getvalue()
    assert_bad(post(server, "/setup/change_wallpaper", {}), 400, "path")
    assert post(server, "/setup/change_wallpaper", {"path": "~/none.png"}).status_code == 404


# -- recording ----------------------------------------------------------------------------------


def test_recording_produces_an_mp4(server: GuestServer) -> None:
    assert post(server, "/end_recording").status_code == 400
    r = post(server, "/start_recording")
    assert r.status_code == 200 and r.json()["status"] == "success"
    assert post(server, "/start_recording").status_code == 400
    for x in range(100, 600, 100):
        post(server, "/actions", {"code": f"pyautogui.moveTo({x}, 300)"})
        time.sleep(0.1)
    r = post(server, "/end_recording")
    assert r.status_code == 200 and r.headers["Content-Type"] == "video/mp4"
    assert r.content[4:8] == b"ftyp" and len(r.content) > 1000


# -- input round trips (real apps) --------------------------------------------------------------


def test_fast_path_types_a_command_into_xterm(server: GuestServer, desk: XDesktop) -> None:
    post(server, "/setup/launch", {"command": ["xterm", "-T", "gs-typing"]})
    wid = wait_for_window(desk.env, "gs-typing", 15)
    subprocess.run(["wmctrl", "-i", "-a", wid], env=desk.env, check=True)
    target = server.home / "made-by-typing.txt"
    code = f"pyautogui.write('echo typed > {target}'); pyautogui.press('enter')"
    assert post(server, "/actions", {"code": code}).json()["returncode"] == 0
    wait_for(lambda: target.exists() and target.read_text() == "typed\n", f"{target}", 10)
    post(server, "/setup/close_window", {"window_name": "gs-typing"})


@pytest.mark.desktop
def test_type_non_ascii_into_mousepad(server: GuestServer, desk: XDesktop) -> None:
    note = server.home / "unicode-note.txt"
    note.write_text("")
    post(server, "/setup/launch", {"command": ["mousepad", str(note)]})
    wid = wait_for_window(desk.env, "unicode-note", 30)
    subprocess.run(["wmctrl", "-i", "-a", wid], env=desk.env, check=True)
    time.sleep(0.3)  # mousepad maps its text view a moment after the frame
    r = post(server, "/type", {"text": "Grüße ä €"})
    assert r.status_code == 200 and r.json()["typed"] == 9
    post(server, "/actions", {"code": "pyautogui.hotkey('ctrl', 's')"})
    wait_for(
        lambda: note.read_text(encoding="utf-8") in ("Grüße ä €", "Grüße ä €\n"),
        "the saved note",
        15,
    )
    post(server, "/setup/close_window", {"window_name": "unicode-note"})


@pytest.mark.desktop
def test_accessibility_tree_lists_mousepad(server: GuestServer, desk: XDesktop) -> None:
    # a file of its own: its title tells this window from the previous test's closing mousepad
    note = server.home / "a11y-tree-note.txt"
    note.write_text("")
    post(server, "/setup/launch", {"command": ["mousepad", "--disable-server", str(note)]})
    wait_for_window(desk.env, note.name, 60)
    from lxml import etree

    ns = {"st": "https://accessibility.ubuntu.example.org/ns/state"}
    frame = (
        f"//application[contains(translate(@name, 'MOUSEPAD', 'mousepad'), 'mousepad')]"
        f"//frame[contains(@name, '{note.name}') and @st:showing='true']"
    )

    def mousepad_showing() -> list[Any]:
        root = etree.fromstring(get(server, "/accessibility", timeout=120).json()["AT"].encode())
        return [root] if root.xpath(frame, namespaces=ns) else []

    # mousepad registers with AT-SPI after its window maps, and its frame is exposed as showing
    # later still (an app without a showing frame is still starting or already closing)
    [root] = wait_for(mousepad_showing, f"mousepad's {note.name} frame showing in the tree", 90)
    assert root.tag == "desktop-frame"
    assert root.xpath("//*[@st:showing='true']", namespaces=ns)
    post(server, "/setup/close_window", {"window_name": note.name})


def test_accessibility_without_a_bus_is_a_clear_error(desk: XDesktop, tmp_path: Path) -> None:
    env = {k: v for k, v in desk.env.items() if k != "DBUS_SESSION_BUS_ADDRESS"}
    with GuestServer(env, tmp_path / "home", extra_args=["--no-warm"]) as s:
        r = get(s, "/accessibility")
        assert r.status_code == 503 and "D-Bus" in r.json()["message"]
        assert get(s, "/terminal").json() == {"output": None, "status": "success"}


CALC_PROFILE = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Common/Misc"><prop oor:name="ShowTipOfTheDay" oor:op="fuse"><value>false</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Misc"><prop oor:name="FirstRun" oor:op="fuse"><value>false</value></prop></item>
<item oor:path="/org.openoffice.Setup/Office"><prop oor:name="ooSetupInstCompleted" oor:op="fuse"><value>true</value></prop></item>
</oor:items>
"""


@pytest.mark.desktop
def test_libreoffice_calc_round_trip(server: GuestServer, desk: XDesktop) -> None:
    profile = server.home / ".config/libreoffice/4/user"
    profile.mkdir(parents=True, exist_ok=True)
    (profile / "registrymodifications.xcu").write_text(CALC_PROFILE)
    out = server.home / "Desktop" / "answer.ods"
    post(server, "/setup/launch", {"command": ["libreoffice", "--calc", "--norestore"]})
    wid = wait_for_window(desk.env, "LibreOffice Calc", 90)
    subprocess.run(["wmctrl", "-i", "-a", wid], env=desk.env, check=True)
    client = DesktopClient(server.url, server.token)
    # Calc's frame maps and answers pings seconds before its sheet holds the keyboard focus;
    # a key press sent in between is dropped: wait as a case does before its first action
    _wait_for_input(
        client, AppExpectation("libreoffice", ("libreoffice",), "LibreOffice Calc"), office=True
    )
    assert post(server, "/type", {"text": "=6*7\n"}).status_code == 200
    post(server, "/actions", {"code": "pyautogui.hotkey('ctrl', 'shift', 's')"})
    wait_for_window(desk.env, "Save", 60)
    _wait_for_input(client, AppExpectation("other", (), "Save"))  # the dialog holds the focus
    post(server, "/actions", {"code": "pyautogui.hotkey('ctrl', 'a')"})
    post(server, "/type", {"text": f"{out}\n"})  # the newline is a Return press
    content = wait_for(lambda: out.exists() and _ods_content(out), f"Calc to save {out.name}", 30)
    assert isinstance(content, str) and 'office:value="42"' in content
    at = get(server, "/accessibility", timeout=120).json()["AT"]  # LibreOffice is accessible (gtk3)
    assert "document-spreadsheet" in at or "soffice" in at.lower()
    post(server, "/setup/close_window", {"window_name": "LibreOffice Calc"})


def _wait_for_input(
    client: DesktopClient, want: AppExpectation, *, office: bool = False, timeout: float = 120.0
) -> None:
    """Wait with the readiness checks of ``computer_env.osworld.prepare.readiness`` until the active window
    is ``want``'s, holds the keyboard focus and answers a ping (``office``: and LibreOffice's
    accessibility tree shows toolbars and the focus inside the document)."""
    last: list[str] = []

    def ready() -> bool:
        problem = window_problem(want, x_window_state(client))
        if problem is None and office:
            problem = office_problem(office_state(client, want.title))
        last[:] = [problem or ""]
        return problem is None

    try:
        wait_for(ready, f"{want.title} to take input", timeout, interval=0.5)
    except AssertionError as exc:
        raise AssertionError(f"{exc}: {last[0] if last else 'not probed'}") from None


def _ods_content(path: Path) -> str | None:
    try:
        with zipfile.ZipFile(path) as z:
            return z.read("content.xml").decode()
    except (zipfile.BadZipFile, KeyError, OSError):
        return None


# -- lifecycle ----------------------------------------------------------------------------------


def test_children_do_not_outlive_the_server(desk: XDesktop, tmp_path: Path) -> None:
    for how in (signal.SIGTERM, signal.SIGKILL):
        marker = f"{1000 + how}.{os.getpid()}"
        with GuestServer(desk.env, tmp_path / f"home{how}", extra_args=["--no-warm"]) as s:
            assert post(s, "/setup/launch", {"command": ["sleep", marker]}).status_code == 200
            # a double fork: the grandchild is re-parented (subreaper) instead of escaping
            post(
                s,
                "/execute",
                {"command": f"(setsid sleep {marker}1 >/dev/null 2>&1 &) ; true", "shell": True},
            )
            wait_for(lambda: len(pids_matching(f"sleep {marker}")) == 2, "both sleeps", 10)  # noqa: B023 - called before the loop moves on
            s.proc.send_signal(how)
            s.proc.wait(timeout=15)
        if how == signal.SIGTERM:
            wait_for(
                lambda: not pids_matching(f"sleep {marker}"),  # noqa: B023 - called at once
                "children to die with the server",
                10,
            )
        else:  # SIGKILL leaves no time to clean up: the direct child dies by PDEATHSIG
            wait_for(lambda: not pids_matching(f"sleep {marker}$"), "the launched child to die", 10)  # noqa: B023 - called before the loop moves on
            for pid in pids_matching(f"sleep {marker}"):
                os.kill(pid, signal.SIGKILL)
