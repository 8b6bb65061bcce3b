"""The ``--watch`` page: real status files written by ``CaseEvents``, the real server on
127.0.0.1, the page opened in headless Chromium (screen images load, model text stays text,
nothing outside the run folder is served)."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from fixtures.report.progress import ProgressPlugin
from fixtures.report.watch import STATUS_DIR, CaseEvents, WatchServer
from holo_agent.records import StepRecord

CHROMIUM = "/usr/bin/chromium"
EVIL = '<img src=x onerror="window.__pwned = 1">'


def chromium_page(pw: Any) -> tuple[Any, Any]:
    """A headless Chromium (Debian's) and a page in it."""
    browser = pw.chromium.launch(
        executable_path=CHROMIUM,
        args=[
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ],
    )
    return browser, browser.new_page(viewport={"width": 1280, "height": 900})


def need_chromium() -> Any:
    if not Path(CHROMIUM).exists():
        pytest.skip("Chromium is not installed")
    return pytest.importorskip("playwright.sync_api")


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def outbound_address() -> str | None:
    """A non-loopback address of this machine, if it has one (no packet is sent)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("10.255.255.255", 1))
            address = s.getsockname()[0]
    except OSError:
        return None
    return None if address.startswith("127.") else address


def test_watch_page_shows_each_worker_in_chromium(
    tmp_path: Path, pytestconfig: pytest.Config
) -> None:
    sync_api = need_chromium()
    run_dir = tmp_path / "run"
    case_dir = run_dir / "reference-policy" / "os" / "t1"
    case_dir.mkdir(parents=True)
    Image.new("RGB", (640, 400), (30, 120, 200)).save(case_dir / "step_002.png")
    (tmp_path / "secret.png").write_bytes(b"not yours")

    printed: list[str] = []
    one = CaseEvents(
        case_id="os/t1",
        case_dir=case_dir,
        run_dir=run_dir,
        worker_id="gw0",
        printer=printed.append,
        watch=True,
    )
    one.phase("setup")
    one.phase("agent")
    one.step(
        StepRecord(
            index=2,
            step=2,
            time=0.0,
            latency_s=0.25,
            thought=EVIL,
            note="the file is open",
            screenshot="step_002.png",
            tool_call={"tool_name": "click", "element": "OK", "x": 10, "y": 20},
        )
    )
    two = CaseEvents(
        case_id="os/t2",
        case_dir=run_dir / "reference-policy" / "os" / "t2",
        run_dir=run_dir,
        worker_id="gw1",
        printer=None,
        watch=True,
    )
    two.phase("setup")
    assert printed[0] == "[os/t1] setup starts"
    assert printed[1].startswith("[os/t1] agent starts (setup took ")
    assert printed[2].startswith('[os/t1] step 2: click "OK" at (10, 20)') and printed[2].endswith(
        "| model latency 0.25 s"
    )
    # a status that points outside the run folder
    (run_dir / STATUS_DIR / "gw9.json").write_text(
        json.dumps(
            {
                "worker": "gw9",
                "case": "x/y",
                "case_dir": "../..",
                "screen": "step_001.png",
                "phase": "agent",
            }
        )
    )

    progress = ProgressPlugin(
        pytestconfig, run_name="r1", durations={"os/t1": 20.0}, live=False, check_evaluators=False
    )
    progress._select([f"t.py::test[os/t{i}]" for i in (1, 2, 3)])
    progress.pytest_runtest_logstart("t.py::test[os/t1]", None)
    server = WatchServer(run_dir, progress)
    url = server.start()
    try:
        assert url.startswith("http://127.0.0.1:")
        assert server._httpd is not None and server._httpd.server_address[0] == "127.0.0.1"
        port = int(url.rsplit(":", 1)[1].strip("/"))
        other = outbound_address()
        if other is not None:  # not reachable on another address of this machine
            with pytest.raises(OSError):
                socket.create_connection((other, port), 2).close()
        status = json.loads(get(url + "status.json")[1])
        assert status["progress"]["total"] == 3 and status["progress"]["done"] == 0
        assert status["progress"]["eta_s"] is not None
        assert [w["worker"] for w in status["workers"]] == ["gw0", "gw1", "gw9"]
        assert get(url + "screen/gw9")[0] == 404  # ../.. is refused
        assert get(url + "screen/..%2F..%2Fsecret.png")[0] == 404
        assert get(url + "screen/gw1")[0] == 404  # no screen yet
        code, body = get(url + "screen/gw0")
        assert code == 200 and body[:8] == b"\x89PNG\r\n\x1a\n"
        with sync_api.sync_playwright() as pw:
            browser, page = chromium_page(pw)
            try:
                page.goto(url)
                page.wait_for_selector(".worker[data-worker=gw0] img", timeout=20_000)
                page.wait_for_function(
                    "document.querySelector('.worker[data-worker=gw0] img').naturalWidth > 0",
                    timeout=20_000,
                )
                card = page.inner_text(".worker[data-worker=gw0]")
                assert "gw0: os/t1" in card and "step: 2" in card and "agent" in card
                assert EVIL in card  # shown as text, never run
                assert page.evaluate("window.__pwned") is None
                assert "setup" in page.inner_text(".worker[data-worker=gw1]")
                assert page.inner_text("#progress").startswith("0 / 3 done")
                assert "ETA" in page.inner_text("#progress")
                page.screenshot(path=str(tmp_path / "watch.png"), full_page=True)
            finally:
                browser.close()
    finally:
        server.stop()
    assert not (run_dir / STATUS_DIR).exists(), "the live status is removed at the end"
    assert (tmp_path / "watch.png").stat().st_size > 10_000
