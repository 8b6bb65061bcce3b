"""Client for the guest server API (this project's server or an upstream OSWorld VM).

Connection failures are retried (:class:`computer_env.retry.RetryPolicy`) and then raise
:class:`computer_env.errors.VMUnreachable`; an HTTP error answer raises
:class:`DesktopRequestError` (not an infrastructure error: callers decide what it means).
The module is as long as the API: one short typed method per endpoint of the server, in one
class; splitting the class by endpoint group would scatter a single client.
"""

from __future__ import annotations

import io
import logging
import os
import shlex
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import httpx
from pydantic import BaseModel

from computer_env.errors import VMUnreachable
from computer_env.retry import RetryPolicy

if TYPE_CHECKING:
    from computer_env.desktop.providers.base import DesktopHandle

logger = logging.getLogger(__name__)

#: How OSWorld's PythonController wraps pyautogui code for /execute (the fast path's
#: interpreter runs the same before each block).
PYAUTOGUI_PREFIX = "import pyautogui; import time; pyautogui.FAILSAFE = False; "

EXECUTE_TIMEOUT = 120.0  # the server's own limit for /execute


class DesktopRequestError(Exception):
    """The server answered with an HTTP error status."""

    def __init__(self, status: int, message: str, *, path: str = "") -> None:
        super().__init__(f"{path} -> HTTP {status}: {message}" if path else f"HTTP {status}: {message}")
        self.status = status
        self.message = message
        self.path = path


class ExecResult(BaseModel):
    """``{status, output, error, returncode}`` as /execute and /actions answer."""

    status: str
    output: str = ""
    error: str = ""
    returncode: int = -1

    @property
    def ok(self) -> bool:
        return self.status == "success" and self.returncode == 0


def _message(response: httpx.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.text.strip()[:500] or response.reason_phrase
    if isinstance(data, dict):
        for key in ("message", "error", "output"):
            if data.get(key):
                return str(data[key])
    return str(data)[:500]


class DesktopClient:
    """Typed access to one desktop's guest server."""

    def __init__(
        self,
        url: str,
        token: str | None = None,
        *,
        timeout: float = 30.0,
        retries: int = 3,
        backoff: float = 0.5,
    ) -> None:
        """Connection failures are retried ``retries`` times, waiting ``backoff`` seconds, then
        twice as long each time."""
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.retry = RetryPolicy(attempts=retries + 1, backoff=backoff)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout)
        self._capabilities: dict[str, Any] | None = None
        self._capabilities_known = False

    @classmethod
    def from_handle(cls, handle: "DesktopHandle", **kwargs: Any) -> "DesktopClient":
        """A client for a provider's :class:`DesktopHandle`."""
        return cls(handle.url, handle.token, **kwargs)

    # -- transport ---------------------------------------------------------------------------

    def _request(
        self,
        method: str,
        path: str,
        *,
        ok: Callable[[httpx.Response], bool] = lambda r: r.status_code < 400,
        timeout: float | None = None,
        idempotent: bool | None = None,
        **kwargs: Any,
    ) -> httpx.Response:
        """Send with retries on connection failures; raise DesktopRequestError when not ``ok``."""
        if idempotent is None:
            idempotent = method == "GET"
        retryable: tuple[type[Exception], ...] = (
            (httpx.TransportError,) if idempotent else (httpx.ConnectError, httpx.ConnectTimeout)
        )

        def send() -> httpx.Response:
            return self._http.request(
                method, path, timeout=timeout if timeout is not None else self.timeout, **kwargs)

        try:
            response = self.retry.call(send, retry_on=retryable, what=f"{method} {path}",
                                       log_level=logging.DEBUG)
        except retryable as exc:
            raise VMUnreachable(f"{method} {self.url}{path}: no answer after "
                                f"{self.retry.attempts} attempts: {exc!r}") from exc
        except httpx.TransportError as exc:
            raise VMUnreachable(f"{method} {self.url}{path} failed: {exc!r}") from exc
        if not ok(response):
            raise DesktopRequestError(response.status_code, _message(response), path=path)
        return response

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        return self._request(method, path, **kwargs).json()

    # -- discovery ---------------------------------------------------------------------------

    def ping(self) -> bool:
        """Does the server answer (one quick try, no retries)?"""
        try:
            r = self._http.get("/platform", timeout=min(self.timeout, 5.0))
        except httpx.TransportError:
            return False
        return r.status_code == 200

    def capabilities(self) -> dict[str, Any] | None:
        """This project's extras, or None on an upstream OSWorld server (no /capabilities)."""
        if not self._capabilities_known:
            r = self._request("GET", "/capabilities", ok=lambda r: r.status_code in (200, 404))
            self._capabilities = r.json() if r.status_code == 200 else None
            self._capabilities_known = True
        return self._capabilities

    def _has(self, feature: str) -> bool:
        caps = self.capabilities()
        return bool(caps and caps.get(feature))

    # -- screen ------------------------------------------------------------------------------

    def screenshot(self, fmt: str = "png", quality: int | None = None) -> bytes:
        """The screen with the cursor, as PNG (default), JPEG or WebP bytes."""
        fmt = "jpeg" if fmt == "jpg" else fmt
        caps = self.capabilities()
        if fmt == "png" or (caps and fmt in caps.get("formats", [])):
            params: dict[str, Any] = {} if fmt == "png" else {"format": fmt}
            if quality is not None and fmt != "png":
                params["quality"] = quality
            return self._request("GET", "/screenshot", params=params).content
        from PIL import Image  # upstream server: PNG only, convert here

        png = self._request("GET", "/screenshot").content
        out = io.BytesIO()
        Image.open(io.BytesIO(png)).convert("RGB").save(
            out, fmt.upper(), quality=quality or (85 if fmt == "jpeg" else 80)
        )
        return out.getvalue()

    def settle(self, *, quiet_s: float, cap_s: float, grace_s: float = 0.03,
               max_quiet_s: float | None = None, cpu_quiet_s: float | None = None,
               map_quiet_s: float | None = None) -> dict[str, Any] | None:
        """Wait in the desktop until the screen is still (its X server's damage reports) and
        the active app idle (its CPU time; ``cpu_quiet_s``, ``map_quiet_s``: the server's
        defaults when None); None when the server cannot (an upstream OSWorld VM): compare
        screenshots instead."""
        if not self._has("settle"):
            return None
        payload: dict[str, float] = {"quiet_s": quiet_s, "cap_s": cap_s, "grace_s": grace_s,
                                     "max_quiet_s": max(quiet_s, max_quiet_s or quiet_s)}
        if cpu_quiet_s is not None:
            payload["cpu_quiet_s"] = cpu_quiet_s
        if map_quiet_s is not None:
            payload["map_quiet_s"] = map_quiet_s
        r = self._request("POST", "/settle", json=payload, timeout=cap_s + 15.0,
                          ok=lambda r: r.status_code in (200, 501))
        return r.json() if r.status_code == 200 else None

    def screen_size(self) -> tuple[int, int]:
        data = self._json("POST", "/screen_size", idempotent=True)
        return int(data["width"]), int(data["height"])

    def cursor_position(self) -> tuple[int, int]:
        x, y = self._json("GET", "/cursor_position")
        return int(x), int(y)

    def platform(self) -> str:
        return self._request("GET", "/platform").text.strip()

    def accessibility_tree(self) -> str:
        """The AT-SPI tree as OSWorld's XML."""
        return str(self._json("GET", "/accessibility", timeout=max(self.timeout, 120.0))["AT"])

    def terminal_output(self) -> str | None:
        return self._json("GET", "/terminal").get("output")

    # -- commands and input ------------------------------------------------------------------

    def execute(
        self, command: str | Sequence[str], *, shell: bool = False, timeout: float | None = None
    ) -> ExecResult:
        """Run a command to completion in the desktop (OSWorld's /execute)."""
        payload: dict[str, Any] = {
            "command": command if isinstance(command, str) else list(command),
            "shell": shell,
        }
        if timeout is not None:
            payload["timeout"] = timeout
        limit = (timeout if timeout is not None else EXECUTE_TIMEOUT) + 15.0
        return ExecResult.model_validate(self._json("POST", "/execute", json=payload, timeout=limit))

    def run_pyautogui(self, code: str) -> ExecResult:
        """Run pyautogui code: the fast path when offered, else OSWorld's ``python -c``."""
        if self._has("fast_actions"):
            data = self._json("POST", "/actions", json={"code": code}, timeout=EXECUTE_TIMEOUT + 15)
            return ExecResult.model_validate(data)
        return self.execute(["python", "-c", PYAUTOGUI_PREFIX + code])

    def type_text(self, text: str) -> None:
        """Type any Unicode text into the focused window."""
        if not text:
            return
        if self._has("type_text"):
            self._request("POST", "/type", json={"text": text}, timeout=EXECUTE_TIMEOUT)
            return
        result = self.execute(["xdotool", "type", "--clearmodifiers", "--", text])
        if result.returncode != 0:
            raise DesktopRequestError(500, f"xdotool type failed: {result.error.strip()}", path="/execute")

    def launch(self, command: str | Sequence[str], *, shell: bool = False) -> None:
        """Start a program in the background (OSWorld's /setup/launch)."""
        if isinstance(command, str) and not shell:
            command = shlex.split(command)
        payload = {"command": command if isinstance(command, str) else list(command), "shell": shell}
        self._request("POST", "/setup/launch", json=payload)

    def open_file(self, path: str, *, timeout: float = 60) -> None:
        """Open a file with its default app and wait until its window shows."""
        self._request(
            "POST", "/setup/open_file", json={"path": path, "timeout": timeout}, timeout=timeout + 15
        )

    def activate_window(self, window_name: str, *, strict: bool = False, by_class: bool = False) -> None:
        """Raise and focus a window; ``DesktopRequestError`` (404) when none matches."""
        self._window("/setup/activate_window", window_name, strict, by_class)

    def close_window(self, window_name: str, *, strict: bool = False, by_class: bool = False) -> None:
        """Close a window; ``DesktopRequestError`` (404) when none matches."""
        self._window("/setup/close_window", window_name, strict, by_class)

    def _window(self, path: str, window_name: str, strict: bool, by_class: bool) -> None:
        payload = {"window_name": window_name, "strict": strict, "by_class": by_class}
        response = self._request("POST", path, json=payload)
        try:  # this project's server answers 200 like OSWorld's, saying "not_found" in the body
            answer = response.json()
        except ValueError:  # an OSWorld VM answers text
            return
        if isinstance(answer, dict) and answer.get("status") == "not_found":
            raise DesktopRequestError(404, str(answer.get("message", "")), path=path)

    # -- files -------------------------------------------------------------------------------

    def upload_file(self, path: str, data: bytes) -> None:
        """Write ``data`` to ``path`` in the desktop (multipart, like OSWorld's SetupController)."""
        files = {"file_data": (os.path.basename(path) or "file", data)}
        self._request("POST", "/setup/upload", data={"file_path": path}, files=files,
                      timeout=max(self.timeout, 600.0), idempotent=True)

    def read_file(self, path: str) -> bytes | None:
        """A file's bytes, or None when it does not exist."""
        r = self._request("POST", "/file", data={"file_path": path}, idempotent=True,
                          ok=lambda r: r.status_code in (200, 404), timeout=max(self.timeout, 120.0))
        return r.content if r.status_code == 200 else None

    def list_directory(self, path: str) -> dict[str, Any]:
        """OSWorld's directory tree ``{type, name, children}``."""
        return self._json("POST", "/list_directory", json={"path": path}, idempotent=True)["directory_tree"]

    def desktop_path(self) -> str:
        return str(self._json("POST", "/desktop_path", idempotent=True)["desktop_path"])

    def run_python(self, code: str, *, timeout: float | None = None) -> dict[str, Any]:
        """OSWorld's /run_python answer (``timeout``: the script's limit, where the server takes
        one; OSWorld's own server keeps its fixed limit)."""
        payload: dict[str, Any] = {"code": code}
        if timeout is not None:
            payload["timeout"] = timeout
        limit = max(EXECUTE_TIMEOUT, (timeout or 0) + 15)
        return dict(self._json("POST", "/run_python", json=payload, timeout=limit))

    def verify(self, code: str, *, timeout: float) -> dict[str, Any]:
        """This project's ``/verify`` answer (a synthesized task's verifier, run isolated from
        what the agent left in the desktop: see ``computer_env.desktop.server.verify_zygote``);
        None-safe callers check ``capabilities()['verify']`` first."""
        payload = {"code": code, "timeout": timeout}
        return dict(self._json("POST", "/verify", json=payload, timeout=timeout + 30))

    def run_bash_script(
        self, script: str, *, timeout: float = 100, working_dir: str | None = None
    ) -> dict[str, Any]:
        """OSWorld's /run_bash_script answer ``{status, output, error, returncode}``."""
        payload = {"script": script, "timeout": timeout, "working_dir": working_dir}
        return dict(self._json("POST", "/run_bash_script", json=payload, timeout=timeout + 15))

    # -- recording ---------------------------------------------------------------------------

    def start_recording(self) -> None:
        self._request("POST", "/start_recording")

    def end_recording(self) -> bytes:
        """Stop the recording; the MP4 bytes."""
        return self._request("POST", "/end_recording", timeout=max(self.timeout, 60.0)).content

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "DesktopClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["DesktopClient", "DesktopRequestError", "ExecResult", "PYAUTOGUI_PREFIX"]
