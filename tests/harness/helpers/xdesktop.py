"""Test helper: a bare X desktop (Xvfb + openbox, optionally a D-Bus session for AT-SPI).

``with XDesktop() as desk:`` picks a free display number (Xvfb ``-displayfd``), waits until the
window manager answers, and on exit kills every process group it started. ``desk.env`` is an
environment for programs that should run on it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from computer_env.procs import set_pdeathsig
from tests.harness.helpers.polling import wait_for
from tests.harness.helpers.tiers import DESKTOP, needs


def _read_line(fd: int, timeout: float, what: str) -> str:
    import select

    deadline = time.monotonic() + timeout
    data = b""
    while not data.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise TimeoutError(f"gave up after {timeout:g} s waiting for {what}")
        chunk = os.read(fd, 4096)
        if not chunk:
            raise RuntimeError(f"{what}: the process exited before answering")
        data += chunk
    return data.decode().strip()


@needs(DESKTOP)
class XDesktop:
    """Xvfb + openbox on a free display; with ``a11y=True`` also a private D-Bus session."""

    def __init__(self, width: int = 1280, height: int = 720, *, a11y: bool = False) -> None:
        self.width, self.height, self.a11y = width, height, a11y
        self.display = ""
        self.env: dict[str, str] = {}
        self._procs: list[subprocess.Popen[bytes]] = []

    def _spawn(
        self, cmd: list[str], env: dict[str, str] | None = None, **kw: Any
    ) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(  # noqa: S603
            cmd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=kw.pop("stdout", subprocess.DEVNULL),
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=set_pdeathsig,
            **kw,
        )
        self._procs.append(proc)
        return proc

    def start(self) -> XDesktop:
        for tool in ("Xvfb", "openbox", "wmctrl"):
            if shutil.which(tool) is None:
                raise RuntimeError(f"{tool} is not installed")
        try:
            r, w = os.pipe()
            self._spawn(
                [
                    "Xvfb",
                    "-displayfd",
                    str(w),
                    "-screen",
                    "0",
                    f"{self.width}x{self.height}x24",
                    "-nolisten",
                    "tcp",
                    "-noreset",
                ],
                pass_fds=(w,),
            )
            os.close(w)
            try:
                self.display = ":" + _read_line(r, 15, "Xvfb to report its display")
            finally:
                os.close(r)
            env = {
                k: v
                for k, v in os.environ.items()
                if k not in {"DBUS_SESSION_BUS_ADDRESS", "WAYLAND_DISPLAY"}
            }
            env["DISPLAY"] = self.display
            env.pop("XAUTHORITY", None)
            if self.a11y:
                r, w = os.pipe()
                self._spawn(
                    ["dbus-daemon", "--session", "--nofork", f"--print-address={w}"],
                    env=env,
                    pass_fds=(w,),
                )
                os.close(w)
                try:
                    env["DBUS_SESSION_BUS_ADDRESS"] = _read_line(r, 15, "dbus-daemon's address")
                finally:
                    os.close(r)
                env["NO_AT_BRIDGE"] = "0"
                env["SAL_USE_VCLPLUGIN"] = "gtk3"
                env["GTK_A11Y"] = "atspi"
            self.env = env
            self._spawn(["openbox", "--sm-disable"], env=env)
            self._wait_for_wm()
        except BaseException:
            self.close()
            raise
        return self

    def _wait_for_wm(self, timeout: float = 15.0) -> None:
        wait_for(
            lambda: (
                subprocess.run(
                    ["wmctrl", "-m"], env=self.env, capture_output=True, check=False
                ).returncode
                == 0
            ),
            f"openbox on {self.display}",
            timeout,
            interval=0.05,
        )

    def close(self) -> None:
        """Kill everything started here (process groups), last started first."""
        for proc in reversed(self._procs):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        for proc in self._procs:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self._procs.clear()

    def __enter__(self) -> XDesktop:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def wait_for_window(env: dict[str, str], needle: str, timeout: float = 30.0) -> str:
    """Wait until a window whose ``wmctrl -lx`` line contains ``needle`` exists; its id."""

    def window_id() -> str:
        out = subprocess.run(
            ["wmctrl", "-lx"], env=env, capture_output=True, text=True, check=False
        ).stdout
        return next(
            (line.split()[0] for line in out.splitlines() if needle.lower() in line.lower()), ""
        )

    return wait_for(window_id, f"a window matching {needle!r}", timeout)


def wait_for_focus(env: dict[str, str], needle: str, timeout: float = 15.0) -> str:
    """Wait until the focused window's name contains ``needle`` (focus moves after the window
    manager handles an activate request, not when the request returns); the name."""

    def focused() -> str:
        out = subprocess.run(
            ["xdotool", "getactivewindow", "getwindowname"],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        return out if needle.lower() in out.lower() else ""

    return wait_for(focused, f"the window {needle!r} to have focus", timeout)


@needs(DESKTOP)
class GuestServer:
    """The guest server as a subprocess on a free loopback port (``--port 0`` + ``--port-file``).

    ``home`` becomes its HOME and cwd; ``extra_args`` e.g. ``["--osworld-only"]``.
    """

    def __init__(
        self,
        env: dict[str, str],
        home: Path,
        *,
        token: str = "test-token-0123456789",
        extra_args: list[str] | None = None,
        ready_timeout: float = 20.0,
    ) -> None:
        self.home = home
        self.token = token
        self.url = ""
        home.mkdir(parents=True, exist_ok=True)
        state = home.parent / f".{home.name}-server"
        state.mkdir(exist_ok=True)
        token_file = state / "token"
        token_file.write_text(token)
        port_file = state / "port"
        port_file.unlink(missing_ok=True)
        self.log = state / "server.log"
        server_env = dict(env, HOME=str(home))
        venv_bin = str(Path(sys.executable).parent)
        server_env["PATH"] = venv_bin + os.pathsep + env.get("PATH", os.defpath)
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(  # noqa: S603
                [
                    sys.executable,
                    "-m",
                    "computer_env.desktop.server",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    "0",
                    "--token-file",
                    str(token_file),
                    "--port-file",
                    str(port_file),
                    *(extra_args or []),
                ],
                env=server_env,
                cwd=home,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
                preexec_fn=set_pdeathsig,
            )

        def port() -> str:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the guest server exited: {self.log.read_text()[-2000:]}")
            return port_file.read_text().strip() if port_file.exists() else ""

        try:
            self.url = "http://127.0.0.1:" + wait_for(
                port,
                f"the guest server to write its port (log: {self.log})",
                ready_timeout,
                interval=0.01,
            )
        except BaseException:
            self.close()
            raise

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def close(self, timeout: float = 10.0) -> None:
        """SIGTERM (the server cleans up its children), then SIGKILL the group if needed."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait(timeout=5)

    def __enter__(self) -> GuestServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def free_port() -> int:
    """A free TCP port on 127.0.0.1 (for servers that cannot bind port 0 themselves)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


__all__ = ["GuestServer", "XDesktop", "free_port", "wait_for_window"]
