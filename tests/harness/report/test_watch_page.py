"""The watch page: time spent on the case and in its phase, the action as a person reads it,
and the desktop's screen during set-up (before any step has one). Real watch server on
loopback, real status files, the page rendered by headless Chromium."""

from __future__ import annotations

import io
import re
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest
from PIL import Image

from fixtures.cases.events import SETUP_SCREEN, CaseEvents, _action
from fixtures.report.watch.server import WatchServer
from tests.harness.helpers.pixels import rgb

CHROMIUM = Path("/usr/bin/chromium")


def _jpeg(colour: tuple[int, int, int]) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (64, 40), colour).save(out, "JPEG")
    return out.getvalue()


def test_actions_read_like_actions() -> None:
    assert (
        _action({"tool_name": "click", "element": "OK button", "x": 500, "y": 20})
        == 'click "OK button" at (500, 20)'
    )
    assert (
        _action({"tool_name": "write", "content": "hello", "press_enter": True})
        == 'write "hello" + Enter'
    )
    assert _action({"tool_name": "hotkey", "keys": ["ctrl", "s"]}) == "hotkey ctrl+s"
    assert (
        _action({"tool_name": "drag", "x1": 1, "y1": 2, "x2": 3, "y2": 4})
        == "drag from (1, 2) to (3, 4)"
    )
    assert (
        _action({"tool_name": "run_code", "language": "bash", "code": "ls\n  -l"})
        == "run_code bash: ls -l"
    )
    assert (
        _action({"tool_name": "scroll", "direction": "down", "amount": 3})
        == "scroll direction=down amount=3"
    )
    assert _action(None) == ""


def _events(run_dir: Path) -> CaseEvents:
    case_dir = run_dir / "model" / "os" / "task-1"
    case_dir.mkdir(parents=True)
    return CaseEvents(
        case_id="os/task-1",
        case_dir=case_dir,
        run_dir=run_dir,
        worker_id="gw0",
        printer=None,
        watch=True,
    )


def test_setup_screen_is_served_until_the_first_step(tmp_path: Path) -> None:
    events = _events(tmp_path)
    events.phase("setup")
    events.setup_screen(_jpeg((200, 30, 30)))
    server = WatchServer(tmp_path)
    server.start()
    try:
        with httpx.Client(base_url=server.url, timeout=10) as c:
            status = c.get("/status.json").json()
            (worker,) = status["workers"]
            assert worker["screen"] == SETUP_SCREEN and worker["screen_url"] == "/screen/gw0"
            assert worker["case_started"] > 0 and worker["phase_started"] >= worker["case_started"]
            shot = c.get("/screen/gw0")
            assert shot.status_code == 200
            assert rgb(Image.open(io.BytesIO(shot.content)).getpixel((5, 5)))[0] > 150
            (events.case_dir / "step_000.png").write_bytes(b"\x89PNG")
            events.step(
                SimpleNamespace(
                    step=0,
                    tool_call={"tool_name": "click", "x": 1, "y": 2},
                    screenshot="step_000.png",
                    note=None,
                    thought="t",
                    error=None,
                    latency_s=0.1,
                )
            )
            events.setup_screen(_jpeg((0, 0, 0)))  # after a step: the step's screen stays
            worker = c.get("/status.json").json()["workers"][0]
            assert worker["screen"] == "step_000.png" and worker["action"] == "click at (1, 2)"
    finally:
        server.stop()


@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs /usr/bin/chromium")
def test_page_shows_elapsed_time_action_and_setup_screen(tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    events = _events(tmp_path)
    events.state["case_started"] -= 75  # this case started 75 s ago
    events.phase("settle")
    events.setup_screen(_jpeg((30, 200, 30)))
    server = WatchServer(tmp_path)
    server.start()
    try:
        with sync_api.sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu"]
            )
            try:
                page = browser.new_page()
                page.goto(server.url)
                page.wait_for_selector(".worker img", timeout=10_000)
                text = page.locator(".worker").inner_text()
                assert re.search(r"elapsed: 1m[1-5]\ds on this case", text), text
                assert "in this phase" in text
                page.wait_for_function(
                    "document.querySelector('.worker img').naturalWidth > 0", timeout=10_000
                )
            finally:
                browser.close()
    finally:
        server.stop()
