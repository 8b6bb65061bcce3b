"""DesktopClient against the real guest server on a real Xvfb desktop.

The upstream fallback is tested against the same server started with ``--osworld-only``, which
serves exactly OSWorld's API (no /capabilities, /actions, /type): the client must detect that
and use OSWorld's ``/execute`` + ``python -c`` path instead.
"""

from __future__ import annotations

import functools
import io
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

from computer_env.desktop.client import DesktopClient, DesktopRequestError, ExecResult
from computer_env.desktop.providers.base import DesktopHandle
from computer_env.errors import VMUnreachable
from tests.harness.helpers.polling import scaled, wait_for
from tests.harness.helpers.xdesktop import GuestServer, XDesktop, wait_for_focus, wait_for_window


@pytest.fixture(scope="module")
def desk() -> Iterator[XDesktop]:
    with XDesktop(1024, 768) as d:
        yield d


@pytest.fixture(scope="module")
def server(desk: XDesktop, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GuestServer]:
    with GuestServer(desk.env, tmp_path_factory.mktemp("client") / "home") as s:
        yield s


@pytest.fixture()
def client(server: GuestServer) -> Iterator[DesktopClient]:
    handle = DesktopHandle(url=server.url, token=server.token, display=None)
    with DesktopClient.from_handle(handle, timeout=30) as c:
        yield c


def test_discovery_and_screen(client: DesktopClient) -> None:
    assert client.ping()
    caps = client.capabilities()
    assert caps is not None and caps["fast_actions"] and "webp" in caps["formats"]
    assert client.platform() == "Linux"
    assert client.screen_size() == (1024, 768)
    for fmt in ("png", "jpeg", "webp"):
        image = Image.open(io.BytesIO(client.screenshot(fmt, quality=60 if fmt != "png" else None)))
        assert image.size == (1024, 768)
        assert image.format == {"png": "PNG", "jpeg": "JPEG", "webp": "WEBP"}[fmt]


def test_commands(client: DesktopClient, server: GuestServer) -> None:
    result = client.execute(["sh", "-c", "echo out; echo err >&2; exit 5"])
    assert isinstance(result, ExecResult)
    assert (result.output, result.error, result.returncode, result.ok) == (
        "out\n",
        "err\n",
        5,
        False,
    )
    assert client.execute("echo $HOME", shell=True).output.strip() == str(server.home)
    assert client.execute("echo a b").output == "a b\n"
    fast = client.run_pyautogui("pyautogui.moveTo(200, 150); print(pyautogui.position())")
    assert fast.ok and "200" in fast.output
    assert client.cursor_position() == (200, 150)
    assert client.run_python("print(6*7)")["output"] == "42\n"
    bash = client.run_bash_script("pwd; exit 1", timeout=10, working_dir="/tmp")
    assert bash == {"status": "error", "output": "/tmp\n", "error": "", "returncode": 1}
    with pytest.raises(DesktopRequestError) as info:
        client.execute(["no-such-binary-here"])
    assert info.value.status == 500 and "no-such-binary-here" in info.value.message


def test_files(client: DesktopClient, server: GuestServer) -> None:
    client.upload_file("~/Desktop/notes/n.txt", "héllo".encode())
    assert client.read_file("~/Desktop/notes/n.txt") == "héllo".encode()
    assert client.read_file("~/Desktop/absent.txt") is None
    tree = client.list_directory(str(server.home / "Desktop"))
    assert {
        "type": "directory",
        "name": "notes",
        "children": [{"type": "file", "name": "n.txt"}],
    } in tree["children"]
    assert client.desktop_path() == str(server.home / "Desktop")
    with pytest.raises(DesktopRequestError) as info:
        client.list_directory("/no/such/dir")
    assert info.value.status == 400


def test_windows_typing_and_terminal(
    client: DesktopClient, server: GuestServer, desk: XDesktop
) -> None:
    client.launch("xterm -T client-term")
    wait_for_window(desk.env, "client-term", 15)
    client.activate_window("client-term")
    target = server.home / "typed.txt"
    client.type_text(f"echo 'ä €' > {target}\n")
    wait_for(
        lambda: target.exists() and target.read_text(encoding="utf-8") == "ä €\n",
        "xterm to run the typed command",
        10,
    )
    assert client.terminal_output() is None  # xterm has no AT-SPI; no bus here either
    client.close_window("client-term", strict=True)
    with pytest.raises(DesktopRequestError):
        client.activate_window("no such window at all")
    client.open_file("xterm")
    client.close_window("xterm", strict=True)


def test_accessibility_error_is_a_request_error(client: DesktopClient) -> None:
    with pytest.raises(DesktopRequestError) as info:  # this desktop has no D-Bus session
        client.accessibility_tree()
    assert info.value.status == 503


def test_recording(client: DesktopClient) -> None:
    client.start_recording()
    client.run_pyautogui("pyautogui.moveTo(10, 10)")
    time.sleep(0.5)
    video = client.end_recording()
    assert video[4:8] == b"ftyp"


def test_retries_then_vm_unreachable(desk: XDesktop, tmp_path: Path) -> None:
    s = GuestServer(desk.env, tmp_path / "home", extra_args=["--no-warm"])
    c = DesktopClient(s.url, s.token, retries=2, backoff=0.05)
    try:
        assert c.platform() == "Linux"
        s.close()
        assert not c.ping()
        started = time.monotonic()
        with pytest.raises(VMUnreachable) as info:
            c.screenshot()
        assert "3 attempts" in str(info.value) and info.value.category == "vm_unreachable"
        assert time.monotonic() - started < scaled(5)
        with pytest.raises(VMUnreachable):
            c.execute(["true"])
    finally:
        c.close()
        s.close()


def test_wrong_token_is_a_403_request_error(server: GuestServer) -> None:
    with DesktopClient(server.url, "not-the-token") as c:
        with pytest.raises(DesktopRequestError) as info:
            c.platform()
        assert info.value.status == 403
        assert not c.ping()


def _text_of(path: Path) -> str:
    """The file's text, or "" while it does not exist."""
    return path.read_text(encoding="utf-8") if path.exists() else ""


def test_falls_back_to_osworld_api_without_capabilities(desk: XDesktop, tmp_path: Path) -> None:
    with (
        GuestServer(desk.env, tmp_path / "home", extra_args=["--osworld-only"]) as s,
        DesktopClient(s.url, s.token) as c,
    ):
        assert c.capabilities() is None  # /capabilities is a 404 there
        result = c.run_pyautogui("pyautogui.moveTo(300, 200); print(pyautogui.position())")
        assert result.ok and "300" in result.output  # ran via /execute + python -c
        assert c.cursor_position() == (300, 200)
        image = Image.open(io.BytesIO(c.screenshot("jpeg", quality=50)))  # converted client-side
        assert image.format == "JPEG" and image.size == (1024, 768)
        c.launch(["xterm", "-T", "fallback-term", "-e", "bash", "--norc", "--noprofile"])
        wait_for_window(desk.env, "fallback-term", 15)
        c.activate_window("fallback-term")
        wait_for_focus(desk.env, "fallback-term")  # keys typed before focus lands go elsewhere
        # xdotool through /execute, each character outside the keymap bound first for good
        # (xdotool's own scratch key lost the € now and then: xterm typed `echo  > f`)
        for i, word in enumerate(("€", "éЖ€", "ÇçЖ")):
            target = s.home / f"fallback-{i}.txt"
            c.type_text(f"echo {word} > {target}")
            c.run_pyautogui("pyautogui.press('enter')")
            typed = wait_for(
                functools.partial(_text_of, target), "the fallback typing to reach xterm", 20
            )
            assert typed == f"{word}\n", f"xterm received {typed!r}"
        c.close_window("fallback-term")
