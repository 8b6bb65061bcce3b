"""The verifier runner: runs synthesized-task verifiers where nothing the agent left can reach.

A verifier runs inside the desktop, next to whatever the agent left behind. Three ways a hostile
agent could make it speak for the verifier, and what closes each:

- **startup hooks** (a ``.pth`` file or ``usercustomize`` in the user site, ``PYTHON*``
  variables, a shadowing command in a user PATH folder): the runner is ``python -I`` (no user
  site, no ``PYTHON*`` variables, no script folder on ``sys.path``), and every verifier gets a
  fixed environment (system PATH folders only, no preload variables);
- **a forged result line** on the verifier's output: the result travels on a pipe of its own,
  never on stdout, and
- **reaching into the process** (``/proc/<pid>/fd`` of that pipe, ptrace): the runner makes
  itself non-dumpable as its first act, *when the desktop's server starts, before any agent
  acts*, and each verifier is a ``fork`` of it (no ``exec``: the flag is kept), so no process of
  the desktop's user can open its descriptors or memory. The desktop server is non-dumpable too
  (see :mod:`computer_env.desktop.server.cli`).

:data:`SOURCE` is the runner's whole program (standard library only), started as ``python -I -c
SOURCE``; :class:`VerifierRunner` is the server's handle on it. A runner that died (the agent
killed it) is not restarted: the verifier cannot run, which the harness scores as the agent's.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

SAFE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
"""The only PATH a verifier gets: system folders, read-only in the desktop."""
KEPT_VARIABLES = ("HOME", "USER", "LOGNAME", "DISPLAY", "LANG", "LC_ALL", "TZ", "XAUTHORITY",
                  "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR")
"""What a verifier keeps of the server's environment (no PYTHON*, no LD_*, no PATH)."""

SOURCE = r'''
import ctypes, json, os, select, signal, sys, time, traceback
ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 0, before all else
_out = os.fdopen(os.dup(1), "w", buffering=1)
_null = os.open(os.devnull, os.O_RDWR)
os.dup2(_null, 1)

def _child(req, w):
    os.setsid()
    for fd in (0, 1, 2):
        os.dup2(_null, fd)
    os.environ.clear()
    os.environ.update(req["env"])
    try:
        os.chdir(req["cwd"])
    except OSError:
        os.chdir("/")
    ns = {"__name__": "verifier"}
    try:
        exec(compile(req["code"], "verifier_code", "exec"), ns)
        r = ns["verify"]()
        out = {"result": r} if isinstance(r, (bool, int, float)) else {"bad": repr(r)[:300]}
    except BaseException:
        out = {"error": traceback.format_exc()[-1500:]}
    data = json.dumps(out).encode()
    while data:
        data = data[os.write(w, data):]

def _kill(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass

def _run(req):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            _child(req, w)
        finally:
            os._exit(0)
    os.close(w)
    deadline = time.monotonic() + float(req["timeout"])
    chunks, status = [], None
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return {"timeout": True}
            ready, _, _ = select.select([r], [], [], min(left, 0.05))
            if ready:
                data = os.read(r, 65536)
                if data:
                    chunks.append(data)
                    continue
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                while True:  # what is left in the pipe
                    ready, _, _ = select.select([r], [], [], 0)
                    data = os.read(r, 65536) if ready else b""
                    if not data:
                        break
                    chunks.append(data)
                break
    finally:
        _kill(pid)
        os.close(r)
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
    raw = b"".join(chunks)
    if not raw:
        return {"died": "the verifier exited without a result (status %s)" % status}
    try:
        return json.loads(raw)
    except ValueError:
        return {"died": "the verifier wrote an unreadable result"}

_out.write(json.dumps({"ready": os.getpid()}) + "\n")
for line in sys.stdin:
    try:
        answer = _run(json.loads(line))
    except BaseException:
        answer = {"died": traceback.format_exc()[-800:]}
    _out.write(json.dumps(answer) + "\n")
'''


class RunnerGone(RuntimeError):
    """The runner is not running (killed, or never started): no verifier can run."""


class VerifierRunner:
    """The desktop server's verifier runner process (see the module docstring)."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self._lock = threading.Lock()
        env = {k: os.environ[k] for k in KEPT_VARIABLES if k in os.environ}
        self.env = {**env, "PATH": SAFE_PATH, "HOME": str(home)}
        self._proc = subprocess.Popen(  # noqa: S603 - our own program, no shell
            [sys.executable, "-I", "-c", SOURCE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, env=self.env, cwd="/", text=True, start_new_session=True)
        assert self._proc.stdout is not None
        first = self._proc.stdout.readline()
        if not first:
            raise RunnerGone("the verifier runner did not start")
        self.pid = int(json.loads(first)["ready"])

    def alive(self) -> bool:
        return self._proc.poll() is None

    def run(self, code: str, timeout: float) -> dict[str, Any]:
        """One verifier's answer: ``{"result"}``, ``{"bad"}``, ``{"error"}``, ``{"timeout"}``
        or ``{"died"}``; :class:`RunnerGone` when the runner is not there."""
        request = {"code": code, "timeout": timeout, "env": self.env, "cwd": str(self.home)}
        with self._lock:
            proc = self._proc
            if proc.poll() is not None or proc.stdin is None or proc.stdout is None:
                raise RunnerGone(f"the verifier runner is gone (exit {proc.returncode})")
            try:
                proc.stdin.write(json.dumps(request) + "\n")
                proc.stdin.flush()
                line = proc.stdout.readline()
            except (BrokenPipeError, OSError) as exc:
                raise RunnerGone(f"the verifier runner is gone: {exc}") from exc
            if not line:
                raise RunnerGone(f"the verifier runner is gone (exit {proc.poll()})")
            return dict(json.loads(line))

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                log.warning("verifier runner %s survived SIGKILL", self._proc.pid)


def make_non_dumpable() -> bool:
    """``prctl(PR_SET_DUMPABLE, 0)`` on this process (Linux): no process of the same user can
    ptrace it or open its ``/proc/<pid>/fd`` and memory. False where that is not possible."""
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


__all__ = ["RunnerGone", "SAFE_PATH", "SOURCE", "VerifierRunner", "make_non_dumpable"]
