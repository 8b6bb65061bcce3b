"""Jobs run in the scoring process by tests/harness/osworld/test_scorer.py (never imported by the test
process itself: its exception class must be one the test process has not loaded)."""

from __future__ import annotations

import logging
import os
import signal
import sys
import time

from computer_env.errors import EvaluatorCrash, EvaluatorInfraError, VMUnreachable
from computer_env.osworld.errors import EvaluatorUnsupported, SetupUnsupported


class MetricBlewUp(ValueError):
    """An exception class only the scoring process has."""

    def __init__(self, cells: int, sheet: str) -> None:
        super().__init__(f"{cells} cells unreadable in {sheet}")
        self.cells, self.sheet = cells, sheet


def unsupported() -> None:
    raise EvaluatorUnsupported("metric 'compare_audio'", "needs librosa")


def setup_unsupported() -> None:
    raise SetupUnsupported("googledrive", "needs Google credentials")


def crash_on_refused() -> None:
    try:
        raise ConnectionRefusedError(111, "Connection refused")
    except OSError as exc:
        raise EvaluatorCrash("metric 'compare_table' failed (crash): refused") from exc


def infra_with_detail() -> None:
    raise EvaluatorInfraError("getter 'vm_file' failed (environment)", detail="port 5000")


def unreachable() -> None:
    raise VMUnreachable("the desktop server at http://10.0.0.2:5000 does not answer")


def foreign() -> None:
    raise MetricBlewUp(3, "Sheet1")


def bug_while_refused() -> None:
    try:
        raise ConnectionRefusedError("the desktop refused")
    except ConnectionRefusedError:
        raise KeyError("score") from None


def speak(text: str) -> int:
    logging.getLogger("desktopenv.metric").warning("metric says %s", text)
    logging.getLogger("desktopenv.metric").debug("too quiet to cross")
    return os.getpid()


def imported(module: str) -> bool:
    """Is ``module`` imported in this (the scoring) process?"""
    return module in sys.modules


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def hang() -> None:
    time.sleep(3600)


def modules(*names: str) -> list[str]:
    import sys

    return [n for n in names if n in sys.modules]


def spin(seconds: float) -> None:
    """Busy on the CPU (a parser walking a huge file)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def wait(seconds: float) -> None:
    """Idle (waiting for something outside, e.g. the desktop)."""
    time.sleep(seconds)
