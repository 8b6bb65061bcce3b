"""Desktop providers: local sandbox (bubblewrap), docker, remote."""

from computer_env.desktop.providers.base import DesktopHandle, DesktopProvider

__all__ = ["DesktopHandle", "DesktopProvider"]
