"""Latency of a running guest server: ``python -m computer_env.desktop.server.bench URL TOKEN``.

Prints the median milliseconds of screenshots per format, the fast action path, OSWorld's
``/execute`` way of running one pyautogui action, and a trivial command.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from functools import partial

from computer_env.desktop.client import DesktopClient
from computer_env.desktop.prefix import PYAUTOGUI_PREFIX


def _median_ms(fn: Callable[[], object], n: int) -> float:
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1000)
    return statistics.median(samples)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 2:
        print(__doc__)
        return 2
    n = int(args[2]) if len(args) > 2 else 10
    with DesktopClient(args[0], args[1]) as c:
        for fmt in ("png", "jpeg", "webp"):
            size = len(c.screenshot(fmt))
            ms = _median_ms(partial(c.screenshot, fmt), n)
            print(f"screenshot {fmt:5s} {ms:7.1f} ms  {size / 1024:7.1f} KiB")
        print(
            f"action /actions   {_median_ms(lambda: c.run_pyautogui('pyautogui.moveTo(5, 5)'), n):7.1f} ms"
        )
        cmd = ["python", "-c", PYAUTOGUI_PREFIX + "pyautogui.moveTo(6, 6)"]
        print(f"action /execute   {_median_ms(lambda: c.execute(cmd), n):7.1f} ms")
        print(f"command true      {_median_ms(lambda: c.execute(['true']), n):7.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
