"""OSWorld-compatible desktops: the guest server, its client, and the providers that run them.

The names below load on first use (PEP 562): the desktop's own processes (the guest server, the
action interpreter) import modules of this package and need neither the HTTP client nor pydantic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from computer_env.lazy import lazy_names

if TYPE_CHECKING:
    from computer_env.desktop.client import DesktopClient, DesktopRequestError, ExecResult
    from computer_env.desktop.providers.base import DesktopHandle, DesktopProvider

__getattr__ = lazy_names(
    __name__,
    {
        "computer_env.desktop.client": ("DesktopClient", "DesktopRequestError", "ExecResult"),
        "computer_env.desktop.providers.base": ("DesktopHandle", "DesktopProvider"),
    },
)

__all__ = ["DesktopClient", "DesktopHandle", "DesktopProvider", "DesktopRequestError", "ExecResult"]
