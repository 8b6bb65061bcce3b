"""``OSWorldComputerEnv`` against a real sandboxed desktop: every ``InputEvent`` kind verified by
its effect (an X event logger running inside the desktop, the pointer position, a file created
by typing into xterm), the action history, and ``wait_until_settled`` on static/changing screens."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from computer_env.base import Click, Drag, Hotkey, KeyPress, MoveTo, Scroll, TypeText, Wait
from computer_env.desktop.client import DesktopClient
from computer_env.osworld import OSWorldComputerEnv, TaskContext, default_vars, wait_until_settled
from computer_env.osworld.actions import to_pyautogui
from computer_env.osworld.catalog.tasks import parse_task
from tests.harness.helpers.polling import scaled, wait_for

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(
        os.geteuid() != 0 or not shutil.which("bwrap"),
        reason="the local sandbox needs root and bubblewrap",
    ),
]

W, H = 1024, 768

XLOG = r"""
import sys
from Xlib import X, XK, display
NAMES = {getattr(XK, n): n[3:] for n in dir(XK) if n.startswith("XK_")}
d = display.Display()
s = d.screen()
mask = (X.ButtonPressMask | X.ButtonReleaseMask | X.KeyPressMask | X.StructureNotifyMask)
w = s.root.create_window(0, 0, s.width_in_pixels, s.height_in_pixels, 0, s.root_depth,
                         X.InputOutput, X.CopyFromParent, background_pixel=s.white_pixel,
                         event_mask=mask)
w.set_wm_name("xlog")
w.map()
d.sync()
out = open(sys.argv[1], "a", buffering=1)
while True:
    e = d.next_event()
    if e.type == X.MapNotify:
        w.set_input_focus(X.RevertToParent, X.CurrentTime)
        d.sync()
        out.write("mapped\n")
    elif e.type in (X.ButtonPress, X.ButtonRelease):
        kind = "press" if e.type == X.ButtonPress else "release"
        out.write(f"{kind} {e.detail} {e.root_x} {e.root_y}\n")
    elif e.type == X.KeyPress:
        sym = d.keycode_to_keysym(e.detail, 1 if e.state & X.ShiftMask else 0)
        if sym == 0:
            sym = d.keycode_to_keysym(e.detail, 0)
        out.write(f"key {NAMES.get(sym, hex(sym))} {e.state & X.ControlMask and 1}\n")
"""


@pytest.fixture(scope="module")
def desktop() -> Iterator[Any]:
    from computer_env.desktop.providers.local.provider import LocalSandboxProvider

    provider = LocalSandboxProvider(width=W, height=H)
    provider.start()
    try:
        yield provider
    finally:
        provider.close()


@pytest.fixture
def env(desktop: Any, tmp_path: Path) -> OSWorldComputerEnv:
    client = DesktopClient.from_handle(desktop.handle)
    ctx = TaskContext(
        client=client,
        handle=desktop.handle,
        cache_dir=tmp_path,
        vars=default_vars((W, H)),
        screen=(W, H),
    )
    task = parse_task(
        {"id": "e", "instruction": "do things", "evaluator": {"func": "infeasible"}}, domain="demo"
    )
    return OSWorldComputerEnv(task, ctx, settle=None)


def sh(env: OSWorldComputerEnv, command: str) -> str:
    return env.ctx.client.execute(command, shell=True).output


@pytest.fixture
def xlog(env: OSWorldComputerEnv) -> Iterator[Any]:
    """Start the X event logger in the desktop; ``read()`` returns its lines after 'mapped'."""
    client = env.ctx.client
    client.upload_file("/tmp/xlog.py", XLOG.encode())
    sh(env, "rm -f /tmp/xlog.txt")
    client.launch(["python", "/tmp/xlog.py", "/tmp/xlog.txt"])
    wait_for(lambda: b"mapped" in (client.read_file("/tmp/xlog.txt") or b""), "the logger window")

    def read(expect: int, prefix: str = "") -> list[str]:
        def lines() -> list[str] | None:
            text = (client.read_file("/tmp/xlog.txt") or b"").decode()
            got = [ln for ln in text.splitlines()[1:] if ln.startswith(prefix)]
            return got if len(got) >= expect else None

        try:
            return wait_for(lines, f"{expect} logged events")
        except AssertionError as exc:  # what was logged, and what was on top, for a look
            logged = (client.read_file("/tmp/xlog.txt") or b"").decode(errors="replace")
            raise AssertionError(
                f"{exc}\nlogged:\n{logged}\nwindows:\n{sh(env, 'wmctrl -lG')}"
            ) from exc

    yield read
    sh(env, "pkill -f /tmp/xlog.py || true")


def test_observe_returns_png_of_screen_size(env: OSWorldComputerEnv) -> None:
    obs = env.observe()
    assert obs.image[:8] == b"\x89PNG\r\n\x1a\n" and (obs.width, obs.height) == (W, H)
    assert env.instruction == "do things"


def test_move_and_clicks_by_effect(env: OSWorldComputerEnv, xlog: Any) -> None:
    env.observe()
    out = env.step(MoveTo(x=100, y=120))
    assert env.ctx.client.cursor_position() == (100, 120) and "(100, 120)" in out.output
    env.step(Click(x=200, y=210))
    env.step(Click(x=300, y=310, button="right"))
    env.step(Click(x=400, y=410, button="middle"))
    env.step(Click(x=500, y=510, count=2))
    presses = xlog(5, "press")
    assert presses[:5] == [
        "press 1 200 210",
        "press 3 300 310",
        "press 2 400 410",
        "press 1 500 510",
        "press 1 500 510",
    ]
    assert env.ctx.action_history[:5] == [
        "pyautogui.moveTo(100, 120)",
        "pyautogui.click(200, 210)",
        "pyautogui.rightClick(300, 310)",
        "pyautogui.middleClick(400, 410)",
        "pyautogui.doubleClick(500, 510)",
    ]


def test_scroll_drag_keys_and_unicode_by_effect(env: OSWorldComputerEnv, xlog: Any) -> None:
    env.observe()
    env.step(Scroll(direction="up", amount=2, x=50, y=60))
    env.step(Scroll(direction="down", amount=1, x=50, y=60))
    env.step(Scroll(direction="left", amount=1, x=70, y=80))
    env.step(Scroll(direction="right", amount=1, x=70, y=80))
    presses = xlog(5, "press")
    assert presses[:5] == [
        "press 4 50 60",
        "press 4 50 60",
        "press 5 50 60",
        "press 6 70 80",
        "press 7 70 80",
    ]
    env.step(Drag(x1=100, y1=100, x2=400, y2=300))
    moves = xlog(7, "")
    assert "press 1 100 100" in moves and "release 1 400 300" in moves
    env.step(KeyPress(key="enter"))
    env.step(Hotkey(keys=["ctrl", "a"]))
    env.step(TypeText(text="hé€"))
    keys = xlog(6, "key")
    assert keys[0] == "key Return 0"
    assert "key a 1" in keys
    assert "key h 0" in keys  # é and € arrive through temporary keymaps: see the mousepad test
    assert env.ctx.action_history[-3:] == [
        "pyautogui.press('enter')",
        "pyautogui.hotkey('ctrl', 'a')",
        "pyautogui.write('hé€')",
    ]


def test_typing_into_xterm_creates_a_file_and_finish(env: OSWorldComputerEnv) -> None:
    client = env.ctx.client
    sh(env, "rm -f /tmp/typed.txt")
    client.launch(["xterm", "-T", "typing-term", "-e", "bash", "--norc", "--noprofile"])
    wait_for(lambda: "typing-term" in sh(env, "wmctrl -l"), "xterm")
    sh(env, "wmctrl -a typing-term")
    env.observe()
    env.step(Click(x=W // 2, y=H // 2))
    wait_for(
        lambda: "typing-term" in sh(env, "xdotool getactivewindow getwindowname"),
        "xterm to have focus",
    )
    res = env.step(TypeText(text="echo made-by-typing > /tmp/typed.txt", press_enter=True))
    assert "pressed Enter" in res.output
    assert wait_for(lambda: client.read_file("/tmp/typed.txt"), "the file") == b"made-by-typing\n"
    assert env.ctx.action_history[-1] == (
        "pyautogui.write('echo made-by-typing > /tmp/typed.txt'); pyautogui.press('enter')"
    )
    t0 = time.monotonic()
    env.step(Wait(seconds=0.3))
    assert time.monotonic() - t0 >= 0.3 and env.ctx.action_history[-1] == "WAIT"
    env.finish("INFEASIBLE: no", infeasible=True)
    assert env.ctx.action_history[-1] == "FAIL"
    env.finish("done", infeasible=False)
    assert env.ctx.action_history[-1] == "DONE"
    sh(env, "wmctrl -c typing-term")


@pytest.mark.skipif(not shutil.which("mousepad"), reason="mousepad is not installed")
def test_non_ascii_text_typed_into_an_editor_is_saved(env: OSWorldComputerEnv) -> None:
    client = env.ctx.client
    client.upload_file("/tmp/unicode.txt", b"")
    client.launch(["mousepad", "/tmp/unicode.txt"])
    wait_for(lambda: "Mousepad" in sh(env, "wmctrl -l"), "the mousepad window")
    sh(env, "wmctrl -a unicode.txt")
    wait_for(
        lambda: "unicode.txt" in sh(env, "xdotool getactivewindow getwindowname"),
        "mousepad to have focus",
    )
    env.observe()
    env.step(TypeText(text="Grüße, café € ✓"))
    env.step(Hotkey(keys=["ctrl", "s"]))
    saved = wait_for(lambda: client.read_file("/tmp/unicode.txt"), "the saved file")
    assert saved.decode("utf-8") == "Grüße, café € ✓"
    sh(env, "wmctrl -c unicode.txt")


def test_coordinates_scale_from_screenshot_to_screen() -> None:
    assert to_pyautogui(Click(x=100, y=50), (2.0, 2.0)) == "pyautogui.click(200, 100)"
    assert (
        to_pyautogui(Scroll(direction="left", amount=3, x=10, y=10), (1.5, 1.5))
        == "pyautogui.hscroll(-3, x=15, y=15)"
    )
    assert (
        to_pyautogui(Click(x=1, y=2, button="right", count=2))
        == "pyautogui.click(1, 2, clicks=2, interval=0.1, button='right')"
    )


def test_settle_static_screen_returns_quickly_and_waits_while_changing(
    env: OSWorldComputerEnv,
) -> None:
    client = env.ctx.client
    waited = wait_until_settled(client, quiet_s=0.5, cap_s=5.0)
    # from damage reports: milliseconds (tests/harness/osworld/test_settle_damage.py)
    assert waited < scaled(5.0)
    client.launch(
        [
            "xterm",
            "-T",
            "busy-term",
            "-geometry",
            "120x40+0+0",
            "-e",
            "bash",
            "-c",
            "while true; do head -c 3000 /dev/urandom | base64; sleep 0.1; done",
        ]
    )
    wait_for(lambda: "busy-term" in sh(env, "wmctrl -l"), "the busy xterm")
    try:
        waited = wait_until_settled(client, quiet_s=0.5, cap_s=3.0)
        assert waited >= 3.0
    finally:
        sh(env, "wmctrl -c busy-term")
