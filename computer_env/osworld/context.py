"""``TaskContext``: everything setup, evaluation and the env need to act on one desktop."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from computer_env.desktop.client import DesktopClient
from computer_env.desktop.gateway import OSWorldGateway, gateway_for
from computer_env.desktop.providers.base import DesktopHandle

DEFAULT_CLIENT_PASSWORD = "password"
"""OSWorld's Ubuntu image password (``{CLIENT_PASSWORD}``)."""


@dataclass
class TaskContext:
    """One task's view of a running desktop.

    ``vars`` are substituted (``{NAME}``) into every string of a task's ``config`` and
    ``evaluator`` before use; ``proxy`` is the proxy URL as seen from the guest;
    ``action_history`` collects OSWorld-style actions (``"FAIL"`` for a declared infeasible task).
    ``task_id`` (optional) names the per-task working folder under ``cache_dir``.
    """

    client: DesktopClient
    handle: DesktopHandle
    cache_dir: Path
    vars: dict[str, str] = field(default_factory=dict)
    proxy: str | None = None
    screen: tuple[int, int] = (1920, 1080)
    action_history: list[str] = field(default_factory=list)
    task_id: str | None = None
    _work_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12], repr=False)

    @property
    def task_cache_dir(self) -> Path:
        """Per-task folder for setup outputs and getter files, created on use:
        ``cache_dir/tasks/<task_id>`` (or a folder unique to this context without a task id)."""
        path = Path(self.cache_dir) / "tasks" / (self.task_id or f"ctx-{self._work_id}")
        path.mkdir(parents=True, exist_ok=True)
        return path

    @property
    def download_cache_dir(self) -> Path:
        """Host-side content cache for setup downloads, shared by all tasks."""
        path = Path(self.cache_dir) / "downloads"
        path.mkdir(parents=True, exist_ok=True)
        return path

    @property
    def embedded(self) -> bool:
        """Is this desktop the project's own (local sandbox, guest-server container or a remote
        server of this project: it wants a token), not OSWorld's Ubuntu VM image? Results on it
        are comparable between runs, not with published OSWorld numbers."""
        return self.handle.token is not None

    @property
    def gateway(self) -> OSWorldGateway:
        """The host-side entrance OSWorld's code uses for this desktop (the provider's, or one
        made here for a handle that has none, e.g. an OSWorld cloud VM)."""
        return gateway_for(self.handle)

    @property
    def osworld_address(self) -> tuple[str, int]:
        """``(vm_ip, server_port)`` as OSWorld's code is given them (the gateway, no token)."""
        parts = urlsplit(self.gateway.url)
        return parts.hostname or "127.0.0.1", parts.port or 80

    @property
    def osworld_ports(self) -> dict[str, int]:
        """``server``, ``cdp`` and ``vlc`` ports of the gateway (127.0.0.1)."""
        return self.gateway.ports


def default_vars(
    screen: tuple[int, int],
    *,
    client_password: str = DEFAULT_CLIENT_PASSWORD,
    asset_url: str | None = None,
    guest_asset_url: str | None = None,
) -> dict[str, str]:
    """The placeholder values OSWorld substitutes, plus the asset server URLs when given."""
    width, height = screen
    values = {
        "CLIENT_PASSWORD": client_password,
        "SCREEN_WIDTH": str(width),
        "SCREEN_HEIGHT": str(height),
        "SCREEN_WIDTH_HALF": str(width // 2),
        "SCREEN_HEIGHT_HALF": str(height // 2),
    }
    if asset_url is not None:
        values["ASSET_URL"] = asset_url.rstrip("/")
    if guest_asset_url is not None:
        values["GUEST_ASSET_URL"] = guest_asset_url.rstrip("/")
    return values


_PLACEHOLDER = re.compile(r"\{([A-Z][A-Z0-9_]*)\}")


def substitute(obj: Any, vars: dict[str, str]) -> Any:
    """A deep copy of ``obj`` with ``{NAME}`` replaced in every string (keys included) for each
    NAME in ``vars``; other braces (Python code, JSON) are left alone."""
    if isinstance(obj, str):
        if "{" not in obj:
            return obj
        return _PLACEHOLDER.sub(lambda m: vars.get(m.group(1), m.group(0)), obj)
    if isinstance(obj, dict):
        return {substitute(k, vars): substitute(v, vars) for k, v in obj.items()}
    if isinstance(obj, list):
        return [substitute(v, vars) for v in obj]
    if isinstance(obj, tuple):
        return tuple(substitute(v, vars) for v in obj)
    return obj


__all__ = ["DEFAULT_CLIENT_PASSWORD", "TaskContext", "default_vars", "substitute"]
