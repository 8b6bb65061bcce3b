"""Providers by ``--provider`` name: ``local``, ``docker``, ``remote``, ``ray``,
``osworld:<name>``.

Each provider's module is imported only when its name is asked for (each brings its own
dependencies: the docker SDK, OSWorld's ``desktop_env``). A provider class builds itself from
one typed :class:`~.options.ProviderOptions` (``from_options``) and may check the host before a run
(``preflight``, on the controller, before any worker starts).
"""

from __future__ import annotations

import importlib

from computer_env.desktop.providers.base import DesktopProvider
from computer_env.desktop.providers.options import ProviderOptions, controller_pid
from computer_env.errors import ConfigurationError

#: name -> "module:Class"; a name ending in ":" takes a variant (``osworld:aws``).
PROVIDERS: dict[str, str] = {
    "local": "computer_env.desktop.providers.local.provider:LocalSandboxProvider",
    "docker": "computer_env.desktop.providers.docker.provider:DockerProvider",
    "remote": "computer_env.desktop.providers.remote:RemoteProvider",
    "ray": "computer_env.desktop.providers.ray.provider:RayProvider",
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
            f"--provider {name!r}: unknown provider (known: {', '.join(known_names())})"
        )
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


__all__ = [
    "PROVIDERS",
    "ProviderOptions",
    "controller_pid",
    "known_names",
    "make_provider",
    "preflight",
    "provider_class",
]
