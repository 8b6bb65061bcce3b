"""A command-line entry point's ``main(argv)`` called in this process, with its exit status and
what it printed: the fast tier's way to test a CLI's behaviour without a child interpreter
(seconds of imports each). Each CLI still has a test that runs it as a real ``python -m``
process, so the entry point itself stays proven."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class CliRun:
    """What a call of ``main`` ended with (the fields of ``subprocess.CompletedProcess``)."""

    returncode: int
    stdout: str
    stderr: str


def run_main(main: Callable[[list[str] | None], int], *args: object) -> CliRun:
    """``main([str(a) for a in args])``; a ``SystemExit`` (argparse's usage errors) is its
    status. Any other exception propagates: the test fails on it, as on a traceback."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in args])
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return CliRun(code, out.getvalue(), err.getvalue())
