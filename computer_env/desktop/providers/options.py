"""``ProviderOptions``: everything a provider may be built from (one typed value per run and
worker), and the controller's pid it carries.

Apart from :mod:`.registry` (which builds providers from it) so that the provider contract
(:mod:`.base`) can name it without importing the registry; :mod:`.registry` re-exports both.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from computer_env.desktop.providers.limits import DesktopLimits


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
    desktop actors (:mod:`.ray.provider`).
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


__all__ = ["ProviderOptions", "controller_pid"]
