"""Ready means the page is there: Chrome's readiness waits for the task's page to be loaded and
painted on the screen, and no app's readiness passes a window that is up but still blank.

On a real local desktop with real Chromium: a page served slowly by a real local HTTP server (its
stylesheet, which paints the page green, or the second half of its body, late) is on the screen
when :func:`wait_until_ready` returns; a DevTools port that never answers is an unscored setup
failure naming what was waited for; an xterm that is up but draws nothing for a while (no
scrollbar, no prompt, no cursor) is waited for until its text shows. The pure parts (what a probe
answer means, where a viewport is, what a blank region is) are checked on hand-made values first.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from PIL import Image

from computer_env.osworld import TaskContext
from computer_env.osworld.catalog.tasks import parse_task
from computer_env.osworld.context import default_vars
from computer_env.osworld.prepare.readiness import (
    AppNotReady,
    expected_app,
    page_problem,
    screen_problem,
    viewport_box,
    wait_until_ready,
)
from computer_env.osworld.prepare.settle import css_rgb, ink_pixels, is_blank, screen_image
from computer_env.osworld.prepare.setup import run_setup_in_process as run_setup
from tests.harness.helpers.localdesk import local_desktop
from tests.harness.helpers.pixels import rgb

GREEN = (0, 160, 0)
DELAY_S = 6.0
"""How late the slow part of a page comes (well past the old one second of screen quiet)."""

_PAGES: dict[str, tuple[list[tuple[float, bytes]], str]] = {
    # path: ([(delay before, chunk)], content type)
    "/slow-css.html": (
        [
            (
                0.0,
                b"<html><head><title>Slow CSS</title>"
                b"<link rel=stylesheet href=/late.css></head>"
                b"<body><h1>Teapots</h1><p>Search the shop</p></body></html>",
            )
        ],
        "text/html",
    ),
    "/late.css": ([(DELAY_S, b"body { background: rgb(0, 160, 0); margin: 0 }")], "text/css"),
    "/slow-body.html": (
        [
            (0.0, b"<html><head><title>Slow body</title></head><body>"),
            (
                DELAY_S,
                b"<div style='position:fixed;inset:0;background:rgb(0,160,0)'>"
                b"<h1>Teapots</h1></div></body></html>",
            ),
        ],
        "text/html",
    ),
}


class _SlowPages(BaseHTTPRequestHandler):
    """Serves :data:`_PAGES`, each chunk after its delay (the body streamed as it comes)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, fmt: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802 - the http.server hook's name
        path = self.path.split("?", 1)[0]
        if path not in _PAGES:
            self.send_error(404)
            return
        chunks, ctype = _PAGES[path]
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Length", str(sum(len(c) for _, c in chunks)))
        self.end_headers()
        for delay, chunk in chunks:
            if delay:
                self.wfile.flush()
                time.sleep(delay)  # the slowness under test (a server's delay, not a wait)
            self.wfile.write(chunk)
        self.wfile.flush()


@pytest.fixture(scope="module")
def slow_server() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("0.0.0.0", 0), _SlowPages)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _browser_task(url: str, port: int = 1337) -> Any:
    return parse_task(
        {
            "id": "slow-page",
            "instruction": "x",
            "config": [
                {
                    "type": "launch",
                    "parameters": {
                        "command": [
                            "chromium",
                            f"--remote-debugging-port={port}",
                            "--no-first-run",
                            "--no-default-browser-check",
                            "--disable-background-networking",
                            "--password-store=basic",
                            "--user-data-dir=/home/user/.chromium-ready",
                            "--window-position=0,0",
                            "--window-size=1920,1080",
                            "--start-maximized",
                            url,
                        ]
                    },
                }
            ],
            "evaluator": {"func": "exact_match"},
        }
    )


# -- pure ------------------------------------------------------------------------------------
def test_the_browser_expectation_names_the_setups_devtools_ports() -> None:
    app = expected_app(_browser_task("http://x/", port=1337))
    assert app is not None and app.kind == "browser" and app.cdp_ports == (1337,)
    forwarded = parse_task(
        {
            "id": "f",
            "instruction": "x",
            "config": [
                {
                    "type": "launch",
                    "parameters": {"command": ["google-chrome", "--remote-debugging-port=1337"]},
                },
                {
                    "type": "launch",
                    "parameters": {"command": "socat tcp-listen:9222,fork tcp:localhost:1337"},
                },
            ],
            "evaluator": {"func": "exact_match"},
        }
    )
    assert expected_app(forwarded).cdp_ports == (1337, 9222)


def test_page_problems_say_what_is_missing() -> None:
    page = {
        "url": "http://h/p",
        "title": "Shop",
        "ready": "complete",
        "visible": "visible",
        "frame": True,
        "content": True,
        "fcp": True,
    }
    assert page_problem({"pages": [page]}) is None
    assert "still loading" in page_problem({"pages": [{**page, "ready": "interactive"}]})
    assert page_problem({"pages": [{**page, "ready": "interactive"}]}, loading_ok=True) is None
    assert "frame" in page_problem({"pages": [{**page, "frame": False}]})
    assert "contentful" in page_problem({"pages": [{**page, "fcp": False}]})
    assert page_problem({"pages": [{**page, "fcp": False, "content": False}]}) is None
    assert "no page" in page_problem({"pages": [{**page, "visible": "hidden"}]})
    assert "DevTools" in page_problem({"error": "Chrome's DevTools do not answer (port 9)"})


def test_blank_regions_and_the_viewport() -> None:
    img = Image.new("RGB", (200, 100), (255, 255, 255))
    assert is_blank(img, (0, 0, 200, 100))
    img.paste((0, 0, 0), (10, 10, 20, 20))  # 100 ink pixels: drawn
    assert not is_blank(img, (0, 0, 200, 100))
    assert is_blank(img, (0, 0, 200, 100), pointer=(12, 12))  # the cursor's area is left out
    page = {"x": 0, "y": 0, "ow": 1920, "oh": 1080, "iw": 1920, "ih": 950, "dpr": 1}
    assert viewport_box(page) == (2, 132, 1918, 1078)
    assert css_rgb("rgb(0, 160, 0)") == GREEN and css_rgb("rgba(0, 0, 0, 0)") is None


# -- on a real desktop -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def desktop(slow_server: ThreadingHTTPServer) -> Iterator[Any]:
    with local_desktop(
        allow_ports=[slow_server.server_address[1]], skip_unavailable=True
    ) as provider:
        yield provider


def _context(desktop: Any, tmp_path: Any) -> TaskContext:
    from computer_env.desktop.client import DesktopClient

    handle = desktop.reset()
    client = DesktopClient.from_handle(handle)
    screen = client.screen_size()
    return TaskContext(
        client=client,
        handle=handle,
        cache_dir=tmp_path,
        screen=screen,
        task_id="slow-page",
        vars=default_vars(screen),
    )


def _green_share(shot: bytes) -> float:
    img = screen_image(shot).resize((192, 108), Image.Resampling.NEAREST)
    colours = img.getcolors(192 * 108) or []
    green = sum(n for n, c in colours if max(abs(a - b) for a, b in zip(rgb(c), GREEN)) <= 24)
    return green / (192 * 108)


@pytest.mark.desktop
@pytest.mark.parametrize("path", ["/slow-css.html", "/slow-body.html"])
def test_ready_returns_once_the_slow_page_is_on_screen(
    desktop: Any, slow_server: ThreadingHTTPServer, tmp_path: Any, path: str
) -> None:
    ctx = _context(desktop, tmp_path)
    url = f"http://{ctx.handle.guest_host}:{slow_server.server_address[1]}{path}"
    try:
        started = time.monotonic()
        run_setup(_browser_task(url).config, ctx)
        report = wait_until_ready(ctx.client, _browser_task(url), timeout=180)
        shot = ctx.client.screenshot()  # at once: what the agent's first screenshot shows
        share = _green_share(shot)
        assert share > 0.5, (
            f"the page's green is on {share:.0%} of the screen after ready "
            f"({time.monotonic() - started:.1f} s): {report.last}"
        )
        pages = report.last["pages"]["pages"]
        assert any(p.get("ready") == "complete" and p.get("fcp") for p in pages), pages
        assert screen_problem(shot, report.last, report.last["pages"]) is None
    finally:
        ctx.client.close()


@pytest.mark.desktop
def test_devtools_that_never_answer_are_unscored_setup_naming_the_wait(
    desktop: Any, tmp_path: Any
) -> None:
    ctx = _context(desktop, tmp_path)
    task = parse_task(
        {
            "id": "no-cdp",
            "instruction": "x",
            "config": [
                {
                    "type": "launch",
                    "parameters": {
                        "command": [
                            "chromium",
                            "--no-first-run",
                            "--user-data-dir=/home/user/.chromium-ready",
                            "--remote-debugging-port=0",
                            "about:blank",
                        ]
                    },
                }
            ],
            "evaluator": {"func": "exact_match"},
        }
    )
    try:
        run_setup(task.config, ctx)
        with pytest.raises(
            AppNotReady, match="not ready for input after 25 s: Chrome's DevTools do not answer"
        ):
            wait_until_ready(ctx.client, task, timeout=25)
    finally:
        ctx.client.close()


@pytest.mark.desktop
def test_a_window_that_is_up_but_blank_is_waited_for(desktop: Any, tmp_path: Any) -> None:
    ctx = _context(desktop, tmp_path)
    late = "sleep 15; echo READY READY READY; sleep 600"  # the slowness under test
    task = parse_task(
        {
            "id": "blank-xterm",
            "instruction": "x",
            "config": [
                {
                    "type": "launch",
                    "parameters": {
                        "command": [
                            "xterm",
                            "+sb",
                            "-geometry",
                            "80x24+100+100",
                            "-e",
                            "sh",
                            "-c",
                            f"printf '\\033[?25l'; {late}",
                        ]
                    },
                }
            ],
            "evaluator": {"func": "exact_match"},
        }
    )
    assert expected_app(task).kind == "terminal"
    try:
        started = time.monotonic()
        run_setup(task.config, ctx)
        report = wait_until_ready(ctx.client, task, timeout=120)
        shot = screen_image(ctx.client.screenshot())
        x, y, w, h = report.last["geometry"]
        ink = ink_pixels(shot, (x, y, x + w, y + h), tuple(report.last["pointer"]))
        assert ink > 100, (
            f"the xterm shows {ink} drawn pixels after ready "
            f"({time.monotonic() - started:.1f} s): {report.last}"
        )
    finally:
        ctx.client.close()
