"""The documentation's screenshots, remade from a real run: the report, a replay page and the
live ``--watch`` page, each taken in headless Chromium (Debian's, which ``make setup`` installs)
with playwright (the ``dev`` extra).

It runs a few built-in OSWorld tasks on local desktops, played by the reference endpoint with
each answer held back a second (``--reference-faults delay=1``) so that the watch page shows
workers at play, into ``results/docs-screenshots/`` (git-ignored), and writes
``docs/_static/screenshots/{watch,report,replay}.png`` (256-colour PNGs, to stay small).
``make screenshots`` runs it; the site shows the pictures (``make docs``).

    python scripts/screenshots.py [--out DIR] [--workers N] [--task DOMAIN/ID ...]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
TASKS = (
    "os/os-create-report-file",
    "text_editor/text-editor-sort-names",
    "libreoffice_calc/calc-line-totals",
    "chrome/chrome-search-teapot",
)
VIEWPORT = {"width": 1280, "height": 820}


def wait_until(what: str, check: Any, timeout: float, child: subprocess.Popen[bytes]) -> Any:
    """``check()``'s first true value, polled every 0.5 s; fails naming ``what``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        if child.poll() is not None:
            raise SystemExit(f"screenshots: the run ended before {what}")
        time.sleep(0.5)
    raise SystemExit(f"screenshots: no {what} after {timeout:.0f} s")


def status(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url + "status.json", timeout=10) as r:
        return json.loads(r.read())  # type: ignore[no-any-return]


def a_worker_playing(url: str) -> bool:
    try:
        workers = status(url)["workers"]
    except OSError:
        return False
    playing = [
        w for w in workers if w.get("screen_url") and w.get("phase") == "agent" and w.get("thought")
    ]
    return len(playing) >= min(2, len(workers) or 1)


def click_step(case: Path) -> int | None:
    """The first step of a case whose tool call was a click (the replay marks where)."""
    for i, line in enumerate((case / "traj.jsonl").read_text().splitlines()):
        if "click" in json.dumps(json.loads(line).get("tool_call")):
            return i
    return None


def _shown(path: Path) -> str:
    """A path as the pictures show it: relative to the checkout where it is inside it."""
    path = path.resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def shrink(png: Path) -> None:
    """To a 256-colour PNG (a screenshot of pages and desktops keeps its look)."""
    from PIL import Image

    with Image.open(png) as im:
        small = im.convert("RGB").quantize(
            colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE
        )
    small.save(png, optimize=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python scripts/screenshots.py", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "_static" / "screenshots")
    ap.add_argument("--workers", type=int, default=2, help="xdist workers (default 2)")
    ap.add_argument(
        "--task",
        action="append",
        default=None,
        metavar="DOMAIN/ID",
        help=f"a built-in task to run (repeatable; default: {', '.join(TASKS)})",
    )
    ap.add_argument("--results-dir", type=Path, default=ROOT / "results" / "docs-screenshots")
    args = ap.parse_args(argv)
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"screenshots: no Chromium at {CHROMIUM} (make setup installs it)")
    from playwright.sync_api import sync_playwright

    tasks: dict[str, list[str]] = {}
    for case in args.task or TASKS:
        domain, _, task_id = case.partition("/")
        tasks.setdefault(domain, []).append(task_id)
    run = time.strftime("run-%Y%m%d-%H%M%S")
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        args.results_dir.mkdir(parents=True, exist_ok=True)
        task_list = args.results_dir / "screenshot-tasks.json"  # named in the report
        task_list.write_text(json.dumps(tasks))
        log_path = Path(tmp) / "run.log"
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            "tests/osworld",
            "-n",
            str(args.workers),
            "-v",
            "--task-list",
            _shown(task_list),
            "--watch",
            "--reference-faults",
            "delay=1",
            "--results-dir",
            _shown(args.results_dir),
            "--run",
            run,
        ]
        print("screenshots: running", " ".join(cmd[2:]), flush=True)
        with log_path.open("wb") as log:
            child = subprocess.Popen(
                cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        try:
            with sync_playwright() as pw:
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
                try:
                    page = browser.new_page(viewport=VIEWPORT)
                    url = wait_until(
                        "watch URL in the run's header",
                        lambda: (
                            (
                                m := re.search(
                                    r"watch the run: (http://127\.0\.0\.1:\d+/)",
                                    log_path.read_text(errors="replace"),
                                )
                            )
                            and m.group(1)
                        ),
                        180,
                        child,
                    )
                    wait_until(
                        "worker at play on the watch page",
                        lambda: a_worker_playing(url),
                        300,
                        child,
                    )
                    page.goto(url)
                    page.wait_for_function(
                        "[...document.querySelectorAll('.worker img')]"
                        ".some(i => i.naturalWidth > 0)",
                        timeout=30_000,
                    )
                    time.sleep(1.5)  # the page's next refresh: every worker's latest screen
                    box = page.locator("#workers").bounding_box()
                    assert box is not None
                    page.screenshot(
                        path=str(args.out / "watch.png"),
                        clip={
                            "x": 0,
                            "y": 0,
                            "width": min(VIEWPORT["width"], box["x"] + box["width"] + 16),
                            "height": min(VIEWPORT["height"], box["y"] + box["height"] + 16),
                        },
                    )
                    print("screenshots: watch.png", flush=True)
                    if child.wait(timeout=900) != 0:
                        print(log_path.read_text(errors="replace")[-3000:], file=sys.stderr)
                        raise SystemExit("screenshots: the run did not pass")
                    run_dir = (args.results_dir / run).resolve()
                    # the report from its summary down to the table of cases (pytest-html's
                    # environment table above it says nothing of the run)
                    page.goto((run_dir / "report.html").as_uri())
                    page.wait_for_load_state("load")
                    top = page.locator("h2", has_text="Summary").first.bounding_box()
                    end = page.locator("#results-table").bounding_box()
                    assert top is not None and end is not None
                    page.screenshot(
                        path=str(args.out / "report.png"),
                        full_page=True,
                        clip={
                            "x": 0,
                            "y": top["y"] - 8,
                            "width": VIEWPORT["width"],
                            "height": end["y"] + end["height"] + 8 - (top["y"] - 8),
                        },
                    )
                    print("screenshots: report.png", flush=True)
                    # a replay at a step where the model clicked (the page marks the point),
                    # else the case with the most steps; its folded sections folded
                    cases = [p.parent for p in run_dir.rglob("replay.html")]
                    clicked = [(c, n) for c in cases if (n := click_step(c)) is not None]
                    case, step = (
                        clicked[0]
                        if clicked
                        else (max(cases, key=lambda c: len(list(c.glob("step_*.png")))), 0)
                    )
                    page.goto((case / "replay.html").as_uri())
                    page.wait_for_load_state("load")
                    page.evaluate(
                        "document.querySelectorAll('details').forEach(d => d.open = false)"
                    )
                    if step:
                        page.evaluate(
                            f"document.querySelector('#step-{step}')"
                            ".scrollIntoView(); window.scrollBy(0, -130)"
                        )
                    page.screenshot(path=str(args.out / "replay.png"))
                    print(f"screenshots: replay.png ({case.name}, step {step})", flush=True)
                finally:
                    browser.close()
        finally:
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGINT)
                try:
                    child.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    os.killpg(child.pid, signal.SIGKILL)
    for name in ("watch.png", "report.png", "replay.png"):
        shrink(args.out / name)
        print(f"screenshots: {args.out / name} {(args.out / name).stat().st_size // 1024} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
