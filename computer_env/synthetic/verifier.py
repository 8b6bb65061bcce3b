"""Running a synthesized task's verifier inside the desktop (never on the host), with a time
limit, isolated from what the agent left there.

On this project's desktops the verifier runs through ``/verify``: a fork of a runner started
with the desktop, before any agent acted (``python -I``, a fixed environment, the result on a
pipe no desktop process can open: see ``computer_env.desktop.server.commands.verifier``). On an
upstream OSWorld VM (no ``/verify``) it runs through ``/run_python`` with ``-I``-like settings
made inside the script and a result line that carries a per-run secret; that route cannot stop a
process of the agent from reading the script while it runs, so the tamper audit
(:mod:`computer_env.osworld.guards.tamper`) is the guard there.

:func:`run_verifier` returns a :class:`VerifierRun`: a score, or why there is none (``kind``).
Whose fault that is depends on when it happened, which the caller knows: on the initial state
the task is broken (:class:`VerifierError`, unscored); after the agent acted on a verifier that
ran cleanly before, it is the agent's (a scored 0).
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass
from typing import Literal

from computer_env import guest_programs
from computer_env.desktop.client import DesktopClient, DesktopRequestError
from computer_env.desktop.server.commands.verifier import SAFE_PATH
from computer_env.errors import InfraError

MARKER = "@@HOLO_VERIFIER@@"

FailureKind = Literal["crashed", "bad", "timeout", "died", "gone", "out_of_range"]


class VerifierError(InfraError):
    """The verifier could not give a score on the task's initial state (crash, bad return
    value, timeout): the task is broken, the case unscored. Permanent: rerunning the same code
    cannot help."""

    category = "verifier"
    permanent = True


@dataclass(frozen=True)
class VerifierRun:
    """One verifier run: ``score`` in [0, 1], or ``kind`` and ``message`` saying why none."""

    score: float | None
    seconds: float
    kind: FailureKind | None = None
    message: str = ""
    route: str = "verify"

    @property
    def ok(self) -> bool:
        return self.score is not None


def run_verifier(client: DesktopClient, code: str, *, timeout_s: float) -> VerifierRun:
    """Run the verifier on the desktop's current state (see the module docstring)."""
    t0 = time.monotonic()
    caps = client.capabilities() or {}
    if caps.get("verify"):
        answer = client.verify(code, timeout=timeout_s)
        seconds = round(time.monotonic() - t0, 3)
        if answer.get("status") == "success":
            return _scored(answer.get("result"), seconds, "verify")
        kind = str(answer.get("kind") or "died")
        message = str(answer.get("message") or "")
        if kind == "crashed":
            last = message.strip().splitlines()[-1] if message.strip() else "?"
            message = f"the verifier crashed: {last}\n{message}"
        return VerifierRun(
            None,
            seconds,
            kind if kind in _KINDS else "died",  # type: ignore[arg-type]
            message,
            "verify",
        )
    return _run_python(client, code, timeout_s, t0)


_KINDS = {"crashed", "bad", "timeout", "died", "gone"}


def _scored(value: object, seconds: float, route: str) -> VerifierRun:
    try:
        score = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return VerifierRun(None, seconds, "bad", f"verify() returned {value!r}", route)
    if not 0.0 <= score <= 1.0:
        return VerifierRun(
            None, seconds, "out_of_range", f"verify() returned {score:g}, outside [0, 1]", route
        )
    return VerifierRun(score, seconds, route=route)


def _run_python(client: DesktopClient, code: str, timeout_s: float, t0: float) -> VerifierRun:
    """The fallback for servers without ``/verify`` (upstream OSWorld VMs)."""
    marker = f"{MARKER}{secrets.token_hex(16)}@@"
    script = (
        guest_programs.read("verifier_run.py") + f"\nrun({code!r}, {marker!r}, {SAFE_PATH!r})\n"
    )
    try:
        answer = client.run_python(script, timeout=timeout_s)
    except DesktopRequestError as exc:
        low = exc.message.lower()
        if "timeout" in low or "timed out" in low or "too long" in low:
            return VerifierRun(
                None,
                round(time.monotonic() - t0, 3),
                "timeout",
                f"the verifier ran out of time ({timeout_s:g} s)",
                "run_python",
            )
        raise
    seconds = round(time.monotonic() - t0, 3)
    output = str(answer.get("output") or "")
    lines = [ln for ln in output.splitlines() if ln.startswith(marker)]
    if len(lines) != 1:
        err = str(answer.get("error") or answer.get("message") or "")[-300:]
        return VerifierRun(
            None,
            seconds,
            "died",
            f"the verifier printed {len(lines)} results "
            f"(exit {answer.get('return_code')}): {err.strip()}",
            "run_python",
        )
    data = json.loads(lines[0][len(marker) :])
    if "error" in data:
        last = data["error"].strip().splitlines()[-1] if data["error"].strip() else "?"
        return VerifierRun(
            None, seconds, "crashed", f"the verifier crashed: {last}\n{data['error']}", "run_python"
        )
    if "bad" in data:
        return VerifierRun(
            None,
            seconds,
            "bad",
            f"verify() returned {data['bad']}, not True/False or a score",
            "run_python",
        )
    return _scored(data.get("result"), seconds, "run_python")


__all__ = ["MARKER", "FailureKind", "VerifierError", "VerifierRun", "run_verifier"]
