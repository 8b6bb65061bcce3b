"""Jobs run in the scoring process by tests/harness/osworld/test_scorer_faults.py and the chaos plugin:
a reader that dies of a fault in C, and a metric that computes on a result far larger than the
expected file (with the budget's constants shrunk for the test)."""

from __future__ import annotations

import os

from computer_env.osworld.scoring.process import _limits


def abort() -> None:
    """What a C library does on a failed allocation: abort() (SIGABRT)."""
    os.abort()


def spin_on(result: str, expected: str) -> str:
    """A metric busy on the CPU, under the budget of ``result`` against ``expected`` (at
    1 s + 0 s/MiB); returns when there is no budget."""
    _limits.BASE_S, _limits.PER_MIB_S = 1.0, 0.0
    with _limits.cpu_budget(result, expected) as budget:
        if budget is None:
            return "no budget"
        while True:
            pass
