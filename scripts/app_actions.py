"""What one action costs on each OSWorld app's window: ``python scripts/app_actions.py``.

Every action the agent takes is confirmed by a ``_NET_WM_PING`` round trip with the active
window (``computer_env/desktop/server/input/delivery.py``). A toolkit whose answer the harness
does not hear costs every action the whole ping timeout (5 s; VLC's Qt did until its answer was
heard), and readiness never sees such an app ready. On one local desktop, for each app installed
here: launch it as OSWorld's tasks do, wait until its window is active, then time ``--actions``
pointer moves through the fast path and ask the delivery confirmation once. Prints one row per
app; exits 1 when an app's window speaks the protocol and its answer was not heard (False).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from computer_env.desktop.client import DesktopClient  # noqa: E402
from computer_env.desktop.providers.local.provider import LocalSandboxProvider  # noqa: E402
from computer_env.osworld.catalog.tasks import SetupStep  # noqa: E402
from computer_env.osworld.prepare.setup import launched_program  # noqa: E402
from computer_env.readiness import NotReady, wait_until  # noqa: E402

APPS: tuple[tuple[str, str, str], ...] = (
    # (name, launch command as OSWorld's tasks have it, a word of the window's title)
    ("vlc", "VLC_VERBOSE=-1 vlc --no-audio --no-video-title-show", "VLC media player"),
    ("chromium", "chromium --no-first-run --password-store=basic", "Chromium"),
    ("gimp", "gimp", "GNU Image Manipulation Program"),
    ("thunderbird", "thunderbird", "Thunderbird"),
    ("nautilus", "nautilus --new-window", "Home"),
    ("libreoffice", "libreoffice --calc", "LibreOffice Calc"),
    ("xterm", "xterm -T bench-term", "bench-term"),
)

CONFIRM = (
    "from Xlib import display\n"
    "from computer_env.desktop.server.input.delivery import confirm_delivered\n"
    "print(confirm_delivered(display.Display()))"
)


def _wait_active(client: DesktopClient, word: str, timeout: float) -> str | None:
    """The active window's title once it holds ``word``; None after ``timeout`` seconds."""

    def title() -> str | None:
        out = client.execute("xdotool getactivewindow getwindowname", shell=True).output or ""
        return out.strip() if word in out else None

    try:
        return wait_until(
            title, timeout_s=timeout, what=f"a window titled {word!r}", interval_s=0.2
        )
    except NotReady:
        return None


def measure_app(
    client: DesktopClient, name: str, command: str, word: str, actions: int, timeout: float
) -> dict[str, object]:
    """One app's row: its window's title, the confirmation's answer, action times in ms."""
    program = launched_program(
        SetupStep(type="launch", parameters={"command": command, "shell": True})
    )
    if not shutil.which(program):
        return {"app": name, "skipped": f"{program} is not installed"}
    client.launch(command, shell=True)
    title = _wait_active(client, word, timeout)
    if title is None:
        return {"app": name, "skipped": f"no active window titled {word!r} after {timeout:g} s"}
    times = []
    for i in range(actions):
        t = time.perf_counter()
        client.run_pyautogui(f"pyautogui.moveTo({300 + i % 7}, 300)")
        times.append((time.perf_counter() - t) * 1000)
    answer = client.run_pyautogui(CONFIRM).output.strip().splitlines()[-1:]
    client.execute("kill $(xdotool getactivewindow getwindowpid)", shell=True)  # in the desktop
    return {
        "app": name,
        "title": title,
        "confirmed": answer[0] if answer else "",
        "median_ms": round(statistics.median(times), 1),
        "max_ms": round(max(times), 1),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="scripts/app_actions.py", description=__doc__.split("\n")[0])
    p.add_argument("--actions", type=int, default=10, help="timed actions per app (default 10)")
    p.add_argument(
        "--timeout",
        type=float,
        default=90.0,
        help="seconds an app may take until its window is active (default 90)",
    )
    p.add_argument(
        "--apps", default=",".join(a[0] for a in APPS), help="comma-separated names (default: all)"
    )
    p.add_argument("--json", action="store_true", help="last line: one JSON object")
    args = p.parse_args(argv)
    if args.actions < 1:
        p.error("--actions must be at least 1")
    wanted = [a.strip() for a in args.apps.split(",") if a.strip()]
    unknown = sorted(set(wanted) - {a[0] for a in APPS})
    if unknown:
        p.error(f"--apps: unknown {', '.join(unknown)} (known: {', '.join(a[0] for a in APPS)})")
    provider = LocalSandboxProvider(width=1920, height=1080)
    rows = []
    try:
        client = DesktopClient.from_handle(provider.start())
        for name, command, word in APPS:
            if name in wanted:
                rows.append(measure_app(client, name, command, word, args.actions, args.timeout))
                row = rows[-1]
                print(
                    f"{name:12s} "
                    + (
                        f"skipped: {row['skipped']}"
                        if "skipped" in row
                        else f"confirmed {row['confirmed']:5s}  median {row['median_ms']:7.1f} ms  "
                        f"max {row['max_ms']:7.1f} ms  ({row['title']})"
                    ),
                    flush=True,
                )
    finally:
        provider.close()
    if args.json:
        print(json.dumps({"apps": rows}))
    return 1 if any(r.get("confirmed") == "False" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
