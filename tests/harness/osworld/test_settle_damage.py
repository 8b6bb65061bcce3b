"""Settling on the X server's damage reports, on a real sandboxed desktop: a still screen costs
milliseconds, a drawing one is waited for (with the cap), a window drawn after the input is
waited for, bad fields are named, and a server without /settle falls back to screenshots."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from typing import Any

import pytest

from computer_env.desktop.client import DesktopClient
from computer_env.osworld import wait_until_settled
from tests.harness.helpers.localdesk import local_desktop
from tests.harness.helpers.polling import scaled, wait_for

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(
        os.geteuid() != 0 or not shutil.which("bwrap"),
        reason="the local sandbox needs root and bubblewrap",
    ),
]


@pytest.fixture(scope="module")
def client() -> Iterator[DesktopClient]:
    with local_desktop(width=1024, height=768) as provider:
        handle = provider.handle
        assert handle is not None
        with DesktopClient.from_handle(handle) as c:
            yield c


def _windows(client: DesktopClient) -> str:
    return client.execute(["wmctrl", "-l"]).output


def test_still_screen_settles_in_milliseconds(client: DesktopClient) -> None:
    assert (client.capabilities() or {}).get("settle") is True
    client.run_pyautogui("pyautogui.moveTo(500, 500)")
    client.settle(quiet_s=0.1, cap_s=3.0)
    times = []
    for _ in range(5):  # the server's damage path (wait_until_settled does not use it yet:
        t0 = time.monotonic()  # computer_env.osworld.prepare.settle.USE_DAMAGE)
        client.settle(quiet_s=0.1, cap_s=3.0)
        times.append(time.monotonic() - t0)
    assert sorted(times)[2] < scaled(0.2), times  # thumbnail polling needs >= quiet_s (0.3 s)


def test_drawing_screen_is_waited_for_up_to_the_cap(client: DesktopClient) -> None:
    client.launch(
        [
            "xterm",
            "-T",
            "busy-term",
            "-geometry",
            "80x20+0+0",
            "-e",
            "bash",
            "-c",
            "while true; do date +%N; sleep 0.05; done",
        ]
    )
    wait_for(lambda: "busy-term" in _windows(client), "the busy xterm")
    try:
        answer = client.settle(quiet_s=0.1, max_quiet_s=0.5, cap_s=1.0)
        assert answer is not None and answer["capped"] is True and answer["events"] > 3
        assert answer["waited_s"] >= 1.0
    finally:
        client.execute(["wmctrl", "-c", "busy-term"])
    wait_for(lambda: "busy-term" not in _windows(client), "the busy xterm to close")


def test_drawing_after_the_input_is_waited_for(client: DesktopClient) -> None:
    """A program that draws 1 s after the request and then stops: a settle while it is still
    blank sees no drawing; once it drew, the settle returns only when the screen is still."""
    # the screen still first: a window closed by an earlier test may still be redrawing
    still = client.settle(quiet_s=0.3, cap_s=5.0)
    assert still is not None and not still["capped"], still
    t0 = time.monotonic()
    client.launch(["bash", "-c", "sleep 1; exec xterm -T late-term -geometry 40x10+50+50"])
    answer = client.settle(quiet_s=0.1, cap_s=0.15)
    assert answer is not None
    if time.monotonic() - t0 < 1.0:  # answered before the xterm could draw (a loaded host
        assert answer["events"] == 0, answer  # may answer later: then it proves nothing)
    try:
        wait_for(lambda: "late-term" in _windows(client), "the late xterm")
        answer = client.settle(quiet_s=0.3, cap_s=5.0)
        assert answer is not None and not answer["capped"] and answer["still_s"] >= 0.3
    finally:
        client.execute(["wmctrl", "-c", "late-term"])


@pytest.mark.parametrize("field,value", [("quiet_s", -1), ("cap_s", "soon"), ("grace_s", 99)])
def test_bad_settle_fields_are_named(client: DesktopClient, field: str, value: Any) -> None:
    r = client._http.post("/settle", json={field: value})  # noqa: SLF001 - the raw answer
    assert r.status_code == 400 and field in r.text


class _Upstream:
    """A client of a server without /settle (an upstream OSWorld VM): screenshots only."""

    def __init__(self, client: DesktopClient) -> None:
        self.screenshot = client.screenshot


def test_without_settle_the_screenshots_are_compared(client: DesktopClient) -> None:
    waited = wait_until_settled(_Upstream(client), quiet_s=0.3, cap_s=3.0)  # type: ignore[arg-type]
    assert 0.3 <= waited < scaled(3.0)


def test_a_command_that_draws_nothing_costs_only_the_grace(client: DesktopClient) -> None:
    """An /execute that draws nothing leaves the settle with only its grace period."""
    # the screen still first: a window closed by an earlier test may still be redrawing
    still = client.settle(quiet_s=0.3, cap_s=5.0)
    assert still is not None and not still["capped"], still
    client.execute(["true"])
    answer = client.settle(quiet_s=0.1, cap_s=3.0, grace_s=0.03)
    assert answer is not None and answer["events"] == 0, answer
    assert answer["waited_s"] < scaled(0.1), answer


def test_a_screen_drawing_in_bursts_is_not_taken_as_still(client: DesktopClient) -> None:
    """Drawing every ~0.15 s: each pause is longer than ``quiet_s`` (0.1) but the screen is
    busy; the pauses seen before set the quiet needed (up to ``max_quiet_s``)."""
    client.launch(
        [
            "xterm",
            "-T",
            "burst-term",
            "-geometry",
            "80x20+0+0",
            "-e",
            "bash",
            "-c",
            "while true; do date +%N; sleep 0.15; done",
        ]
    )
    wait_for(lambda: "burst-term" in _windows(client), "the bursting xterm")
    try:
        client.settle(quiet_s=0.5, cap_s=0.8)  # a few of its bursts (the quiet is never seen)
        answer = client.settle(quiet_s=0.1, max_quiet_s=0.5, cap_s=1.5)
        assert answer is not None and answer["capped"] is True, answer
        # the answer says why: the stillness asked grew past quiet_s with the pauses seen
        assert answer["last_wait"] == "bursts" and 0.1 < answer["quiet_s"] <= 0.5, answer
    finally:
        client.execute(["wmctrl", "-c", "burst-term"])
    wait_for(lambda: "burst-term" not in _windows(client), "the bursting xterm to close")


def test_a_blinking_caret_does_not_keep_the_screen_busy(client: DesktopClient) -> None:
    """An xterm with a blinking cursor (every 0.25 s) and nothing else: still, up to the caret."""
    client.launch(
        [
            "xterm",
            "-T",
            "caret-term",
            "-geometry",
            "40x10+0+0",
            "-bc",
            "-bcn",
            "250",
            "-bcf",
            "250",
            "-e",
            "bash",
            "--norc",
            "-c",
            "read",
        ]
    )
    wait_for(lambda: "caret-term" in _windows(client), "the xterm with a blinking cursor")
    try:
        client.settle(quiet_s=0.3, cap_s=5.0)  # its first drawing
        answer = client.settle(quiet_s=0.1, max_quiet_s=1.0, cap_s=3.0)
        assert answer is not None and not answer["capped"], answer
        assert answer["waited_s"] < scaled(1.0), answer
    finally:
        client.execute(["wmctrl", "-c", "caret-term"])
    wait_for(lambda: "caret-term" not in _windows(client), "the xterm to close")


def test_glyphs_add_up_and_a_caret_does_not(monkeypatch: pytest.MonkeyPatch) -> None:
    """Text is drawn glyph by glyph, each as small as a caret: glyphs drawn close together
    count, a caret blinking in one place never does."""
    from types import SimpleNamespace

    from computer_env.desktop.server.screen import damage

    clock = [100.0]
    monkeypatch.setattr(damage.time, "monotonic", lambda: clock[0])
    watcher = object.__new__(damage.DamageWatcher)
    watcher._small, watcher._small_since = None, 0.0

    def area(x: int, y: int, w: int, h: int) -> SimpleNamespace:
        return SimpleNamespace(x=x, y=y, width=w, height=h)

    glyphs = [watcher._counts(area(3 + 10 * i, 250, 10, 19)) for i in range(4)]
    assert glyphs == [False, False, True, True]  # the third glyph makes it text
    for _ in range(10):
        clock[0] += 0.25
        assert watcher._counts(area(400, 300, 2, 19)) is False
    assert watcher._counts(area(0, 0, 300, 200)) is True
