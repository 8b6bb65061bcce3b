"""Resource limits of one desktop: memory, process count, CPU time and /tmp size.

:class:`DesktopLimits` holds the values (defaults, or ``HOLO_DESKTOP_MEMORY`` /
``HOLO_DESKTOP_PIDS`` / ``HOLO_DESKTOP_CPUS`` / ``HOLO_DESKTOP_TMP``, or the suite's options).
:class:`~.cgroups.SessionCgroup` enforces memory, process count and CPU for the local sandbox with
a cgroup per session; the Docker provider passes them to the container (``nano_cpus`` & co.); the
tmpfs size is bubblewrap's ``--size``. A breach (the kernel's OOM killer ran, a fork was refused,
/tmp is full) is reported by :func:`cgroup_breaches` so the harness can mark the case unscored
(``ResourceLimitError``) instead of scoring it. A CPU cap is no breach: it only slows the desktop.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

MiB = 1024 * 1024
CGROUP_ROOT = Path("/sys/fs/cgroup")
ENV_MEMORY, ENV_PIDS, ENV_TMP = "HOLO_DESKTOP_MEMORY", "HOLO_DESKTOP_PIDS", "HOLO_DESKTOP_TMP"
ENV_CPUS = "HOLO_DESKTOP_CPUS"
MIN_CPUS = 0.1
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


def host_cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def default_cpus() -> float:
    """Half of this host's CPUs, at least 1 and at most 4: one runaway desktop (a fork bomb, busy
    loops) cannot take more than half the host from the harness, the model endpoint and the
    other desktops, and 4 is what OSWorld's own VM gets (``CPU_CORES=4``)."""
    return max(1.0, min(4.0, host_cpus() / 2))


def parse_cpus(text: str | float, what: str = "desktop CPU limit") -> float:
    """``"1.5"`` -> 1.5 CPUs; ValueError naming ``what`` for a non-number or one below 0.1."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise ValueError(f"{what}: expected a number of CPUs like 1.5, got {text!r}") from None
    if not value >= MIN_CPUS or value == float("inf"):
        raise ValueError(
            f"{what}: {text!r} is too small or not finite: a desktop needs at least {MIN_CPUS} CPU"
        )
    return value


@dataclass(frozen=True)
class DesktopLimits:
    """Per-desktop caps. Defaults leave room for OSWorld's heaviest tasks (Chromium +
    LibreOffice + Thunderbird) while a runaway program cannot hurt the host."""

    memory_bytes: int = 1536 * MiB  # RAM (+swap) of every process of the desktop, tmpfs included
    pids: int = 1024  # tasks (processes and threads)
    tmp_bytes: int = 512 * MiB  # /tmp (and /dev/shm) tmpfs size
    cpus: float = field(default_factory=default_cpus)  # CPU time (1.0 = one CPU's worth)

    def __post_init__(self) -> None:
        if self.memory_bytes < 256 * MiB:
            raise ValueError(
                f"desktop memory limit {format_size(self.memory_bytes)} is too "
                "small: a desktop needs at least 256 MiB"
            )
        if self.pids < 64:
            raise ValueError(f"desktop process limit {self.pids} is too small: at least 64")
        if self.tmp_bytes < 16 * MiB:
            raise ValueError(
                f"desktop /tmp size {format_size(self.tmp_bytes)} is too small: at least 16 MiB"
            )
        parse_cpus(self.cpus)

    @classmethod
    def from_values(
        cls,
        memory: str | int | None = None,
        pids: str | int | None = None,
        tmp: str | int | None = None,
        cpus: str | float | None = None,
    ) -> DesktopLimits:
        """Given values, else the environment (``HOLO_DESKTOP_*``), else the defaults."""
        d = cls()
        memory = memory if memory is not None else os.environ.get(ENV_MEMORY) or d.memory_bytes
        tmp = tmp if tmp is not None else os.environ.get(ENV_TMP) or d.tmp_bytes
        pids = pids if pids is not None else os.environ.get(ENV_PIDS) or d.pids
        cpus = cpus if cpus is not None else os.environ.get(ENV_CPUS) or d.cpus
        try:
            n_pids = int(pids)
        except ValueError:
            raise ValueError(f"desktop process limit: expected a number, got {pids!r}") from None
        return cls(
            memory_bytes=parse_size(memory, "desktop memory limit"),
            pids=n_pids,
            tmp_bytes=parse_size(tmp, "desktop /tmp size"),
            cpus=parse_cpus(cpus),
        )

    def describe(self) -> str:
        return (
            f"memory {format_size(self.memory_bytes)}, {self.pids} processes, "
            f"{self.cpus:g} CPUs, /tmp {format_size(self.tmp_bytes)}"
        )


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
        oom = _counter(d / "memory.events", "oom_kill") or _counter(
            d / "memory.oom_control", "oom_kill"
        )
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
