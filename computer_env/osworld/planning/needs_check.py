"""Checking a task's needs (:mod:`.needs`) against what is here, before any model time is spent.

- Host side (no desktop): needs no desktop can meet (a Google Drive account), files that are
  neither in the download cache nor downloadable (offline), the internet while the task runs.
- Desktop side: the desktop is asked, through OSWorld's ``/execute``, which of the programs,
  Python modules and gsettings schemas it has (one request for a whole set; answers are
  remembered per desktop, since a reset does not change what is installed).

Each unmet need is one line ``<what>`` for the skip reason ``needs: <what>``.
"""

from __future__ import annotations

import json
import logging
import shlex
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from computer_env.errors import SetupError
from computer_env.osworld.catalog.download import cache_path
from computer_env.osworld.planning.needs import TaskNeeds, program_label

logger = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 110.0
"""How long the desktop may take to answer the inventory request (OSWorld's /execute: 120 s)."""

PROBE_END = "END:needs-probe"
"""The probe's last line: without it, the answer is incomplete."""

WORKS_TIMEOUT_S = 15
"""How long one :data:`WORKS` check may take (``timedatectl`` waits for a D-Bus service that a
sandbox does not have)."""

WORKS: dict[str, str] = {
    "timedatectl": "timedatectl status",
    "pactl": "pulseaudio --start >/dev/null 2>&1; pactl info",
    "sudo": "sudo -n true 2>/dev/null || echo password | sudo -S -p '' true",
}
"""Programs that can be installed and still not work in a desktop (no systemd, no sound
server, no sudo rights): the command that must succeed for the program to count as there."""


class _Executes(Protocol):
    def execute(
        self, command: Any, *, shell: bool = False, timeout: float | None = None
    ) -> Any: ...


@dataclass
class DesktopInventory:
    """What one desktop was found to have (only what was asked so far)."""

    programs: dict[str, bool] = field(default_factory=dict)
    modules: dict[tuple[str, str], bool] = field(default_factory=dict)  # (interpreter, module)
    schemas: set[str] | None = None  # None: not asked yet; empty when gsettings is absent
    broken: set[str] = field(default_factory=set)  # installed, but its WORKS check failed

    def missing(self, needs: TaskNeeds) -> list[str]:
        """The needs of ``needs`` this desktop lacks (everything must have been probed)."""
        out: list[str] = []
        for prog in needs.programs:
            if not self.programs.get(prog, False):
                out.append(
                    program_label(prog)
                    + (
                        " (installed, but it does not work in this desktop)"
                        if prog in self.broken
                        else ""
                    )
                )
        for interp, mod in _module_pairs(needs):
            if self.programs.get(interp, False) and not self.modules.get((interp, mod), False):
                out.append(f"python module {mod} (for {program_label(interp)})")
        if needs.schemas:
            have = self.schemas or set()
            out += [f"gsettings schema {s}" for s in needs.schemas if s not in have]
        return out


def _module_pairs(needs: TaskNeeds) -> list[tuple[str, str]]:
    interps = [p for p in needs.programs if program_label(p).startswith("python")] or ["python3"]
    return [(interps[0], m) for m in needs.python_modules]


_PROBE_PY = (
    "import importlib.util, sys\n"
    "for m in sys.argv[1:]:\n"
    "    try:\n"
    "        ok = importlib.util.find_spec(m) is not None\n"
    "    except Exception:\n"
    "        ok = False\n"
    "    print('M:' + m if ok else 'm:' + m)\n"
)


def probe_script(programs: Iterable[str], modules: Iterable[tuple[str, str]], schemas: bool) -> str:
    """The shell script that asks a desktop for programs (``P:`` there, ``p:`` missing, ``b:``
    installed but failing its :data:`WORKS` check), modules per
    interpreter (``M:``/``m:``) and, when ``schemas``, its gsettings schemas (``S:`` lines)."""
    lines = []
    for prog in programs:
        q = shlex.quote(prog)
        works = WORKS.get(program_label(prog))
        if works:
            lines.append(
                f"if ! command -v -- {q} >/dev/null 2>&1; then echo p:{q}; "
                f"elif timeout {WORKS_TIMEOUT_S} bash -c {shlex.quote(works)} "
                f">/dev/null 2>&1 </dev/null; then echo P:{q}; "
                f"else echo b:{q}; fi"
            )
        else:
            lines.append(
                f"if command -v -- {q} >/dev/null 2>&1; then echo P:{q}; else echo p:{q}; fi"
            )
    by_interp: dict[str, list[str]] = {}
    for interp, mod in modules:
        by_interp.setdefault(interp, []).append(mod)
    for interp, mods in by_interp.items():
        args = " ".join(shlex.quote(m) for m in mods)
        lines.append(
            f"echo I:{shlex.quote(interp)}; "
            f"{shlex.quote(interp)} -c {shlex.quote(_PROBE_PY)} {args} 2>/dev/null"
        )
    if schemas:
        lines.append(
            "command -v gsettings >/dev/null 2>&1 && "
            "gsettings list-schemas 2>/dev/null | sed 's/^/S:/'; echo S-END"
        )
    return "\n".join([*lines, f"echo {PROBE_END}"]) + "\n"


def parse_probe(
    output: str,
    inv: DesktopInventory,
    programs: Iterable[str],
    modules: Iterable[tuple[str, str]],
    schemas: bool,
) -> None:
    """Fold the answer of :func:`probe_script` into ``inv`` (what was asked and not answered
    counts as missing)."""
    interp = ""
    seen_mods: set[tuple[str, str]] = set()
    found_schemas: set[str] = set()
    for line in output.splitlines():
        tag, _, value = line.partition(":")
        if tag in ("P", "p", "b"):
            inv.programs[value] = tag == "P"
            if tag == "b":
                inv.broken.add(value)
        elif tag == "I":
            interp = value
        elif tag in ("M", "m"):
            inv.modules[(interp, value)] = tag == "M"
            seen_mods.add((interp, value))
        elif tag == "S":
            found_schemas.add(value.strip())
    for prog in programs:
        inv.programs.setdefault(prog, False)
    for pair in modules:
        if pair not in seen_mods:
            inv.modules.setdefault(pair, False)
    if schemas:
        inv.schemas = found_schemas


class DesktopNeedsChecker:
    """Asks desktops what they have and remembers the answers per desktop (by its URL)."""

    def __init__(self) -> None:
        self._by_desktop: dict[str, DesktopInventory] = {}
        self._lock = threading.Lock()

    def inventory(self, key: str) -> DesktopInventory:
        with self._lock:
            return self._by_desktop.setdefault(key, DesktopInventory())

    def probe(self, client: _Executes, key: str, needs: Iterable[TaskNeeds]) -> DesktopInventory:
        """Ask the desktop about every need in ``needs`` not asked before; return its inventory."""
        inv = self.inventory(key)
        needs = list(needs)
        programs = [p for n in needs for p in n.programs if p not in inv.programs]
        programs = list(
            dict.fromkeys(
                programs + [p for n in needs for p, _ in _module_pairs(n) if p not in inv.programs]
            )
        )
        modules = list(
            dict.fromkeys(
                pair for n in needs for pair in _module_pairs(n) if pair not in inv.modules
            )
        )
        schemas = inv.schemas is None and any(n.schemas for n in needs)
        if not (programs or modules or schemas):
            return inv
        script = probe_script(programs, modules, schemas)
        result = client.execute(["bash", "-c", script], timeout=PROBE_TIMEOUT_S)
        output = str(getattr(result, "output", "") or "")
        if PROBE_END not in output.splitlines():
            # no (whole) answer: the desktop could not run bash, or it timed out
            raise SetupError(
                f"the desktop did not answer the needs probe: {getattr(result, 'error', '')!s:.300}"
            )
        parse_probe(output, inv, programs, modules, schemas)
        return inv

    def missing(self, client: _Executes, key: str, needs: TaskNeeds) -> list[str]:
        """What the desktop lacks of ``needs`` (probing what was not asked before)."""
        return self.probe(client, key, [needs]).missing(needs)


# ------------------------------------------------------------------------------ host side


class OnlineProbe:
    """Is the internet reachable from here (through ``proxy`` when given)? One GET of
    ``url``, remembered for ``ttl_s`` seconds."""

    def __init__(
        self,
        url: str = "http://example.com/",
        proxy: str | None = None,
        timeout_s: float = 5.0,
        ttl_s: float = 300.0,
    ) -> None:
        self.url, self.proxy, self.timeout_s, self.ttl_s = url, proxy, timeout_s, ttl_s
        self._answer: tuple[float, bool] | None = None
        self._lock = threading.Lock()

    def __call__(self) -> bool:
        with self._lock:
            if self._answer is not None and time.monotonic() - self._answer[0] < self.ttl_s:
                return self._answer[1]
            ok = self._fetch()
            self._answer = (time.monotonic(), ok)
            return ok

    def _fetch(self) -> bool:
        import httpx

        try:
            with httpx.Client(proxy=self.proxy, timeout=self.timeout_s) as http:
                http.get(self.url)
            return True
        except (httpx.HTTPError, OSError) as exc:
            logger.info("offline: %s unreachable (%s)", self.url, exc)
            return False


def is_cached(download_cache: Path, url: str) -> bool:
    """Is ``url`` in the shared download cache?"""
    return cache_path(download_cache, url).is_file()


def host_unmet(needs: TaskNeeds, download_cache: Path, online: Callable[[], bool]) -> list[str]:
    """Needs that no desktop can meet here: unsupported ones, files neither cached nor
    downloadable (offline), the internet during the run (offline)."""
    out = list(needs.unsupported)
    missing = [u for u in needs.files if not is_cached(download_cache, u)]
    if missing and not online():
        more = f" (+{len(missing) - 1} more)" if len(missing) > 1 else ""
        out.append(
            f"cached file {missing[0]}{more} (offline: fill the cache with --prefetch "
            "on a machine with internet)"
        )
    if needs.network and not online():
        out.append(f"the internet while it runs ({needs.network[0]}; offline here)")
    return out


def skip_reason(unmet: list[str]) -> str:
    """The skip reason for unmet needs: ``needs: a; b``."""
    return "needs: " + "; ".join(unmet)


def describe(needs: TaskNeeds) -> str:
    """One JSON line of a task's needs (for logs and results)."""
    return json.dumps(needs.model_dump(), sort_keys=True)


__all__ = [
    "DesktopInventory",
    "DesktopNeedsChecker",
    "OnlineProbe",
    "describe",
    "host_unmet",
    "is_cached",
    "parse_probe",
    "probe_script",
    "skip_reason",
]
