"""OSWorld's own VM providers (``--provider osworld:aws|azure|gcp|aliyun|volcengine|vmware|...``).

Delegates to ``desktop_env.providers.create_vm_manager_and_provider`` from the user's OSWorld
checkout (``--osworld-root``), imported lazily: the manager picks/allocates a VM, the provider
starts it, reports its IP and reverts it; the handle points at the in-VM server on port 5000
(no token, as upstream).

Testing note: nothing but the error path (``desktop_env`` not importable) and construction can
run on a machine without cloud credentials; the calls below follow OSWorld's ``Provider`` /
``VMManager`` interfaces (``get_vm_path``, ``start_emulator``, ``get_ip_address``,
``revert_to_snapshot``, ``stop_emulator``), whose signatures differ slightly between providers,
so only the keyword arguments each one accepts are passed.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from computer_env.desktop.providers.base import DesktopHandle, DesktopProvider
from computer_env.desktop.providers.ports import probe, wait_until_ready
from computer_env.errors import ConfigurationError, VMStartError

if TYPE_CHECKING:
    from computer_env.desktop.providers.registry import ProviderOptions

log = logging.getLogger(__name__)

#: Environment variables OSWorld's providers read for their region, by provider name.
REGION_ENV: dict[str, tuple[str, ...]] = {
    "aws": ("AWS_REGION", "AWS_DEFAULT_REGION"),
    "azure": ("AZURE_REGION",),
    "gcp": ("GCP_REGION", "GOOGLE_CLOUD_REGION"),
    "aliyun": ("ALIYUN_REGION",),
    "volcengine": ("VOLCENGINE_REGION",),
}


def _call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call ``fn`` with only the keyword arguments its signature accepts."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return fn(*args, **kwargs)
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        kwargs = {k: v for k, v in kwargs.items() if k in params}
    return fn(*args, **kwargs)


def parse_address(address: str) -> tuple[str, int]:
    """OSWorld's ``get_ip_address`` gives ``"10.0.0.5"`` (cloud) or ``"host:5000:9222:8006:8080"``
    (docker); return the host and the server port."""
    host, _, rest = str(address).partition(":")
    port = int(rest.split(":", 1)[0]) if rest else 5000
    return host, port


class OSWorldCloudProvider(DesktopProvider):
    """A VM run by one of OSWorld's providers; one VM per worker, reverted between tasks."""

    name = "osworld"

    def __init__(
        self,
        name: str,
        *,
        osworld_root: str | Path | None = None,
        region: str | None = None,
        screen: tuple[int, int] = (1920, 1080),
        os_type: str = "Ubuntu",
        snapshot_name: str = "init_state",
        use_proxy: bool = False,
        headless: bool = True,
        ready_timeout: float = 600.0,
        guest_host: str | None = None,
    ) -> None:
        """``guest_host``: how the VM reaches this host's services (a cloud VM usually needs a
        public address or tunnel; default: this host's name)."""
        if not name or ":" in name:
            raise ConfigurationError(f"--provider osworld:<name>: bad provider name {name!r}")
        self.provider_name = name.lower()
        self.name = f"osworld:{self.provider_name}"
        self.osworld_root = Path(osworld_root).expanduser() if osworld_root else None
        self.region = region or next(
            (os.environ[v] for v in REGION_ENV.get(self.provider_name, ()) if os.environ.get(v)),
            None,
        )
        self.screen = screen
        self.os_type = os_type
        self.snapshot_name = snapshot_name
        self.use_proxy = use_proxy
        self.headless = headless
        self.ready_timeout = ready_timeout
        self.guest_host = guest_host or os.uname().nodename
        self._manager: Any = None
        self._provider: Any = None
        self._vm_path: str | None = None
        self._handle: DesktopHandle | None = None

    @classmethod
    def from_options(cls, opts: ProviderOptions, variant: str = "") -> OSWorldCloudProvider:
        """``variant``: OSWorld's provider name (``aws`` of ``--provider osworld:aws``)."""
        return cls(variant, osworld_root=opts.osworld_root, screen=opts.screen)

    def _load(self) -> None:
        if self._provider is not None:
            return
        if self.osworld_root is not None and str(self.osworld_root) not in sys.path:
            sys.path.insert(0, str(self.osworld_root))
        try:
            module = importlib.import_module("desktop_env.providers")
            factory = module.create_vm_manager_and_provider
        except (ImportError, AttributeError) as exc:
            where = self.osworld_root or "(no --osworld-root given)"
            raise ConfigurationError(
                f"--provider {self.name} needs OSWorld's desktop_env package, which is not "
                f"importable ({type(exc).__name__}: {exc}). Pass --osworld-root pointing at an "
                f"OSWorld checkout (currently {where}) and install its requirements."
            ) from exc
        try:
            self._manager, self._provider = _call(
                factory, self.provider_name, self.region, use_proxy=self.use_proxy
            )
        except NotImplementedError as exc:
            raise ConfigurationError(f"OSWorld has no provider {self.provider_name!r}") from exc
        except ImportError as exc:
            # `make setup` installs OSWorld's code without its cloud SDKs (boto3, azure, ...)
            raise ConfigurationError(
                f"--provider {self.name}: OSWorld's {self.provider_name} provider needs "
                f"{exc.name or exc}, which is not installed; install that provider's SDK from "
                "OSWorld's requirements.txt into this environment (make setup leaves the cloud "
                "SDKs out)"
            ) from exc

    def _connect(self) -> DesktopHandle:
        try:
            host, port = parse_address(_call(self._provider.get_ip_address, self._vm_path))
        except Exception as exc:  # cloud SDK errors of every kind, or an address it garbled
            raise VMStartError(f"{self.name}: no address for VM {self._vm_path}: {exc}") from exc
        url = f"http://{host}:{port}"
        wait_until_ready(url, None, timeout=self.ready_timeout, what=f"{self.name} VM {host}")
        self._handle = DesktopHandle(
            url=url,
            token=None,
            guest_host=self.guest_host,
            provider=self.name,
            image=str(self._vm_path),
        )
        return self._handle

    def start(self) -> DesktopHandle:
        self._load()
        try:
            self._vm_path = _call(
                self._manager.get_vm_path,
                os_type=self.os_type,
                region=self.region,
                screen_size=self.screen,
            )
            _call(self._provider.start_emulator, self._vm_path, self.headless, os_type=self.os_type)
        except ConfigurationError:
            raise
        except Exception as exc:  # cloud SDK errors of every kind
            raise VMStartError(f"{self.name}: could not start a VM: {exc}") from exc
        return self._connect()

    def reset(self) -> DesktopHandle:
        """Revert to the snapshot (some providers return a new VM path, e.g. a new instance)."""
        if self._vm_path is None:
            return self.start()
        try:
            new_path = _call(self._provider.revert_to_snapshot, self._vm_path, self.snapshot_name)
        except Exception as exc:
            raise VMStartError(f"{self.name}: revert failed: {exc}") from exc
        if isinstance(new_path, str) and new_path:
            self._vm_path = new_path
        return self._connect()

    def is_alive(self) -> bool:
        return self._handle is not None and probe(self._handle.url, None)

    def close(self) -> None:
        """Stop (cloud: terminate) the VM; idempotent."""
        if self._provider is None or self._vm_path is None:
            return
        path, self._vm_path, self._handle = self._vm_path, None, None
        try:
            _call(self._provider.stop_emulator, path, region=self.region)
        except Exception as exc:  # noqa: BLE001 - report, never raise from close
            log.warning("%s: stopping VM %s failed: %s", self.name, path, exc)
