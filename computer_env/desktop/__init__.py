"""OSWorld-compatible desktops: the guest server, its client, and the providers that run them."""

from computer_env.desktop.client import DesktopClient, DesktopRequestError, ExecResult
from computer_env.desktop.providers.base import DesktopHandle, DesktopProvider

__all__ = ["DesktopClient", "DesktopHandle", "DesktopProvider", "DesktopRequestError", "ExecResult"]
