"""The provider contract: something that owns one OSWorld-compatible desktop (sandbox, container, VM)."""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Self

if TYPE_CHECKING:
    from computer_env.desktop.providers.options import ProviderOptions


@dataclass(frozen=True)
class DesktopHandle:
    """How to reach a running desktop.

    ``url`` is the guest server's base URL as seen from the host (e.g. ``http://10.77.3.2:5000``),
    ``token`` the bearer token (None for an upstream OSWorld VM, which has no auth),
    ``guest_host`` the address under which the *guest* reaches services the harness runs on the
    host (asset server, proxy), ``ports`` the other published guest ports by name
    (``cdp``, ``vlc``, ``vnc``) as reachable from the host. ``osworld_url`` is where OSWorld's
    own code (``PythonController``, ``SetupController``, getters) reaches the server WITHOUT a
    token: a host-loopback gateway nothing inside a desktop can reach
    (:mod:`computer_env.desktop.gateway`); ``osworld_ports`` its ``server``, ``cdp`` and ``vlc``
    ports on 127.0.0.1. ``node`` names the cluster node of a desktop placed on one.
    """

    url: str
    token: str | None
    display: str | None = None
    guest_host: str = "127.0.0.1"
    ports: dict[str, int] = field(default_factory=dict)
    provider: str = "local"
    image: str | None = None
    osworld_url: str | None = None
    osworld_ports: dict[str, int] = field(default_factory=dict)
    node: str | None = None
    """the cluster node the desktop runs on (``--provider ray``: ``address (node id)``)"""


class DesktopProvider(abc.ABC):
    """Lifecycle of one desktop. Every method raises ``computer_env.errors.InfraError`` subclasses
    (``VMStartError``, ``VMUnreachable``) for environment failures and ``ConfigurationError`` for
    set-up problems the user must fix (missing package, image)."""

    name: str = "abstract"

    @classmethod
    def from_options(cls, opts: ProviderOptions, variant: str = "") -> DesktopProvider:
        """Build from the run's options (what the registry calls); ``variant`` is what follows
        ``:`` in the ``--provider`` name (``aws`` of ``osworld:aws``), empty for the others."""
        raise NotImplementedError(f"{cls.__name__} cannot be built from the run's options")

    @classmethod
    def preflight(cls, opts: ProviderOptions, variant: str = "") -> list[str]:
        """Checks on the controller before any worker starts: raise ``ConfigurationError`` with
        what to do, return warnings to print. Default: nothing to check."""
        return []

    @abc.abstractmethod
    def start(self) -> DesktopHandle:
        """Start the desktop and block until its server answers (readiness, not a sleep)."""

    @abc.abstractmethod
    def reset(self) -> DesktopHandle:
        """Return the desktop to its pristine state and block until ready again."""

    @abc.abstractmethod
    def is_alive(self) -> bool:
        """Cheap health check: does the server answer?"""

    @abc.abstractmethod
    def close(self) -> None:
        """Stop everything this provider started; idempotent; leaves no process or container."""

    def limit_breaches(self) -> list[str]:
        """The resource limits (memory, processes, /tmp) the current desktop hit since its last
        start/reset, one line each; empty when none (or when the provider cannot tell)."""
        return []

    def host_lost(self) -> bool:
        """True when what the desktop ran on went away under it (a cluster node, the actor
        that held it): the environment's failure, whatever the agent was doing then. Default
        False: a provider that cannot tell (a local desktop's host is this process's)."""
        return False

    def allow_host_port(self, port: int) -> None:  # noqa: B027 - optional
        """Let the guest reach ``port`` on the host (asset server, proxy). Default: nothing to do."""

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
