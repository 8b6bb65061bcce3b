"""Providers by ``--provider`` name: ``local``, ``docker``, ``remote``, ``ray``,
``osworld:<name>``.

Each provider's module is imported only when its name is asked for (each brings its own
dependencies: the docker SDK, OSWorld's ``desktop_env``). A provider class builds itself from
one typed :class:`ProviderOptions` (``from_options``) and may check the host before a run
(``preflight``, on the controller, before any worker starts).
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from computer_env.desktop.providers.base import DesktopProvider
from computer_env.desktop.providers.limits import DesktopLimits
from computer_env.errors import ConfigurationError


def controller_pid() -> int:
    """The pid of the run's controller: an xdist worker's parent, or this process with -n0."""
    return os.getppid() if os.environ.get("PYTEST_XDIST_WORKER") else os.getpid()


@dataclass(frozen=True)
class ProviderOptions:
    """Everything a provider may be built from; each provider takes the fields it needs.

    ``screen`` is (width, height); ``vm_urls`` the remote servers (``URL#token``);
    ``docker_image``/``vm_path`` the docker provider's image and OSWorld qcow2 (None: its
    default); ``run_id``/``worker_id``/``controller_pid`` label containers so that a dead run's
    can be swept; ``limits`` caps a desktop (None: :meth:`DesktopLimits.from_values`);
    ``workers``/``spare`` size the run for a preflight; ``ray_*`` place ``--provider ray``'s
    desktop actors (:mod:`.ray_provider`).
    """

    worker_index: int = 0
    screen: tuple[int, int] = (1920, 1080)
    unsandboxed: bool = False
    vm_urls: tuple[str, ...] = ()
    docker_image: str | None = None
    vm_path: str | None = None
    run_id: str | None = None
    worker_id: str | None = None
    controller_pid: int = field(default_factory=controller_pid)
    osworld_root: Path | None = None
    limits: DesktopLimits | None = None
    workers: int = 1
    spare: bool = False
    ray_address: str = "auto"
    ray_desktop: str = "local"
    ray_resource: str = "desktop"
    ray_resource_amount: float = 1.0
    ray_placement: str = "spread"


#: name -> "module:Class"; a name ending in ":" takes a variant (``osworld:aws``).
PROVIDERS: dict[str, str] = {
    "local": "computer_env.desktop.providers.local:LocalSandboxProvider",
    "docker": "computer_env.desktop.providers.docker:DockerProvider",
    "remote": "computer_env.desktop.providers.remote:RemoteProvider",
    "ray": "computer_env.desktop.providers.ray_provider:RayProvider",
    "osworld:": "computer_env.desktop.providers.osworld_cloud:OSWorldCloudProvider",
}


def known_names() -> list[str]:
    """The names ``--provider`` accepts, as a user writes them."""
    return [f"{key}<name>" if key.endswith(":") else key for key in PROVIDERS]


def provider_class(name: str) -> tuple[type[DesktopProvider], str]:
    """The class registered for ``name`` and the variant (``aws`` of ``osworld:aws``, else
    ``""``); ``ConfigurationError`` naming ``--provider`` and the known names otherwise."""
    key, colon, variant = name.partition(":")
    target = PROVIDERS.get(key + colon) if (variant or not colon) else None
    if target is None:
        raise ConfigurationError(
            f"--provider {name!r}: unknown provider (known: {', '.join(known_names())})")
    module, _, cls = target.partition(":")
    provider: type[DesktopProvider] = getattr(importlib.import_module(module), cls)
    return provider, variant


def make_provider(name: str, opts: ProviderOptions) -> DesktopProvider:
    """Build the provider named by ``--provider`` from ``opts``."""
    cls, variant = provider_class(name)
    return cls.from_options(opts, variant)


def preflight(name: str, opts: ProviderOptions) -> list[str]:
    """Controller-side checks of the provider named ``name`` before any worker starts; returns
    warnings to print, raises ``ConfigurationError`` with what to do."""
    cls, variant = provider_class(name)
    return cls.preflight(opts, variant)


__all__ = ["PROVIDERS", "ProviderOptions", "controller_pid", "known_names", "make_provider",
           "preflight", "provider_class"]
