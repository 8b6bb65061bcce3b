"""One running desktop session (Xvfb + openbox + at-spi + guest server) and how to end it.

:class:`SandboxSession` runs it under bubblewrap inside a slot's network namespace as the
slot's unprivileged uid; :class:`HostSession` runs it directly on the host (unsandboxed).
Both are started by :func:`computer_env.procs.spawn` (own process group, SIGKILL when this
process dies).
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import select
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from computer_env import procs
from computer_env.desktop.providers.limits import DesktopLimits, tmp_breach
from computer_env.desktop.providers.local.bwrap import token_pipe
from computer_env.desktop.providers.local.cgroups import SessionCgroup
from computer_env.errors import VMStartError
from computer_env.readiness import NotReady, NotYet, wait_until

log = logging.getLogger(__name__)


def wait_ready(
    host: str,
    port: int,
    token: str,
    session: subprocess.Popen[bytes],
    *,
    timeout: float,
    log_file: Path,
) -> None:
    """Poll ``GET /platform`` until the server answers 200; raise VMStartError otherwise."""

    def platform() -> bool:
        conn = http.client.HTTPConnection(host, port, timeout=2.0)
        try:
            conn.request("GET", "/platform", headers={"Authorization": f"Bearer {token}"})
            resp = conn.getresponse()
            resp.read()
            if resp.status == 200:
                return True
            raise NotYet(f"HTTP {resp.status}")
        finally:
            conn.close()

    try:
        wait_until(
            platform,
            timeout_s=timeout,
            what=f"desktop server at {host}:{port}",
            interval_s=0.005,
            max_interval_s=0.05,
            child=session,
            retry_on=(OSError, http.client.HTTPException),
        )
    except NotReady as exc:
        if exc.exit_code is not None:
            raise VMStartError(
                f"desktop session exited ({exc.exit_code}) before its server answered",
                detail=tail(log_file),
            ) from None
        raise VMStartError(
            f"desktop server at {host}:{port} not ready after {timeout:.0f} s "
            f"(GET /platform: {exc.last})",
            detail=tail(log_file),
        ) from None


def tail(path: Path, limit: int = 4000) -> str:
    """The end of a log file (for error details)."""
    try:
        return path.read_bytes()[-limit:].decode(errors="replace")
    except OSError:
        return ""


_warned_no_cgroup = False


def session_cgroup(limits: DesktopLimits) -> SessionCgroup | None:
    """A cgroup with the memory, process and CPU limits, or None (warned once) where cgroups are
    unusable here; the process count is then capped with RLIMIT_NPROC, memory and CPU not."""
    global _warned_no_cgroup
    try:
        return SessionCgroup(limits)
    except OSError as exc:
        if not _warned_no_cgroup:
            log.warning(
                "desktop limits: no cgroup (%s); capping processes with RLIMIT_NPROC, "
                "memory and CPU are NOT capped",
                exc,
            )
            _warned_no_cgroup = True
        return None


class SandboxSession:
    """A bubblewrap session; ended by killing its pid-namespace init, then every process of its
    outside uid (nothing of the sandbox survives, whatever it forked or setsid'd). Its processes
    live in their own cgroup (memory, process and CPU limits, see :mod:`.cgroups`)."""

    def __init__(
        self,
        build_argv: Callable[[int, int], list[str]],
        *,
        netns: str,
        uid: int,
        token: str,
        log_file: Path,
        binds: tuple[tuple[str, str], ...] = (),
        limits: DesktopLimits | None = None,
    ) -> None:
        """``build_argv(info_fd, token_fd)``: the bwrap command line; ``token``: the server's
        secret, handed over on a pipe (:func:`~.bwrap.token_pipe`), never written to a file."""
        self.uid = uid
        self.log_file = log_file
        self.limits = limits or DesktopLimits()
        self.cgroup = session_cgroup(self.limits)
        read_fd, write_fd = os.pipe()
        token_fd = token_pipe(token)
        try:
            argv = build_argv(write_fd, token_fd)
            if self.cgroup is None and shutil.which("prlimit"):
                argv = ["prlimit", f"--nproc={self.limits.pids}", "--", *argv]
            with open(log_file, "wb") as out:
                self.proc = procs.spawn(
                    argv,
                    env={"PATH": "/usr/bin:/bin"},
                    netns=netns,
                    uid=uid,
                    gid=uid,
                    binds=binds,
                    cgroup_procs=self.cgroup.procs_files if self.cgroup else (),
                    pass_fds=(write_fd, token_fd),
                    stdout=out,
                    stderr=out,
                    cwd="/",
                )
        except BaseException:
            os.close(read_fd)
            if self.cgroup is not None:
                self.cgroup.remove()
            raise
        finally:
            os.close(write_fd)
            os.close(token_fd)
        self.child_pid = self._read_child_pid(read_fd)

    def breaches(self) -> list[str]:
        """Limits this session hit so far (memory, processes, /tmp); empty when none."""
        found = self.cgroup.breaches() if self.cgroup is not None else []
        if self.child_pid is not None and self.alive():
            full = tmp_breach(Path(f"/proc/{self.child_pid}/root"), self.limits)
            if full:
                found.append(full)
        return found

    def _read_child_pid(self, fd: int) -> int | None:
        """bwrap writes ``{"child-pid": N}`` (a host pid) to --info-fd once the sandbox exists."""
        data = b""
        deadline = time.monotonic() + 10.0
        try:
            while time.monotonic() < deadline:
                ready, _, _ = select.select([fd], [], [], 0.1)
                if ready:
                    chunk = os.read(fd, 4096)
                    if not chunk:
                        break
                    data += chunk
                    if b"}" in data:
                        break
                elif self.proc.poll() is not None:
                    break
        finally:
            os.close(fd)
        try:
            return int(json.loads(data.decode())["child-pid"])
        except (ValueError, KeyError):
            return None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def pids(self) -> list[int]:
        return procs.pids_of_uid(self.uid)

    def kill(self) -> None:
        if self.child_pid is not None and self.proc.poll() is None:
            try:
                os.kill(self.child_pid, signal.SIGKILL)  # pid-ns init: takes the namespace down
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=5.0)
            except subprocess.TimeoutExpired:
                log.warning(
                    "bwrap %d still running after its sandbox init was killed", self.proc.pid
                )
        procs.kill_uid(self.uid)
        procs.kill_group(self.proc)
        if self.cgroup is not None:
            self.cgroup.remove()


class HostSession:
    """An unsandboxed session: its process group plus every descendant (the server is a child
    subreaper, so double-forked apps stay below it)."""

    def __init__(self, argv: list[str], *, env: dict[str, str], token: str, log_file: Path) -> None:
        """``env`` without ``DESKTOP_TOKEN_FD``: the token's pipe is made here."""
        self.log_file = log_file
        token_fd = token_pipe(token)
        try:
            with open(log_file, "wb") as out:
                self.proc = procs.spawn(
                    argv,
                    env={**env, "DESKTOP_TOKEN_FD": str(token_fd)},
                    pass_fds=(token_fd,),
                    stdout=out,
                    stderr=out,
                    cwd="/",
                )
        finally:
            os.close(token_fd)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def pids(self) -> list[int]:
        return [self.proc.pid, *procs.descendants(self.proc.pid)] if self.alive() else []

    def kill(self) -> None:
        for _ in range(3):  # what was forked while the last round was being killed
            pids = procs.descendants(self.proc.pid) if self.proc.poll() is None else []
            procs.kill_pids(pids)
            if not pids:
                break
        procs.kill_group(self.proc)


def host_tools_missing() -> list[str]:
    """Programs the desktop session needs that are not installed."""
    return [t for t in ("Xvfb", "openbox", "dbus-run-session", "bash") if not shutil.which(t)]
