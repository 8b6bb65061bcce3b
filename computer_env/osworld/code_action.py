"""Code actions on a desktop: a Python or Bash script run by the desktop's own server (OSWorld's
``/run_python`` and ``/run_bash_script`` routes), so it runs inside the sandbox or VM, never on
the host. A script that times out or fails is the agent's result, shown to it as output; so is
an error answer (HTTP 500) from a desktop that is alive and its own afterwards (the script made
its server fail: bytes it printed, a flood of output): the agent's doing, never
infrastructure. A desktop that cannot answer is an infrastructure error (raised); the harness
then decides whether the agent's code killed it."""

from __future__ import annotations

import time

from computer_env.base import StepResult
from computer_env.desktop.client import DesktopClient, DesktopRequestError

_TIMEOUT_WORDS = ("timeout", "timed out", "took too long")


def _timed_out(message: str) -> bool:
    low = message.lower()
    return any(w in low for w in _TIMEOUT_WORDS)


def _desktop_well(client: DesktopClient) -> bool:
    """After an error answer to a code action: the desktop still answers, and it is its own
    server (it proves the session's secret where it has one)."""
    try:
        proven = client.proves_identity()
        return client.ping() if proven is None else proven
    except Exception:  # noqa: BLE001 - a desktop that cannot say is not well
        return False


def run_code(client: DesktopClient, language: str, code: str, *, timeout_s: float) -> StepResult:
    """Run ``code`` in the desktop; the result's ``info``: ``language``, ``exit_code`` (None on a
    timeout), ``timed_out``, ``duration_s``."""
    if language not in ("python", "bash"):
        raise ValueError(f"code action language must be python or bash, got {language!r}")
    t0 = time.monotonic()
    exit_code: int | None
    try:
        if language == "python":
            answer = client.run_python(code, timeout=timeout_s)
            out = answer.get("output") or ""
            err = answer.get("error") or ""
            output = out + (("\n" if out and not out.endswith("\n") else "") + err if err else "")
            exit_code = answer.get("return_code", answer.get("returncode"))
        else:
            answer = client.run_bash_script(code, timeout=timeout_s)
            output = answer.get("output") or ""
            exit_code = answer.get("returncode")
        timed_out = False
    except DesktopRequestError as exc:
        timed_out = exc.status >= 500 and _timed_out(exc.message)
        if exc.status >= 500 and not timed_out and not _desktop_well(client):
            raise  # the desktop's fault, not the script's
        if timed_out:
            output = f"the script was stopped after {timeout_s:g} s (timeout)"
        elif exc.status >= 500:
            output = f"the desktop could not run the script: {exc.message}"
        else:
            output = f"the desktop refused the script: {exc.message}"
        exit_code = None
    info = {
        "language": language,
        "exit_code": exit_code,
        "timed_out": timed_out,
        "duration_s": round(time.monotonic() - t0, 3),
    }
    return StepResult(output=output, info=info)


__all__ = ["run_code"]
