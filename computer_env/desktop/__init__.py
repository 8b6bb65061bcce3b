"""OSWorld-compatible desktops: the guest server, its client, and the providers that run them.

The names below load on first use (PEP 562): the desktop's own processes (the guest server, the
action interpreter) import modules of this package and need neither the HTTP client nor pydantic.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from computer_env.desktop.client import DesktopClient, DesktopRequestError, ExecResult
    from computer_env.desktop.providers.base import DesktopHandle, DesktopProvider

_WHERE = {"DesktopClient": "computer_env.desktop.client",
          "DesktopRequestError": "computer_env.desktop.client",
          "ExecResult": "computer_env.desktop.client",
          "DesktopHandle": "computer_env.desktop.providers.base",
          "DesktopProvider": "computer_env.desktop.providers.base"}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["DesktopClient", "DesktopHandle", "DesktopProvider", "DesktopRequestError", "ExecResult"]
