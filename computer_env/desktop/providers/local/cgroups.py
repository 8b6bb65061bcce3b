"""The cgroup(s) of one local desktop session, and the sweep of those a dead run left behind.

:class:`SessionCgroup` caps memory, process count and CPU time of every process of one session:
cgroup v2 (``holo-desktops/<name>``: ``memory.max``, ``pids.max``, ``cpu.max``) or the v1
``memory``, ``pids`` and ``cpu`` hierarchies (``cpu.cfs_quota_us``/``cpu.cfs_period_us``), each
below this process's own cgroup. Every directory is named
``holo-desktop-<owner pid>-<run id>-<hex>`` (:mod:`.ownership`), so :func:`sweep_stale_cgroups`
can tell those whose owner died (SIGKILL, a killed worker) and remove those it may: its own run's
and those of runs that ended, at the next start of a local desktop and when a run ends (names
without a run id, from before runs were recorded, count as a run that ended).
"""

from __future__ import annotations

import errno
import logging
import os
import re
import secrets
import signal
import time
from pathlib import Path

from computer_env.desktop.providers.limits import CGROUP_ROOT, DesktopLimits, cgroup_breaches
from computer_env.desktop.providers.local import ownership
from computer_env.desktop.providers.local.ownership import Sweeper
from computer_env.procs import running_since

log = logging.getLogger(__name__)

NAME_PREFIX = "holo-desktop-"
V2_BASE = "holo-desktops"
V1_CONTROLLERS = ("memory", "pids", "cpu")
CFS_PERIOD_US = 100_000
_NAME = re.compile(rf"^{NAME_PREFIX}(\d+)-(?:([0-9a-f]{{8,32}})-)?[0-9a-f]+$")
_warned_no_cpu = False


def own_cgroup(controller: str) -> str | None:
    """This process's cgroup path in the v1 hierarchy of ``controller`` (``""``: v2)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _id, controllers, path = line.split(":", 2)
        if (controller and controller in controllers.split(",")) or (
            controller == "" and _id == "0"
        ):
            return path
    return None


def cgroup_version() -> int | None:
    """2 (unified with memory and pids), 1 (v1 memory and pids hierarchies) or None."""
    controllers = CGROUP_ROOT / "cgroup.controllers"
    if controllers.exists():
        have = controllers.read_text().split()
        return 2 if {"memory", "pids"} <= set(have) else None
    if (CGROUP_ROOT / "memory").is_dir() and (CGROUP_ROOT / "pids").is_dir():
        return 1
    return None


def _warn_no_cpu(why: str) -> None:
    global _warned_no_cpu
    if not _warned_no_cpu:
        log.warning("desktop limits: CPU time is NOT capped (%s)", why)
        _warned_no_cpu = True


class SessionCgroup:
    """The cgroup(s) of one desktop session, created before the session starts, removed after
    its processes are gone. ``procs_files`` are written with the session's first pid (as root,
    before it drops privileges) so every process of the session is inside."""

    def __init__(self, limits: DesktopLimits, name: str | None = None) -> None:
        self.limits = limits
        self.version = cgroup_version()
        self.dirs: list[Path] = []
        self.cpu_dir: Path | None = None  # where cpu.max / cpu.cfs_quota_us is in force
        if name is None:
            run = ownership.current_run()
            ownership.record(run)
            name = f"{NAME_PREFIX}{os.getpid()}-{run.id}-{secrets.token_hex(3)}"
        if self.version is None:
            raise OSError(
                "no usable cgroup hierarchy (need cgroup v2 with memory and pids, or "
                "the v1 memory and pids controllers)"
            )
        try:
            if self.version == 2:
                self._create_v2(name)
            else:
                self._create_v1(name)
        except BaseException:
            self.remove()
            raise

    def _create_v2(self, name: str) -> None:
        base = CGROUP_ROOT / V2_BASE
        base.mkdir(exist_ok=True)
        available = set((CGROUP_ROOT / "cgroup.controllers").read_text().split())
        cpu = "cpu" in available
        for parent in (CGROUP_ROOT, base):
            control = parent / "cgroup.subtree_control"
            enabled = control.read_text().split()
            for c in ("memory", "pids", "cpu"):
                if c in enabled or (c == "cpu" and not cpu):
                    continue
                try:
                    control.write_text(f"+{c}")
                except OSError as exc:
                    if c != "cpu":
                        raise
                    cpu = False  # e.g. refused while real-time threads run: memory/pids stay
                    _warn_no_cpu(f"enabling the cpu controller in {parent}: {exc}")
        d = base / name
        d.mkdir()
        self.dirs = [d]
        (d / "memory.max").write_text(str(self.limits.memory_bytes))
        if (d / "memory.swap.max").exists():
            (d / "memory.swap.max").write_text("0")
        (d / "pids.max").write_text(str(self.limits.pids))
        if not cpu or not (d / "cpu.max").exists():
            _warn_no_cpu("the cgroup v2 cpu controller is not available")
            return
        (d / "cpu.max").write_text(f"{self._quota_us()} {CFS_PERIOD_US}")
        self.cpu_dir = d

    def _create_v1(self, name: str) -> None:
        for controller in V1_CONTROLLERS:
            hierarchy = CGROUP_ROOT / controller
            if controller == "cpu" and not hierarchy.is_dir():
                _warn_no_cpu("no v1 cpu hierarchy")
                continue
            d = hierarchy / (own_cgroup(controller) or "/").lstrip("/") / name
            d.mkdir()
            self.dirs.append(d)
            if controller == "memory":
                (d / "memory.limit_in_bytes").write_text(str(self.limits.memory_bytes))
                if (d / "memory.memsw.limit_in_bytes").exists():
                    (d / "memory.memsw.limit_in_bytes").write_text(str(self.limits.memory_bytes))
            elif controller == "pids":
                (d / "pids.max").write_text(str(self.limits.pids))
            else:
                try:
                    (d / "cpu.cfs_period_us").write_text(str(CFS_PERIOD_US))
                    (d / "cpu.cfs_quota_us").write_text(str(self._quota_us()))
                    self.cpu_dir = d
                except OSError as exc:  # e.g. the parent's quota is smaller (EINVAL)
                    _warn_no_cpu(f"{d}: {exc}")

    def _quota_us(self) -> int:
        return max(1000, round(self.limits.cpus * CFS_PERIOD_US))

    @property
    def procs_files(self) -> tuple[str, ...]:
        return tuple(str(d / "cgroup.procs") for d in self.dirs)

    def breaches(self) -> list[str]:
        """What limit was hit since the session started (empty when none)."""
        return cgroup_breaches(self.dirs, self.limits)

    def remove(self, timeout: float = 5.0) -> None:
        """Remove the cgroups; idempotent. What is still inside (processes being killed) is
        waited for, at most ``timeout`` s, and killed."""
        for d in self.dirs:
            remove_cgroup(d, timeout=timeout)
        self.dirs = []
        self.cpu_dir = None


def _procs(d: Path) -> list[int]:
    try:
        return [int(p) for p in (d / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def remove_cgroup(d: Path, timeout: float = 5.0) -> bool:
    """``rmdir`` cgroup ``d``, SIGKILLing what is left inside and retrying while it is busy
    (a killed process leaves its cgroup only once it has exited); True once ``d`` is gone."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            d.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError as exc:
            if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                log.warning("could not remove cgroup %s: %s", d, exc)
                return False
        for pid in _procs(d):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.01)


def _owned(max_depth: int = 6) -> list[tuple[Path, int, str | None]]:
    """Every session cgroup directory of this host, with its owner pid and run id (None: a
    name from before runs were recorded): below ``holo-desktops`` (v2), or anywhere in the
    first ``max_depth`` levels of the v1 hierarchies (each process creates them below its own
    cgroup, which differs between processes)."""
    version = cgroup_version()
    if version == 2:
        roots = [CGROUP_ROOT / V2_BASE]
    elif version == 1:
        roots = [CGROUP_ROOT / c for c in V1_CONTROLLERS]
    else:
        return []
    found: list[tuple[Path, int, str | None]] = []
    level = [d for d in roots if d.is_dir()]
    for _depth in range(max_depth):
        below: list[Path] = []
        for parent in level:
            try:
                entries = sorted(e for e in parent.iterdir() if e.is_dir())
            except OSError:
                continue
            for entry in entries:
                m = _NAME.match(entry.name)
                if m:
                    found.append((entry, int(m.group(1)), m.group(2)))
                else:
                    below.append(entry)
        level = below
    return found


def session_cgroups(owner: int | None = None) -> list[Path]:
    """This host's session cgroup directories (of owner pid ``owner`` only, if given)."""
    return [d for d, pid, _run in _owned() if owner is None or pid == owner]


def stale_cgroups(by: Sweeper | None = None) -> list[Path]:
    """Session cgroups whose owner process (the pid in the name) is gone or younger than the
    cgroup (its pid was reused) and that ``by`` (default: this process, as part of its run) may
    remove (:func:`.ownership.may_sweep`)."""
    by = by or ownership.sweeper()
    found: list[Path] = []
    for entry, pid, run_id in _owned():
        try:
            created = entry.stat().st_mtime
        except OSError:
            continue
        if not running_since(pid, created) and ownership.may_sweep(run_id, by):
            found.append(entry)
    return found


def sweep_stale_cgroups(by: Sweeper | None = None) -> list[Path]:
    """Remove the session cgroups of dead owners that ``by`` may remove (see
    :func:`stale_cgroups`); those removed."""
    removed = [d for d in stale_cgroups(by) if remove_cgroup(d)]
    if removed:
        log.info(
            "swept %d cgroup(s) of dead desktops: %s",
            len(removed),
            ", ".join(sorted({d.name for d in removed})),
        )
    return removed
