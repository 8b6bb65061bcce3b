"""What a :class:`~.local.LocalSandboxProvider` owns, kept apart from it so that a finalizer
can release it: at garbage collection, at interpreter exit, and on SIGTERM (a handler chained in
front of the one installed before). What a process that died without any of these (SIGKILL, a
killed worker) left behind is removed by :func:`sweep_leftovers`: a run's own, and those of runs
that ended (:mod:`.ownership`), never what another live run's dead desktop left."""

from __future__ import annotations

import os
import shutil
import signal
import threading
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from computer_env.desktop.providers.local import netns, ownership
from computer_env.desktop.providers.local.cgroups import sweep_stale_cgroups
from computer_env.desktop.providers.local.ownership import Sweeper
from computer_env.desktop.providers.local.session import HostSession, SandboxSession


class Resources:
    """Everything a provider owns, kept apart from it so a finalizer can release it."""

    def __init__(self) -> None:
        self.session: SandboxSession | HostSession | None = None
        self.slot: netns.NetSlot | None = None
        self.state_dir: Path | None = None
        self.lock = threading.RLock()

    def stop_session(self) -> None:
        with self.lock:
            if self.session is not None:
                self.session.kill()
                self.session = None

    def release(self) -> None:
        """Idempotent full cleanup."""
        with self.lock:
            self.stop_session()
            if self.slot is not None:
                self.slot.destroy()
                self.slot = None
            if self.state_dir is not None:
                shutil.rmtree(self.state_dir, ignore_errors=True)
                self.state_dir.with_suffix(".log").unlink(missing_ok=True)
                self.state_dir = None


_live: weakref.WeakSet[Finalizer] = weakref.WeakSet()
_handler_lock = threading.Lock()
_handler_installed = False


class Finalizer:
    """Releases a provider's :class:`Resources` once: when the provider is collected, at
    interpreter exit, or on SIGTERM."""

    def __init__(self, owner: object, res: Resources) -> None:
        self.fin = weakref.finalize(owner, res.release)  # also runs at interpreter exit
        _live.add(self)


def _on_sigterm(signum: int, frame: FrameType | None, previous: Any) -> None:
    for fin in list(_live):
        fin.fin()
    if callable(previous):
        previous(signum, frame)
    elif previous == signal.SIG_DFL:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


def install_sigterm_handler() -> None:
    """Chain a cleanup handler in front of the current SIGTERM handler (main thread only)."""
    global _handler_installed
    with _handler_lock:
        if _handler_installed or threading.current_thread() is not threading.main_thread():
            return
        previous = signal.getsignal(signal.SIGTERM)
        if previous == signal.SIG_IGN:
            return
        signal.signal(signal.SIGTERM, lambda s, f: _on_sigterm(s, f, previous))
        _handler_installed = True


@dataclass
class Leftovers:
    """What :func:`sweep_leftovers` removed."""

    slots: list[int] = field(default_factory=list)  # network slots (netns, veth, chain)
    cgroups: list[Path] = field(default_factory=list)  # session cgroup directories
    runs: list[str] = field(default_factory=list)  # records of runs that ended


def sweep_leftovers(by: Sweeper | None = None) -> Leftovers:
    """Remove what local desktops of dead processes left on this host and ``by`` may remove
    (default: this process, as part of its run; :func:`.ownership.may_sweep`): network
    namespaces, veth pairs and firewall chains of slots nobody holds, session cgroups whose
    owner pid is gone, and the records of runs that ended. Needs root (nothing is swept
    without it); a live owner's desktops are never touched."""
    if os.geteuid() != 0:
        return Leftovers()
    by = by or ownership.sweeper()
    return Leftovers(
        slots=netns.sweep_stale(by),
        cgroups=sweep_stale_cgroups(by),
        runs=ownership.prune_records(by),
    )
