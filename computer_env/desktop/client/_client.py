"""The client class: the screen, input, discovery and lifecycle calls, on top of the transport
(:mod:`._transport`) and setup, files and scripts (:mod:`._setup`).
"""

from __future__ import annotations

import io
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from computer_env.desktop.client import _bind_keys
from computer_env.desktop.client._setup import SetupAndFiles
from computer_env.desktop.client._transport import (
    EXECUTE_TIMEOUT,
    DesktopRequestError,
    ExecResult,
)
from computer_env.desktop.grabs import XGrabReport
from computer_env.desktop.keysyms import keysym_for, mappable
from computer_env.desktop.prefix import PYAUTOGUI_PREFIX

logger = logging.getLogger(__name__)
_BIND_KEYS_SOURCE = Path(_bind_keys.__file__).read_text(encoding="utf-8")
"""The in-desktop script that binds characters for the fallback typing, sent as source."""


class DesktopClient(SetupAndFiles):
    """Typed access to one desktop's guest server."""

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
            return self._get_bytes("/screenshot", params)
        from PIL import Image  # upstream server: PNG only, convert here

        png = self._request("GET", "/screenshot").content
        out = io.BytesIO()
        Image.open(io.BytesIO(png)).convert("RGB").save(
            out, fmt.upper(), quality=quality or (85 if fmt == "jpeg" else 80)
        )
        return out.getvalue()

    def settle(
        self,
        *,
        quiet_s: float,
        cap_s: float,
        grace_s: float = 0.03,
        max_quiet_s: float | None = None,
        cpu_quiet_s: float | None = None,
        map_quiet_s: float | None = None,
    ) -> dict[str, Any] | None:
        """Wait in the desktop until the screen is still (its X server's damage reports) and
        the active app idle (its CPU time; ``cpu_quiet_s``, ``map_quiet_s``: the server's
        defaults when None); None when the server cannot (an upstream OSWorld VM): compare
        screenshots instead."""
        if not self._has("settle"):
            return None
        payload: dict[str, float] = {
            "quiet_s": quiet_s,
            "cap_s": cap_s,
            "grace_s": grace_s,
            "max_quiet_s": max(quiet_s, max_quiet_s or quiet_s),
        }
        if cpu_quiet_s is not None:
            payload["cpu_quiet_s"] = cpu_quiet_s
        if map_quiet_s is not None:
            payload["map_quiet_s"] = map_quiet_s
        r = self._request(
            "POST",
            "/settle",
            json=payload,
            timeout=cap_s + 15.0,
            ok=lambda r: r.status_code in (200, 501),
        )
        return r.json() if r.status_code == 200 else None

    def x_grabs(self) -> XGrabReport:
        """The grabs of the X server the guest server found (none on a server without the
        watch, e.g. an upstream OSWorld VM)."""
        if not self._has("x_grabs"):
            return XGrabReport()
        return XGrabReport.model_validate(self._json("GET", "/x_grabs"))

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
        return ExecResult.model_validate(
            self._json("POST", "/execute", json=payload, timeout=limit)
        )

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
        self._bind_keys(text)
        result = self.execute(["xdotool", "type", "--clearmodifiers", "--", text])
        if result.returncode != 0:
            raise DesktopRequestError(
                500, f"xdotool type failed: {result.error.strip()}", path="/execute"
            )

    def _bind_keys(self, text: str) -> None:
        """On an upstream server: give each character of ``text`` that is not printable ASCII
        a keycode of its own in the desktop's keymap before ``xdotool type`` types it
        (:mod:`._bind_keys` says why: xdotool's own remapping loses characters)."""
        keysyms = sorted({keysym_for(c) for c in text if mappable(c) and not " " <= c <= "~"})
        if not keysyms:
            return
        result = self.execute(["python", "-c", _BIND_KEYS_SOURCE, *map(str, keysyms)])
        if result.returncode != 0:
            logger.warning(
                "could not bind %d characters in the desktop's keymap (%s): xdotool may lose them",
                len(keysyms),
                (result.error or result.output).strip()[-200:],
            )
        elif not result.output.strip().endswith(" left 0"):
            logger.warning(
                "the desktop's keymap has no unused keycode for some characters (%s): xdotool "
                "may lose them",
                result.output.strip(),
            )

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> DesktopClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
