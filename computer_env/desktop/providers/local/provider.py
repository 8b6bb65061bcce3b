"""``LocalSandboxProvider``: one sandboxed X desktop per instance, on this machine.

Each desktop gets a slot (see :mod:`.netns`): a network namespace with a veth pair and a /30,
an unprivileged outside uid, and a firewall that lets the sandbox reach only the host ports
passed to :meth:`LocalSandboxProvider.allow_host_port`. The session itself (see :mod:`.bwrap`)
runs under bubblewrap with a fresh tmpfs home. ``reset()`` replaces the whole session (the
network namespace is kept); ``close()`` removes processes, netns, veth and firewall rules.
Cleanup also runs at interpreter exit and on SIGTERM; after a SIGKILL every process dies with
its parent and the next ``start()`` sweeps the network and cgroup leftovers (also
:meth:`LocalSandboxProvider.sweep_leftovers`, at the end of a run). Each session is capped
(memory, processes, CPU, /tmp: :class:`~.limits.DesktopLimits`); :meth:`limit_breaches` says
which cap the current session hit.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from computer_env.desktop.gateway import OSWorldGateway, with_gateway
from computer_env.desktop.providers.base import DesktopHandle, DesktopProvider
from computer_env.desktop.providers.guest.guest_chrome import ensure_chrome_dir
from computer_env.desktop.providers.guest.guest_tools import ensure_tools
from computer_env.desktop.providers.guest.home_template import ensure_template
from computer_env.desktop.providers.limits import DesktopLimits
from computer_env.desktop.providers.local import bwrap, netns
from computer_env.desktop.providers.local.cgroups import sweep_stale_cgroups
from computer_env.desktop.providers.local.cleanup import (
    Finalizer,
    Leftovers,
    Resources,
    install_sigterm_handler,
    sweep_leftovers,
)
from computer_env.desktop.providers.local.session import (
    HostSession,
    SandboxSession,
    host_tools_missing,
    wait_ready,
)
from computer_env.errors import ConfigurationError, VMStartError

if TYPE_CHECKING:
    from computer_env.desktop.providers.registry import ProviderOptions

log = logging.getLogger(__name__)

STATE_ROOT = Path("/run/computer-env-local")
CHROME_ROOT = Path("/var/cache/computer-env-local")  # on the disk (a link to Chromium's binary)
_HOST_STATE_ROOT = Path("/tmp/computer-env-local")  # unsandboxed mode (any user)


@contextmanager
def _host_failures(what: str) -> Iterator[None]:
    """What the host refuses while a desktop starts (fork, mount, disk, ``ip``/``iptables``) is
    the environment's failure: ``VMStartError``; anything else goes up as it is."""
    try:
        yield
    except (OSError, subprocess.SubprocessError) as exc:
        raise VMStartError(f"{what}: {type(exc).__name__}: {exc}") from exc


def _no_time_wait(ns: str) -> None:
    """Closed TCP connections leave no TIME_WAIT in the sandbox's network namespace, which
    outlives resets: a reset desktop can listen again on the ports the last task used (OSWorld's
    ``socat tcp-listen:9222`` has no ``reuseaddr``), as after a VM revert."""
    res = subprocess.run(
        ["ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv4.tcp_max_tw_buckets=0"],
        capture_output=True,
        text=True,
    )
    if res.returncode != 0:
        log.warning("could not disable TIME_WAIT in %s: %s", ns, res.stderr.strip())


class LocalSandboxProvider(DesktopProvider):
    """A local desktop: bubblewrap sandbox in its own network namespace (or, only when asked
    explicitly with ``unsandboxed=True``, plain processes on the host)."""

    name = "local"

    def __init__(
        self,
        *,
        width: int = 1920,
        height: int = 1080,
        unsandboxed: bool = False,
        ready_timeout: float = 60.0,
        bwrap_path: str | None = None,
        search_path: str | None = None,
        limits: DesktopLimits | None = None,
    ) -> None:
        """``bwrap_path`` forces a binary; ``search_path`` replaces ``$PATH`` to look for it;
        ``limits`` defaults to :meth:`DesktopLimits.from_values` (env ``HOLO_DESKTOP_*``)."""
        self.limits = limits or DesktopLimits.from_values()
        self.width, self.height = width, height
        self.unsandboxed = unsandboxed
        self.ready_timeout = ready_timeout
        self._bwrap_path = bwrap_path
        self._search_path = search_path
        self._res = Resources()
        self._fin = Finalizer(self, self._res)
        self._token = secrets.token_urlsafe(32)
        self._allowed: set[int] = set()
        self._handle: DesktopHandle | None = None
        self._host_port = 0
        self._gateway: OSWorldGateway | None = None

    @classmethod
    def from_options(cls, opts: ProviderOptions, variant: str = "") -> LocalSandboxProvider:
        return cls(
            width=opts.screen[0],
            height=opts.screen[1],
            unsandboxed=opts.unsandboxed,
            limits=opts.limits,
        )

    @staticmethod
    def sweep_leftovers() -> Leftovers:
        """Remove what local desktops of dead processes left on this host (network namespaces,
        veths, firewall chains, session cgroups); a live owner's are kept. Nothing without
        root."""
        return sweep_leftovers()

    # -- public API ------------------------------------------------------------------------
    @property
    def handle(self) -> DesktopHandle | None:
        """The running desktop's handle (None before start / after close)."""
        return self._handle

    def start(self) -> DesktopHandle:
        with self._res.lock:
            if self._handle is not None and self._res.session is not None:
                return self._handle
            install_sigterm_handler()
            if not self._fin.fin.alive:  # started again after close()
                self._fin = Finalizer(self, self._res)
            try:
                with _host_failures("starting the local desktop"):
                    handle = (
                        self._start_unsandboxed() if self.unsandboxed else self._start_sandbox()
                    )
                    self._handle, self._gateway = with_gateway(handle, self._gateway)
                return self._handle
            except BaseException:
                self.close()
                raise

    def reset(self) -> DesktopHandle:
        with self._res.lock:
            if self._handle is None:
                return self.start()
            with _host_failures("resetting the local desktop"):
                self._res.stop_session()
                self._launch()
            return self._handle

    def is_alive(self) -> bool:
        """The session runs and its server answers within 10 s: a dead session is seen at
        once; a server slowed by a loaded host is not called dead (2 s was too short under CI
        load, where a busy desktop was reported dead)."""
        session, handle = self._res.session, self._handle
        if session is None or handle is None or not session.alive():
            return False
        host, port = self._server_addr()
        try:
            wait_ready(
                host, port, self._token, session.proc, timeout=10.0, log_file=session.log_file
            )
        except VMStartError:
            return False
        return True

    def close(self) -> None:
        with self._res.lock:
            self._handle = None
            if self._gateway is not None:
                self._gateway.close()
                self._gateway = None
            self._fin.fin()

    def allow_host_port(self, port: int) -> None:
        """Let the sandbox reach host TCP ``port`` at ``handle.guest_host`` (persists)."""
        self._allowed.add(int(port))
        if self._res.slot is not None:
            self._res.slot.allow_port(int(port))

    def pids(self) -> list[int]:
        """Host pids of every process of the desktop (for memory accounting)."""
        session = self._res.session
        return session.pids() if session is not None else []

    def limit_breaches(self) -> list[str]:
        """The limits (memory, processes, /tmp) the current session hit; empty when none."""
        session = self._res.session
        return session.breaches() if isinstance(session, SandboxSession) else []

    @property
    def log_file(self) -> Path | None:
        """The session's combined stdout/stderr (Xvfb, openbox, server)."""
        session = self._res.session
        return session.log_file if session is not None else None

    # -- internals -------------------------------------------------------------------------
    def _new_token(self) -> None:
        """A new secret for the next session (each start and reset): a token that leaked from
        one session opens nothing in the next. The handle and the gateway follow it."""
        self._token = secrets.token_urlsafe(32)
        if self._handle is not None:
            self._handle = dataclasses.replace(self._handle, token=self._token)
            if self._gateway is not None:
                self._handle, self._gateway = with_gateway(self._handle, self._gateway)

    def _server_addr(self) -> tuple[str, int]:
        if self.unsandboxed:
            return "127.0.0.1", self._host_port
        assert self._res.slot is not None
        return self._res.slot.guest_addr, bwrap.GUEST_SERVER_PORT

    def _start_sandbox(self) -> DesktopHandle:
        bwrap_bin = self._bwrap_path or bwrap.find_bwrap(self._search_path)
        if not os.access(bwrap_bin, os.X_OK):
            raise ConfigurationError(f"bubblewrap binary {bwrap_bin!r} is not executable")
        netns.check_available()
        if missing := host_tools_missing():
            raise ConfigurationError(f"the local desktop needs {', '.join(missing)} installed")
        self._bwrap_bin = bwrap_bin
        sweep_stale_cgroups()  # those of dead runs (claim_slot sweeps their networks)
        slot = netns.claim_slot()
        self._res.slot = slot
        _no_time_wait(slot.netns)
        for port in sorted(self._allowed):
            slot.allow_port(port)
        STATE_ROOT.mkdir(mode=0o755, parents=True, exist_ok=True)
        self._template = ensure_template(STATE_ROOT)
        self._tools = ensure_tools(STATE_ROOT)
        self._chrome = ensure_chrome_dir(CHROME_ROOT)
        state_dir = STATE_ROOT / f"desktop-{slot.slot}"
        shutil.rmtree(state_dir, ignore_errors=True)
        self._res.state_dir = state_dir
        bwrap.write_state(state_dir)
        for path in (state_dir, *state_dir.iterdir()):
            os.chown(path, slot.sandbox_uid, slot.sandbox_uid)
        os.chmod(state_dir, 0o500)
        self._handle = DesktopHandle(
            url=f"http://{slot.guest_addr}:{bwrap.GUEST_SERVER_PORT}",
            token=self._token,
            display=":0",
            guest_host=slot.host_addr,
            ports={"server": bwrap.GUEST_SERVER_PORT},
            provider=self.name,
        )
        self._launch()
        return self._handle

    def _start_unsandboxed(self) -> DesktopHandle:
        log.warning(
            "LOCAL DESKTOP IS UNSANDBOXED: the agent's actions run directly on this host "
            "as %s (uid %d)",
            os.environ.get("USER", "?"),
            os.getuid(),
        )
        if missing := host_tools_missing():
            raise ConfigurationError(f"the local desktop needs {', '.join(missing)} installed")
        _HOST_STATE_ROOT.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._template = ensure_template(_HOST_STATE_ROOT)
        self._tools = ensure_tools(_HOST_STATE_ROOT)
        state_dir = Path(tempfile.mkdtemp(prefix="desktop-", dir=_HOST_STATE_ROOT)).resolve()
        self._res.state_dir = state_dir
        bwrap.write_state(state_dir)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self._host_port = s.getsockname()[1]
        self._handle = DesktopHandle(
            url=f"http://127.0.0.1:{self._host_port}",
            token=self._token,
            display=None,
            guest_host="127.0.0.1",
            ports={"server": self._host_port},
            provider=self.name,
        )
        self._launch()
        return self._handle

    def _launch(self) -> None:
        """Start a fresh session (fresh home, a new token) and wait for its server."""
        res = self._res
        assert res.state_dir is not None and self._handle is not None
        t0 = time.monotonic()
        self._new_token()
        log_file = res.state_dir.with_suffix(".log")
        if self.unsandboxed:
            home = res.state_dir / "home"
            shutil.rmtree(home, ignore_errors=True)
            home.mkdir()
            guard = "setpriv --pdeathsig KILL" if shutil.which("setpriv") else ""
            env = bwrap.session_env(
                width=self.width,
                height=self.height,
                home=str(home),
                template=str(self._template),
                token_fd=-1,
                scratch=str(res.state_dir / "scratch"),
                host="127.0.0.1",
                port=self._host_port,
                display="",
                guard=guard,
                tools_bin=str(self._tools / "bin"),
            )
            env["PYTHONPATH"] = str(Path(bwrap.__file__).resolve().parents[4])
            del env["DESKTOP_TOKEN_FD"]  # HostSession hands the token's pipe over
            res.session = HostSession(
                ["dbus-run-session", "--", "bash", str(res.state_dir / "init.sh")],
                env=env,
                token=self._token,
                log_file=log_file,
            )
        else:
            assert res.slot is not None
            layout = bwrap.SandboxLayout(
                state_dir=res.state_dir,
                template=self._template,
                tools=self._tools,
                chrome=self._chrome,
                tmp_bytes=self.limits.tmp_bytes,
            )
            staged = bwrap.staged_python_binds(STATE_ROOT / "stage")
            res.session = SandboxSession(
                lambda fd, token_fd: bwrap.bwrap_argv(
                    self._bwrap_bin,
                    layout,
                    width=self.width,
                    height=self.height,
                    info_fd=fd,
                    token_fd=token_fd,
                    staged=staged,
                ),
                netns=res.slot.netns,
                uid=res.slot.sandbox_uid,
                token=self._token,
                log_file=log_file,
                binds=tuple((str(src), str(dst)) for src, dst in staged.items()),
                limits=self.limits,
            )
        host, port = self._server_addr()
        wait_ready(
            host, port, self._token, res.session.proc, timeout=self.ready_timeout, log_file=log_file
        )
        if self.unsandboxed and self._handle.display is None:
            display = (res.state_dir / "scratch" / "display").read_text().strip()
            self._handle = DesktopHandle(**{**self._handle.__dict__, "display": display})
        log.info("local desktop ready in %.2f s at %s", time.monotonic() - t0, self._handle.url)
