"""Already-running OSWorld-compatible servers (a VM farm, another machine's containers).

No lifecycle: the provider only picks a URL and checks it answers. Worker ``gwN`` takes
``urls[N % len(urls)]``; the task's own setup steps reset the state, so ``reset()`` is a health
check.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from computer_env.desktop.gateway import OSWorldGateway, with_gateway
from computer_env.desktop.providers.base import DesktopHandle, DesktopProvider
from computer_env.desktop.providers.ports import probe, wait_until_ready
from computer_env.errors import ConfigurationError, VMStartError, VMUnreachable

if TYPE_CHECKING:
    from computer_env.desktop.providers.registry import ProviderOptions

log = logging.getLogger(__name__)


def split_url_token(spec: str) -> tuple[str, str | None]:
    """``"http://h:5000#secret"`` -> ``("http://h:5000", "secret")``; no ``#`` -> no token."""
    url, sep, token = spec.partition("#")
    url = url.strip().rstrip("/")
    if not re.match(r"^https?://[^/\s]+", url):
        raise ConfigurationError(f"--vm-url {url!r} is not an http(s) URL (http://host:5000)")
    return url, (token.strip() or None) if sep else None


def xdist_worker_index(worker: str | None = None) -> int:
    """The xdist worker number (``gw3`` -> 3); 0 outside xdist."""
    worker = worker or os.environ.get("PYTEST_XDIST_WORKER", "")
    match = re.search(r"(\d+)$", worker)
    return int(match.group(1)) if match else 0


class RemoteProvider(DesktopProvider):
    """A desktop some other system runs; this provider never starts or stops it."""

    name = "remote"

    def __init__(
        self,
        urls: Sequence[str],
        tokens: Sequence[str | None] | None = None,
        *,
        worker: str | None = None,
        worker_index: int | None = None,
        ready_timeout: float = 60.0,
        guest_host: str = "127.0.0.1",
    ) -> None:
        """``urls`` may carry tokens as ``URL#token``; ``tokens`` (same length) overrides them.
        The worker number comes from ``worker_index`` or else ``worker``/``PYTEST_XDIST_WORKER``.
        ``guest_host`` is how that desktop reaches this host's services (asset server, proxy)."""
        if not urls:
            raise ConfigurationError("the remote provider needs at least one --vm-url")
        parsed = [split_url_token(u) for u in urls]
        if tokens is not None:
            if len(tokens) != len(parsed):
                raise ConfigurationError(
                    f"{len(tokens)} tokens given for {len(parsed)} --vm-url values"
                )
            parsed = [(url, tok or own) for (url, own), tok in zip(parsed, tokens, strict=True)]
        index = worker_index if worker_index is not None else xdist_worker_index(worker)
        self.index = index % len(parsed)
        self.url, self._token = parsed[self.index]
        self.ready_timeout = ready_timeout
        self.guest_host = guest_host
        self._handle: DesktopHandle | None = None
        self._gateway: OSWorldGateway | None = None

    @classmethod
    def from_options(cls, opts: ProviderOptions, variant: str = "") -> RemoteProvider:
        return cls(opts.vm_urls, worker_index=opts.worker_index)

    def start(self) -> DesktopHandle:
        """Wait (bounded) until the server returns a screenshot; raise VMUnreachable otherwise."""
        try:
            wait_until_ready(
                self.url, self._token, timeout=self.ready_timeout, what=f"remote desktop {self.url}"
            )
        except VMStartError as exc:  # a server that is not ours to start never answered
            raise VMUnreachable(str(exc)) from exc
        handle = DesktopHandle(
            url=self.url, token=self._token, guest_host=self.guest_host, provider="remote"
        )
        self._handle, self._gateway = with_gateway(handle, self._gateway)
        return self._handle

    def reset(self) -> DesktopHandle:
        """Health check only: the task's setup steps put the desktop into the task's state."""
        if self._handle is None or not self.is_alive():
            return self.start()
        return self._handle

    def is_alive(self) -> bool:
        return probe(self.url, self._token)

    def close(self) -> None:
        """Nothing to stop but the host-side OSWorld gateway: the desktop belongs to someone
        else."""
        self._handle = None
        if self._gateway is not None:
            self._gateway.close()
            self._gateway = None
