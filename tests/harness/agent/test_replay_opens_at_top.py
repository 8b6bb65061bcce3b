"""The replay page opens at its top (title, outcome, evaluator), not scrolled down to the
filmstrip, even when the filmstrip starts below the fold; choosing a step still scrolls to it
(headless Chromium)."""

from __future__ import annotations

from pathlib import Path

import pytest

from holo_agent import HoloComputerAgent, Recorder, render_replay
from holo_agent.reference import ReferenceEndpoint
from tests.harness.helpers.memenv import MemoryEnv

CHROMIUM = Path("/usr/bin/chromium")
TASK = "Click OK three times."
CLICK = {
    "note": None,
    "thought": "t",
    "tool_call": {"tool_name": "click", "element": "OK", "x": 500, "y": 500},
}
SOLUTION = [
    CLICK,
    CLICK,
    CLICK,
    {"note": None, "thought": "t", "tool_call": {"tool_name": "answer", "content": "done"}},
]


@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs /usr/bin/chromium")
def test_replay_opens_at_its_top(tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    with ReferenceEndpoint({TASK: SOLUTION}) as ep:
        HoloComputerAgent(ep.url, "reference-policy", recorder=Recorder(tmp_path)).run(
            MemoryEnv(TASK, 1024, 640), max_steps=6
        )
    page_path = render_replay(tmp_path)
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM),
            args=["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"],
        )
        try:
            page = browser.new_page(viewport={"width": 900, "height": 260})
            page.goto(page_path.as_uri())
            page.wait_for_load_state("load")
            below = page.evaluate(
                "document.querySelector('.filmstrip').getBoundingClientRect().top + window.scrollY"
            )
            assert below > 0  # the filmstrip is not the first thing on the page
            assert page.evaluate("window.scrollY") == 0
            assert page.locator("body").get_attribute("data-current") == "0"
            page.keyboard.press("End")
            assert page.locator("body").get_attribute("data-current") == "3"
            assert page.evaluate("window.scrollY") > 0  # a chosen step is still scrolled to
        finally:
            browser.close()
