"""``--provider docker``: desktops in Docker containers (OSWorld's QEMU image or the project's
guest-server image): the provider, its containers, the network and host-side firewall of
each desktop, its Docker host, and the seccomp profile that lets the guest-server image make
its nest.

May import: the shared provider modules (``base``, ``options``, ``registry``, ``limits``,
``ports``); never another provider.

``DockerProvider`` is importable from this path as before; it loads on first use (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from computer_env.lazy import lazy_names

if TYPE_CHECKING:
    from computer_env.desktop.providers.docker.provider import DockerProvider

__getattr__ = lazy_names(
    __name__,
    {
        "computer_env.desktop.providers.docker.provider": ("DockerProvider",),
    },
)

__all__ = ["DockerProvider"]
