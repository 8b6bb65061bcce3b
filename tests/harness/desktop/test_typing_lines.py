"""Multi-line text through ``POST /type``: every line still arrives as keystrokes (exactly, in
GTK and Xt apps), but a newline costs a Return sent on the typing connection, not one more
``xdotool`` process; with a modifier held the Return still goes through ``xdotool key
--clearmodifiers``."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_typing import type_into_mousepad, type_into_xterm  # noqa: E402

from tests.harness.helpers.xdesktop import GuestServer, XDesktop  # noqa: E402

LINES = "\n".join(f"line {i}: x = {i * 7}; // ok" for i in range(12))


@pytest.fixture(scope="module")
def desk() -> Iterator[XDesktop]:
    with XDesktop(1280, 720) as d:
        yield d


@pytest.fixture(scope="module")
def server(desk: XDesktop, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GuestServer]:
    with GuestServer(
        desk.env, tmp_path_factory.mktemp("lines") / "home", extra_args=["--no-warm"]
    ) as s:
        yield s


@pytest.mark.desktop
@pytest.mark.skipif(not shutil.which("mousepad"), reason="mousepad is not installed")
def test_many_lines_into_mousepad(server: GuestServer, desk: XDesktop) -> None:
    assert type_into_mousepad(server, desk, LINES, "lines") == LINES


@pytest.mark.desktop
@pytest.mark.skipif(not shutil.which("xterm"), reason="xterm is not installed")
def test_a_line_and_its_return_into_xterm(server: GuestServer, desk: XDesktop) -> None:
    assert (
        type_into_xterm(server, desk, "echo 'a b' > /dev/null # ✓", "xline")
        == "echo 'a b' > /dev/null # ✓"
    )


@pytest.mark.desktop
def test_newlines_start_no_process(desk: XDesktop, monkeypatch: pytest.MonkeyPatch) -> None:
    """One ``xdotool`` run per line, none per Return (the old way ran one for each); with
    Shift held down the Return goes through ``xdotool key --clearmodifiers`` again."""
    from computer_env.desktop.server.input import text_input

    monkeypatch.setenv("DISPLAY", desk.env["DISPLAY"])
    if "XAUTHORITY" in desk.env:
        monkeypatch.setenv("XAUTHORITY", desk.env["XAUTHORITY"])
    calls: list[list[str]] = []
    real = text_input._xdotool

    def counting(args: list[str], stdin: bytes | None, deadline: float) -> None:
        calls.append(args)
        real(args, stdin, deadline)

    monkeypatch.setattr(text_input, "_xdotool", counting)
    text_input.type_text("one\ntwo\nthree\n")
    assert [a[0] for a in calls] == ["type", "type", "type"], calls
    calls.clear()
    shift = ["xdotool", "keydown", "shift"]
    assert os.spawnvpe(os.P_WAIT, shift[0], shift, desk.env) == 0
    try:
        text_input.type_text("a\nb")
    finally:
        up = ["xdotool", "keyup", "shift"]
        assert os.spawnvpe(os.P_WAIT, up[0], up, desk.env) == 0
    assert [a[0] for a in calls] == ["type", "key", "type"], calls
