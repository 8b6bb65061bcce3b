"""Parent side of the persistent pyautogui interpreter (the fast action path)."""

from __future__ import annotations

import json
import logging
import os
import select
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from computer_env.procs import ChildProcesses

logger = logging.getLogger(__name__)


class WorkerError(Exception):
    """The interpreter could not start or died."""


class ActionInterpreter:
    """Runs pyautogui code blocks, one at a time, in a long-lived child process."""

    def __init__(self, procs: ChildProcesses, *, cwd: Path, start_timeout: float = 30.0) -> None:
        self._procs = procs
        self._cwd = cwd
        self._start_timeout = start_timeout
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._buffer = b""

    def _read_line(self, deadline: float) -> bytes | None:
        """One line from the worker, or None on timeout; raises WorkerError on EOF."""
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                code = self._proc.wait(timeout=5)
                raise WorkerError(f"the action interpreter exited with code {code}")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def _ensure_started(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            return
        self._buffer = b""
        self._proc = self._procs.popen(
            [sys.executable, "-m", "computer_env.desktop.server.input.action_worker"],
            text=False,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None,
            cwd=self._cwd,
        )
        try:
            line = self._read_line(time.monotonic() + self._start_timeout)
        except WorkerError:
            self._proc = None
            raise
        if line is None:
            self._kill()
            raise WorkerError(
                f"the action interpreter did not start within {self._start_timeout:g} s"
            )

    def warm(self) -> None:
        """Start the worker now (pyautogui's import is the slow part)."""
        with self._lock:
            try:
                self._ensure_started()
            except WorkerError:
                logger.exception("could not pre-start the action interpreter")

    def _send(self, code: str) -> bool:
        """Hand ``code`` to the interpreter; False when it was gone before it took the block
        (killed from inside the desktop since its last block: a new one is started)."""
        self._ensure_started()
        assert self._proc is not None and self._proc.stdin is not None
        try:
            self._proc.stdin.write(json.dumps({"code": code}).encode() + b"\n")
            self._proc.stdin.flush()
            ack = self._read_line(time.monotonic() + self._start_timeout)
        except (BrokenPipeError, WorkerError):
            self._kill()
            return False
        if ack is None or not json.loads(ack).get("started"):
            self._kill()
            raise WorkerError("the action interpreter did not take the code block")
        return True

    def run(self, code: str, *, timeout: float = 120.0) -> dict[str, Any]:
        """Run one block; a timeout kills the interpreter (restarted on the next call), and so
        does the code's own end of it: an interpreter that dies while running a block (the code,
        or a program it or the agent started, killed it: it runs where the agent can reach it)
        is that block's error result, not the desktop's failure. One that was gone before it
        took the block (its ``started`` line) is replaced and the block handed to the new one."""
        with self._lock:
            if not self._send(code) and not self._send(code):
                raise WorkerError("the action interpreter is gone and did not start again")
            try:
                line = self._read_line(time.monotonic() + timeout)
            except WorkerError as exc:
                self._kill()
                return {
                    "status": "error",
                    "output": "",
                    "returncode": -1,
                    "error": f"{exc} while running this code; it starts again for the next",
                }
            if line is None:
                self._kill()
                return {
                    "status": "error",
                    "output": "",
                    "error": f"the code did not finish within {timeout:g} s and was stopped",
                    "returncode": -1,
                }
            return json.loads(line)

    def _kill(self) -> None:
        if self._proc is not None:
            self._procs.kill(self._proc)
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                logger.warning("action interpreter %s survived SIGKILL", self._proc.pid)
            self._procs.forget(self._proc)
            self._proc = None

    def close(self) -> None:
        with self._lock:
            self._kill()
