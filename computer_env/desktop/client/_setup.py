"""The guest server's setup, file and script endpoints (OSWorld's ``/setup/*``, ``/file``,
``/run_python``, ``/run_bash_script``, recording), as methods of
:class:`computer_env.desktop.client.DesktopClient`."""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from typing import Any

from computer_env.desktop.client._transport import (
    EXECUTE_TIMEOUT,
    DesktopRequestError,
    GuestTransport,
)


class SetupAndFiles(GuestTransport):
    """Programs, windows, files and scripts in the desktop."""

    def launch(self, command: str | Sequence[str], *, shell: bool = False) -> None:
        """Start a program in the background (OSWorld's /setup/launch)."""
        if isinstance(command, str) and not shell:
            command = shlex.split(command)
        payload = {
            "command": command if isinstance(command, str) else list(command),
            "shell": shell,
        }
        self._request("POST", "/setup/launch", json=payload)

    def open_file(self, path: str, *, timeout: float = 60) -> None:
        """Open a file with its default app and wait until its window shows."""
        self._request(
            "POST",
            "/setup/open_file",
            json={"path": path, "timeout": timeout},
            timeout=timeout + 15,
        )

    def activate_window(
        self, window_name: str, *, strict: bool = False, by_class: bool = False
    ) -> None:
        """Raise and focus a window; ``DesktopRequestError`` (404) when none matches."""
        self._window("/setup/activate_window", window_name, strict, by_class)

    def close_window(
        self, window_name: str, *, strict: bool = False, by_class: bool = False
    ) -> None:
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
        self._request(
            "POST",
            "/setup/upload",
            data={"file_path": path},
            files=files,
            timeout=max(self.timeout, 600.0),
            idempotent=True,
        )

    def read_file(self, path: str) -> bytes | None:
        """A file's bytes, or None when it does not exist."""
        r = self._request(
            "POST",
            "/file",
            data={"file_path": path},
            idempotent=True,
            ok=lambda r: r.status_code in (200, 404),
            timeout=max(self.timeout, 120.0),
        )
        return r.content if r.status_code == 200 else None

    def list_directory(self, path: str) -> dict[str, Any]:
        """OSWorld's directory tree ``{type, name, children}``."""
        return self._json("POST", "/list_directory", json={"path": path}, idempotent=True)[
            "directory_tree"
        ]

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
        what the agent left in the desktop: see ``computer_env.desktop.server.commands.verifier``);
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
