"""Screen recording with ffmpeg x11grab (OSWorld's /start_recording, /end_recording)."""

from __future__ import annotations

import logging
import signal
import subprocess
import threading
import time
from pathlib import Path

from computer_env.procs import ChildProcesses

logger = logging.getLogger(__name__)


class RecordingError(Exception):
    """ffmpeg did not start, or produced no file."""


class Recorder:
    """At most one ffmpeg at a time, writing an H.264 MP4 of the whole screen."""

    def __init__(self, procs: ChildProcesses, display: str | None, path: Path) -> None:
        self._procs = procs
        self._display = display or ":0"
        self.path = path
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[str] | None = None

    @property
    def active(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self, size: tuple[int, int], *, startup: float = 1.0) -> None:
        """Start ffmpeg; raises RecordingError when already recording or ffmpeg exits at once."""
        with self._lock:
            if self.active:
                raise RecordingError("Recording is already in progress.")
            self.path.unlink(missing_ok=True)
            cmd = [
                "ffmpeg",
                "-nostdin",
                "-y",
                "-loglevel",
                "error",
                "-f",
                "x11grab",
                "-draw_mouse",
                "1",
                "-framerate",
                "10",
                "-video_size",
                f"{size[0]}x{size[1]}",
                "-i",
                self._display,
                "-c:v",
                "libx264",
                "-preset",
                "ultrafast",
                "-pix_fmt",
                "yuv420p",
                str(self.path),
            ]
            self._proc = self._procs.popen(cmd, stderr=subprocess.PIPE)
            deadline = time.monotonic() + startup
            while time.monotonic() < deadline:
                if self._proc.poll() is not None:
                    err = self._proc.stderr.read() if self._proc.stderr else ""
                    self._procs.forget(self._proc)
                    self._proc = None
                    raise RecordingError(f"ffmpeg exited at once: {err.strip()[-500:]}")
                if self.path.exists() and self.path.stat().st_size > 0:
                    break
                time.sleep(0.05)

    def stop(self, timeout: float = 20.0) -> Path:
        """Stop ffmpeg gracefully (SIGINT finalises the MP4) and return the file."""
        with self._lock:
            proc, self._proc = self._proc, None
            if proc is None or proc.poll() is not None:
                raise RecordingError("No recording in progress to stop.")
            proc.send_signal(signal.SIGINT)
            try:
                _, err = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                self._procs.kill(proc)
                proc.communicate()
                raise RecordingError("ffmpeg did not stop on SIGINT and was killed") from None
            finally:
                self._procs.forget(proc)
            if not self.path.exists() or self.path.stat().st_size == 0:
                raise RecordingError(
                    f"Recording failed: the output file is missing or empty: {err.strip()[-500:]}"
                )
            return self.path

    def abort(self) -> None:
        """Kill a running recording (server shutdown)."""
        with self._lock:
            if self._proc is not None:
                self._procs.kill(self._proc)
                self._proc = None
