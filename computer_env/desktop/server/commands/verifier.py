"""The verifier runner: runs synthesized-task verifiers where nothing the agent left can reach.

A verifier runs inside the desktop, next to whatever the agent left behind. The ways a hostile
agent could make it speak for the verifier, and what closes each:

- **startup hooks** (a ``.pth`` file or ``usercustomize`` in the user site, ``PYTHON*``
  variables, a shadowing command in a user PATH folder): the runner is ``python -I`` (no user
  site, no ``PYTHON*`` variables, no script folder on ``sys.path``), and every verifier gets a
  fixed environment (system PATH folders only, no preload variables);
- **a forged result line**: the result travels on a pipe of its own, never on stdout; a verifier
  holds no other descriptor (not the runner's answer channel), and every answer names the
  request it answers, so an answer out of step ends the runner (:class:`RunnerGone`);
- **reaching into the process** (``/proc/<pid>/fd``, ptrace): the runner makes itself
  non-dumpable as its first act, *when the desktop's server starts, before any agent acts*, and
  each verifier is a ``fork`` of it (no ``exec``: the flag is kept);
- **a sleeper** (a double-forked, ``setsid`` child a verifier leaves to act later): each verifier
  is the init of a fresh pid namespace, and the runner kills everything below it before it
  answers;
- **escaping the nest**: each verifier runs *inside* the nest (:mod:`.nest`), with the agent's
  processes, where nothing can see or signal the server, Xvfb or the sandbox's init, with no
  capability. The runner itself stays outside, beside the server: the agent can neither see nor
  kill it (a task that asks to kill every Python process must not cost the verifier).

:mod:`._verifier_main` is the runner's whole program (standard library only), started as
``python -I`` on its file; :class:`VerifierRunner` is the server's handle on it. A runner that
died (the agent killed it), or that stopped answering, is not restarted: the verifier cannot
run, which the harness scores as the agent's.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import select
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from computer_env.procs import ChildProcesses

log = logging.getLogger(__name__)

SAFE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
"""The only PATH a verifier gets: system folders, read-only in the desktop."""
KEPT_VARIABLES = (
    "HOME",
    "USER",
    "LOGNAME",
    "DISPLAY",
    "LANG",
    "LC_ALL",
    "TZ",
    "XAUTHORITY",
    "DBUS_SESSION_BUS_ADDRESS",
    "XDG_RUNTIME_DIR",
)
"""What a verifier keeps of the server's environment (no PYTHON*, no LD_*, no PATH)."""
PROGRAM = Path(__file__).with_name("_verifier_main.py")
"""The runner's program (``python -I PROGRAM``: no user site, no ``PYTHON*`` variables, nor its
folder on ``sys.path``), read once when the server starts, before any agent acts."""
ANSWER_MARGIN_S = 15.0
"""How much longer than a verifier's own timeout the server waits for the runner's answer."""
_LINE_LIMIT = 2 << 20


class RunnerGone(RuntimeError):
    """The runner is not running, or not answering (killed, stopped, never started, out of
    step): no verifier can run."""


class VerifierRunner:
    """The desktop server's verifier runner process (see the module docstring), started through
    ``procs`` (the server's own :class:`ChildProcesses`, outside the nest); ``nest_pid``: the
    nest's init, where each verifier runs."""

    def __init__(
        self,
        home: Path,
        procs: ChildProcesses,
        *,
        nest_pid: int | None = None,
        start_timeout: float = 30.0,
    ) -> None:
        self.home = home
        self._lock = threading.Lock()
        env = {k: os.environ[k] for k in KEPT_VARIABLES if k in os.environ}
        self.env = {**env, "PATH": SAFE_PATH, "HOME": str(home)}
        self._procs = procs
        self._buf = b""
        nest = [str(nest_pid)] if nest_pid is not None else []
        self._proc = procs.popen(
            [sys.executable, "-I", str(PROGRAM), *nest],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=False,
            env=self.env,
            cwd="/",
        )
        first = self._line(time.monotonic() + start_timeout)
        try:
            self.pid = int(json.loads(first)["ready"])
        except (ValueError, KeyError, TypeError) as exc:
            self._end()
            raise RunnerGone(f"the verifier runner did not start: {first[:200]!r}") from exc

    def alive(self) -> bool:
        return self._proc.poll() is None

    def _line(self, deadline: float) -> bytes:
        """The runner's next line, or :class:`RunnerGone` (it ended, or said nothing until
        ``deadline``)."""
        out = self._proc.stdout
        assert out is not None
        fd = out.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RunnerGone("the verifier runner did not answer in time")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                raise RunnerGone(f"the verifier runner is gone (exit {self._proc.poll()})")
            self._buf += chunk
            if len(self._buf) > _LINE_LIMIT:
                raise RunnerGone("the verifier runner wrote a line past its limit")
        line, self._buf = self._buf.split(b"\n", 1)
        return line

    def run(self, code: str, timeout: float) -> dict[str, Any]:
        """One verifier's answer: ``{"result"}``, ``{"bad"}``, ``{"error"}``, ``{"timeout"}``
        or ``{"died"}``; :class:`RunnerGone` when the runner is not there, does not answer in
        time or answers out of step (then it is ended: no later answer can be trusted)."""
        rid = secrets.token_hex(16)
        request = {
            "id": rid,
            "code": code,
            "timeout": timeout,
            "env": self.env,
            "cwd": str(self.home),
        }
        with self._lock:
            proc = self._proc
            if proc.poll() is not None or proc.stdin is None:
                raise RunnerGone(f"the verifier runner is gone (exit {proc.returncode})")
            try:
                proc.stdin.write((json.dumps(request) + "\n").encode())
                proc.stdin.flush()
                line = self._line(time.monotonic() + timeout + ANSWER_MARGIN_S)
                answer = json.loads(line)
            except (OSError, ValueError, RunnerGone) as exc:
                self._end()
                raise RunnerGone(f"the verifier runner is gone: {exc}") from exc
            if not isinstance(answer, dict) or answer.pop("id", None) != rid:
                self._end()
                raise RunnerGone(
                    "the verifier runner answered out of step (an answer to "
                    "another request): it is ended"
                )
            return answer

    def _end(self) -> None:
        if self._proc.poll() is None:
            self._procs.kill(self._proc)
            self._proc.kill()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                log.warning("verifier runner %s survived SIGKILL", self._proc.pid)
        self._procs.forget(self._proc)

    def close(self) -> None:
        self._end()


def make_non_dumpable() -> bool:
    """``prctl(PR_SET_DUMPABLE, 0)`` on this process (Linux): no process of the same user can
    ptrace it or open its ``/proc/<pid>/fd`` and memory. False where that is not possible."""
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


__all__ = ["PROGRAM", "RunnerGone", "SAFE_PATH", "VerifierRunner", "make_non_dumpable"]
