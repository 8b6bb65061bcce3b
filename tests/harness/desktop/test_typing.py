"""``POST /type`` types any Unicode text exactly, into GTK (mousepad) and Xt (xterm) apps.

Each check types a string through the real guest server on a real Xvfb desktop, saves it from
the app, and compares the file byte for byte with what was sent. Run as a script to measure the
success rate over many repetitions::

    .venv/bin/python tests/harness/desktop/test_typing.py --reps 10
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.harness.helpers.polling import wait_for
from tests.harness.helpers.xdesktop import GuestServer, XDesktop, wait_for_window

# 60 characters: German, French, €, ✓, Greek, CJK and an emoji (outside the BMP).
MIXED = "Grüße aus Köln! Çà et là, crème brûlée 9€ ✓ Ωμέγα 中文输入 😀 fin"
# Combining marks (e + U+0301, a + U+0308 + U+0304) and more distinct characters than the
# keymap has free slots, so mappings are recycled in the middle of the text.
MANY = "e\u0301a\u0308\u0304 " + "".join(chr(0x4E00 + 7 * i) for i in range(50)) + " Ωψ 🎉 ok"

JSON = {"Content-Type": "application/json"}


def _post(server: GuestServer, path: str, payload: Any) -> requests.Response:
    return requests.post(
        server.url + path, headers={**server.headers, **JSON}, data=json.dumps(payload), timeout=120
    )


def _focus(desk: XDesktop, title: str) -> None:
    """Activate the window titled ``title`` and wait until it has the keyboard focus."""
    wid = wait_for_window(desk.env, title, 30)
    asked = 0.0

    def focused() -> bool:
        nonlocal asked
        out = subprocess.run(
            ["xdotool", "getwindowfocus", "getwindowname"],
            env=desk.env,
            capture_output=True,
            text=True,
            check=False,
        ).stdout
        if title in out:
            return True
        if time.monotonic() - asked > 1.0:  # ask again: a request made while mapping can be lost
            subprocess.run(["wmctrl", "-i", "-a", wid], env=desk.env, check=True)
            asked = time.monotonic()
        return False

    wait_for(focused, f"{title!r} to have the keyboard focus", 15, interval=0.05)


def _type(server: GuestServer, text: str) -> None:
    r = _post(server, "/type", {"text": text})
    assert r.status_code == 200, r.text
    assert r.json()["typed"] == len(text)


def type_into_mousepad(server: GuestServer, desk: XDesktop, text: str, name: str) -> str:
    """Type ``text`` into mousepad, save with ctrl+s, return the saved file's text."""
    note = server.home / f"{name}.txt"
    note.write_text("")
    _post(server, "/setup/launch", {"command": ["mousepad", "--disable-server", str(note)]})
    _focus(desk, note.name)
    _type(server, text)
    _post(server, "/actions", {"code": "pyautogui.hotkey('ctrl', 's')"})
    saved = wait_for(
        lambda: note.read_text(encoding="utf-8"), f"mousepad to save {note}", 15, interval=0.05
    )
    _post(server, "/setup/close_window", {"window_name": note.name})
    return saved.removesuffix("\n")


def type_into_xterm(server: GuestServer, desk: XDesktop, text: str, name: str) -> str:
    """Type ``text`` and Return into a shell's ``read`` in xterm; the line it wrote to a file."""
    out = server.home / f"{name}.txt"
    script = f'IFS= read -r line && printf %s "$line" > {out}.tmp && mv {out}.tmp {out}'
    _post(
        server,
        "/setup/launch",
        {
            "command": [
                "xterm",
                "-u8",
                "-T",
                name,
                "-e",
                "bash",
                "--norc",
                "--noprofile",
                "-c",
                script,
            ]
        },
    )
    _focus(desk, name)
    _type(server, text + "\n")
    return str(
        wait_for(
            lambda: out.exists() and out.read_text(encoding="utf-8"),
            f"xterm to write {out}",
            15,
            interval=0.05,
        )
    )


needs_mousepad = pytest.mark.skipif(
    not shutil.which("mousepad"), reason="mousepad is not installed"
)
needs_xterm = pytest.mark.skipif(not shutil.which("xterm"), reason="xterm is not installed")


@pytest.fixture(scope="module")
def desk() -> Iterator[XDesktop]:
    with XDesktop(1280, 720, a11y=True) as d:
        yield d


@pytest.fixture(scope="module")
def server(desk: XDesktop, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GuestServer]:
    with GuestServer(
        desk.env, tmp_path_factory.mktemp("typing") / "home", extra_args=["--no-warm"]
    ) as s:
        yield s


@pytest.mark.desktop
@needs_mousepad
@pytest.mark.parametrize("rep", range(3))
def test_mixed_unicode_into_mousepad(server: GuestServer, desk: XDesktop, rep: int) -> None:
    assert len(MIXED) == 60
    assert type_into_mousepad(server, desk, MIXED, f"mixed-{rep}") == MIXED


@pytest.mark.desktop
@needs_xterm
@pytest.mark.parametrize("rep", range(3))
def test_mixed_unicode_into_xterm(server: GuestServer, desk: XDesktop, rep: int) -> None:
    assert type_into_xterm(server, desk, MIXED, f"xmixed-{rep}") == MIXED


@pytest.mark.desktop
@needs_mousepad
def test_combining_marks_and_more_characters_than_free_keys(
    server: GuestServer, desk: XDesktop
) -> None:
    assert type_into_mousepad(server, desk, MANY, "many") == MANY


@pytest.mark.desktop
@needs_mousepad
def test_newlines_are_return_presses(server: GuestServer, desk: XDesktop) -> None:
    text = "première ligne €\nzweite Zeile ✓\n\nΩ"
    assert type_into_mousepad(server, desk, text, "lines") == text


@pytest.mark.desktop
@needs_mousepad
def test_bound_characters_are_typed_without_keymap_changes(
    server: GuestServer, desk: XDesktop
) -> None:
    """Once its characters have places in the keymap, typing a text changes the keymap 0 times
    (xdotool's own bind-press-revert caused two MappingNotify events per non-ASCII character)."""
    with mapping_notifications(desk.env["DISPLAY"]) as count:
        assert type_into_mousepad(server, desk, MIXED, "bind") == MIXED
        count()
        assert type_into_mousepad(server, desk, MIXED, "bound") == MIXED
        assert count() == 0


@contextmanager
def mapping_notifications(display_name: str) -> Iterator[Callable[[], int]]:
    """A function that returns how many MappingNotify events arrived since its last call."""
    from Xlib import X
    from Xlib.display import Display

    dpy = Display(display_name)

    def count() -> int:
        dpy.sync()
        n = 0
        while dpy.pending_events():
            n += dpy.next_event().type == X.MappingNotify
        return n

    try:
        yield count
    finally:
        dpy.close()


@pytest.mark.desktop
def test_keymap_places_are_stable_case_safe_and_recycled(monkeypatch: pytest.MonkeyPatch) -> None:
    """KeymapSlots on a bare desktop: ç and Ç never share a key as a Caps-Lock case pair, bound
    characters keep their place, and when places run out the least recently used is rebound."""
    from Xlib.display import Display

    from computer_env.desktop.server.input import text_input as ti

    monkeypatch.setattr(ti, "QUARANTINE_S", 0.05)
    with XDesktop(640, 480) as bare:
        dpy = Display(bare.env["DISPLAY"])
        try:
            slots = ti.KeymapSlots(dpy, bare.display)
            assert slots.capacity >= 4
            low, up = ti.keysym_for("ç"), ti.keysym_for("Ç")
            slots.ensure([low, up])
            (kc_low, lv_low), (kc_up, lv_up) = slots.holder(low), slots.holder(up)
            for kc, level, keysym in ((kc_low, lv_low, low), (kc_up, lv_up, up)):
                row = [int(k) for k in dpy.get_keyboard_mapping(kc, 1)[0][:2]]
                assert row[level] == keysym and not ti._alphabetic(row[0], row[1])
            slots.touch([low, up], time.monotonic())
            others = [ti.keysym_for(chr(0x3041 + i)) for i in range(slots.capacity - 2)]
            slots.ensure(others)
            assert slots.holder(low) == (kc_low, lv_low) and slots.holder(up) == (kc_up, lv_up)
            slots.touch(others, time.monotonic())
            extra = ti.keysym_for("Ж")
            slots.ensure([extra])  # all places taken: the least recently used (ç or Ç) goes
            assert slots.holder(extra) in {(kc_low, lv_low), (kc_up, lv_up)}
            assert all(slots.holder(k) is not None for k in others)
            again = ti.KeymapSlots(dpy, bare.display)  # a new request reads the same places back
            assert again.holder(extra) == slots.holder(extra) and again.capacity == slots.capacity
        finally:
            dpy.close()


@pytest.mark.desktop
@needs_mousepad
@needs_xterm
def test_ping_tells_gtk_apps_from_xterm(server: GuestServer, desk: XDesktop) -> None:
    """Rebinding waits for a ping answer where the app speaks _NET_WM_PING (GTK), else a delay."""
    from Xlib.display import Display

    from computer_env.desktop.server.input.text_input import active_window, ping_window

    note = server.home / "ping.txt"
    note.write_text("")
    _post(server, "/setup/launch", {"command": ["mousepad", "--disable-server", str(note)]})
    _post(server, "/setup/launch", {"command": ["xterm", "-T", "ping-term"]})
    dpy = Display(desk.env["DISPLAY"])
    try:
        for title, expected in ((note.name, True), ("ping-term", None)):
            _focus(desk, title)
            assert ping_window(dpy, active_window(dpy), 10) is expected
    finally:
        dpy.close()
        _post(server, "/setup/close_window", {"window_name": note.name})
        _post(server, "/setup/close_window", {"window_name": "ping-term"})


def test_lone_surrogate_is_a_400(server: GuestServer) -> None:
    r = requests.post(
        server.url + "/type",
        headers={**server.headers, **JSON},
        data='{"text": "a\\ud800b"}',
        timeout=30,
    )
    assert r.status_code == 400 and "Unicode" in r.json()["message"]


def _measure(reps: int) -> None:
    """Type MIXED and MANY ``reps`` times into each app; print the success rate and every miss."""
    apps = {"mousepad": type_into_mousepad, "xterm": type_into_xterm}
    texts = {"mixed": MIXED, "many": MANY}
    root = Path(tempfile.mkdtemp(prefix="typing-measure-"))
    with (
        XDesktop(1280, 720, a11y=True) as d,
        GuestServer(d.env, root / "home", extra_args=["--no-warm"]) as s,
    ):
        try:
            for (app, run), (label, text) in itertools.product(apps.items(), texts.items()):
                ok = 0
                for i in range(reps):
                    got = run(s, d, text, f"{app}-{label}-{i}")
                    ok += got == text
                    if got != text:
                        print(f"{app} {label} #{i}: {got!r}")
                print(f"{app} {label}: {ok}/{reps} exact")
        finally:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=10)
    _measure(parser.parse_args().reps)
