"""Resource limits of one desktop: memory, process count and /tmp size.

:class:`DesktopLimits` holds the values (defaults, or ``HOLO_DESKTOP_MEMORY`` /
``HOLO_DESKTOP_PIDS`` / ``HOLO_DESKTOP_TMP``, or the suite's options). :class:`SessionCgroup`
enforces memory and process count for the local sandbox with a cgroup per session (cgroup v2, or
the v1 ``memory`` and ``pids`` hierarchies); the tmpfs size is bubblewrap's ``--size``. A breach
(the kernel's OOM killer ran, a fork was refused, /tmp is full) is reported by
:func:`cgroup_breaches` / :meth:`SessionCgroup.breaches` so the harness can mark the case
unscored (``ResourceLimitError``) instead of scoring it.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

MiB = 1024 * 1024
CGROUP_ROOT = Path("/sys/fs/cgroup")
ENV_MEMORY, ENV_PIDS, ENV_TMP = "HOLO_DESKTOP_MEMORY", "HOLO_DESKTOP_PIDS", "HOLO_DESKTOP_TMP"
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)


def parse_size(text: str | int, what: str = "size") -> int:
    """``"1.5G"``, ``"512M"``, ``"2GiB"``, ``"1048576"`` -> bytes; ValueError naming ``what``."""
    if isinstance(text, int):
        value = text
    else:
        m = _SIZE.match(str(text))
        if not m:
            raise ValueError(f"{what}: expected a size like 1536M or 2G, got {text!r}")
        scale = {"": 1, "k": 1024, "m": MiB, "g": 1024 * MiB, "t": 1024 * 1024 * MiB}
        value = int(float(m.group(1)) * scale[m.group(2).lower()])
    if value <= 0:
        raise ValueError(f"{what}: must be positive, got {text!r}")
    return value


def format_size(n: int) -> str:
    """Bytes as a short human text (``1.5 GiB``, ``512 MiB``)."""
    if n >= 1024 * MiB:
        return f"{n / (1024 * MiB):g} GiB"
    return f"{n / MiB:g} MiB"


@dataclass(frozen=True)
class DesktopLimits:
    """Per-desktop caps. Defaults leave room for OSWorld's heaviest tasks (Chromium +
    LibreOffice + Thunderbird) while a runaway program cannot hurt the host."""

    memory_bytes: int = 1536 * MiB   # RAM (+swap) of every process of the desktop, tmpfs included
    pids: int = 1024                 # tasks (processes and threads)
    tmp_bytes: int = 512 * MiB       # /tmp (and /dev/shm) tmpfs size

    def __post_init__(self) -> None:
        if self.memory_bytes < 256 * MiB:
            raise ValueError(f"desktop memory limit {format_size(self.memory_bytes)} is too "
                             "small: a desktop needs at least 256 MiB")
        if self.pids < 64:
            raise ValueError(f"desktop process limit {self.pids} is too small: at least 64")
        if self.tmp_bytes < 16 * MiB:
            raise ValueError(f"desktop /tmp size {format_size(self.tmp_bytes)} is too small: "
                             "at least 16 MiB")

    @classmethod
    def from_values(cls, memory: str | int | None = None, pids: str | int | None = None,
                    tmp: str | int | None = None) -> "DesktopLimits":
        """Given values, else the environment (``HOLO_DESKTOP_*``), else the defaults."""
        d = cls()
        memory = memory if memory is not None else os.environ.get(ENV_MEMORY) or d.memory_bytes
        tmp = tmp if tmp is not None else os.environ.get(ENV_TMP) or d.tmp_bytes
        pids = pids if pids is not None else os.environ.get(ENV_PIDS) or d.pids
        try:
            n_pids = int(pids)
        except ValueError:
            raise ValueError(f"desktop process limit: expected a number, got {pids!r}") from None
        return cls(memory_bytes=parse_size(memory, "desktop memory limit"), pids=n_pids,
                   tmp_bytes=parse_size(tmp, "desktop /tmp size"))

    def describe(self) -> str:
        return (f"memory {format_size(self.memory_bytes)}, {self.pids} processes, "
                f"/tmp {format_size(self.tmp_bytes)}")


def _own_cgroup(controller: str) -> str | None:
    """This process's cgroup path in the v1 hierarchy of ``controller`` (``""`` = v2)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _id, controllers, path = line.split(":", 2)
        if controllers.split(",") == [controller] or (controller == "" and _id == "0"):
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


class SessionCgroup:
    """The cgroup(s) of one desktop session, created before the session starts, removed after
    its processes are gone. ``procs_files`` are written with the session's first pid (as root,
    before it drops privileges) so every process of the session is inside."""

    def __init__(self, limits: DesktopLimits, name: str | None = None) -> None:
        self.limits = limits
        self.version = cgroup_version()
        self.dirs: list[Path] = []
        name = name or f"holo-desktop-{os.getpid()}-{secrets.token_hex(3)}"
        if self.version is None:
            raise OSError("no usable cgroup hierarchy (need cgroup v2 with memory and pids, or "
                          "the v1 memory and pids controllers)")
        try:
            if self.version == 2:
                self._create_v2(name)
            else:
                self._create_v1(name)
        except BaseException:
            self.remove()
            raise

    def _create_v2(self, name: str) -> None:
        base = CGROUP_ROOT / "holo-desktops"
        base.mkdir(exist_ok=True)
        for parent in (CGROUP_ROOT, base):
            control = parent / "cgroup.subtree_control"
            enabled = control.read_text().split()
            for c in ("memory", "pids"):
                if c not in enabled:
                    control.write_text(f"+{c}")
        d = base / name
        d.mkdir()
        self.dirs = [d]
        (d / "memory.max").write_text(str(self.limits.memory_bytes))
        if (d / "memory.swap.max").exists():
            (d / "memory.swap.max").write_text("0")
        (d / "pids.max").write_text(str(self.limits.pids))

    def _create_v1(self, name: str) -> None:
        own = (_own_cgroup("memory") or "/").lstrip("/")
        mem = CGROUP_ROOT / "memory" / own / name
        mem.mkdir()
        self.dirs.append(mem)
        (mem / "memory.limit_in_bytes").write_text(str(self.limits.memory_bytes))
        if (mem / "memory.memsw.limit_in_bytes").exists():
            (mem / "memory.memsw.limit_in_bytes").write_text(str(self.limits.memory_bytes))
        own_pids = (_own_cgroup("pids") or "/").lstrip("/")
        pids = CGROUP_ROOT / "pids" / own_pids / name
        pids.mkdir()
        self.dirs.append(pids)
        (pids / "pids.max").write_text(str(self.limits.pids))

    @property
    def procs_files(self) -> tuple[str, ...]:
        return tuple(str(d / "cgroup.procs") for d in self.dirs)

    def breaches(self) -> list[str]:
        """What limit was hit since the session started (empty when none)."""
        return cgroup_breaches(self.dirs, self.limits)

    def remove(self) -> None:
        """Remove the (empty) cgroups; idempotent. Processes must be gone already."""
        for d in self.dirs:
            try:
                d.rmdir()
            except FileNotFoundError:
                pass
            except OSError as exc:
                log.warning("could not remove cgroup %s: %s", d, exc)
        self.dirs = []


def _counter(path: Path, key: str) -> int:
    try:
        for line in path.read_text().splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == key:
                return int(parts[1])
    except (OSError, ValueError):
        pass
    return 0


def cgroup_breaches(dirs: list[Path], limits: DesktopLimits | None) -> list[str]:
    """Limit events recorded in the cgroup directories ``dirs`` (v1 or v2 files)."""
    found: list[str] = []
    for d in dirs:
        mem = format_size(limits.memory_bytes) if limits else "its"
        oom = _counter(d / "memory.events", "oom_kill") or _counter(d / "memory.oom_control",
                                                                      "oom_kill")
        if oom:
            found.append(f"memory limit ({mem}) exceeded: the kernel killed {oom} process(es)")
        refused = _counter(d / "pids.events", "max")
        if refused:
            cap = limits.pids if limits else "its"
            found.append(f"process limit ({cap}) reached: {refused} fork(s) refused")
    return found


def pid_cgroup_dirs(pid: int) -> list[Path]:
    """The memory and pids cgroup directories (as seen from here) of process ``pid``."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return []
    dirs: list[Path] = []
    for line in lines:
        _id, controllers, path = line.split(":", 2)
        names = controllers.split(",")
        if _id == "0" and (CGROUP_ROOT / "cgroup.controllers").exists():
            dirs.append(CGROUP_ROOT / path.lstrip("/"))
        for c in ("memory", "pids"):
            if c in names:
                dirs.append(CGROUP_ROOT / controllers / path.lstrip("/"))
    return [d for d in dirs if d.is_dir()]


def tmp_breach(root: Path, limits: DesktopLimits) -> str | None:
    """``/tmp`` under the sandbox root ``root`` (e.g. ``/proc/PID/root``) is full."""
    try:
        st = os.statvfs(root / "tmp")
    except OSError:
        return None
    free = st.f_bavail * st.f_frsize
    if free < max(MiB, limits.tmp_bytes // 100):
        return f"/tmp size limit ({format_size(limits.tmp_bytes)}) reached"
    return None
