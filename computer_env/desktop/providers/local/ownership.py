"""Which run owns what local desktops leave on the host, and who may remove it.

A *run* is one benchmark run (a pytest controller and its xdist workers), or any process that
starts local desktops on its own. It has an id and an owner process (pid and start time, on a
host). Every process of the run finds it in its environment (:data:`RUN_ENV`, set by the run's
owner: :func:`start_run`; a process that finds none is a run of its own), and everything its
desktops create on the host carries the run's id: a network slot's lock file records it (with the
desktop's owner pid), a session cgroup's name contains it. ``<STATE_DIR>/runs/<id>`` records the
run's owner process, so that any process on the host can tell whether the run still lives.

What a desktop leaves when its owner process dies without cleaning up (SIGKILL, a killed worker)
is a *leftover*; what a live owner holds is never one. A leftover may be removed by:

- a process of the same run (its next desktop, the run's end): :func:`may_sweep`;
- any process, once the run is provably gone (its owner process ended, on this host) or when it
  carries no run (made before runs were recorded);
- the explicit sweep, ``python -m computer_env.desktop sweep`` (:func:`explicit_sweeper`), which
  also removes the leftovers of runs whose owner lives on another host (a Ray node's), as that
  cannot be checked here.

So a run's end or a desktop's start never removes what another live run's dead worker left: that
run's own end does (and its tests can count on what their sweep finds).
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import socket
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

RUN_ENV = "HOLO_DESKTOP_RUN"
"""The environment variable that carries the run (:meth:`Run.encode`) to every process of it."""
STATE_DIR = Path("/run/computer-env-local")
"""Where the slot locks and the run records live (root only, as the sandbox itself)."""
RUN_ID = re.compile(r"^[0-9a-f]{8,32}$")


def _start_ticks(pid: int) -> int | None:
    """The start time of process ``pid`` in clock ticks since boot (None when it is gone): with
    the pid, the identity of a process on this boot. Read as bytes: a process names itself in
    any bytes, UTF-8 or not, and a name that did not decode must not make it look gone."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def _host() -> str:
    return socket.gethostname()


@dataclass(frozen=True)
class Run:
    """A run: its ``id`` and its owner process (``pid``, ``start`` ticks) on ``host``."""

    id: str
    pid: int
    start: int
    host: str

    def encode(self) -> str:
        return f"{self.id}:{self.pid}:{self.start}:{self.host}"

    @classmethod
    def decode(cls, text: str) -> Run | None:
        """The run :meth:`encode` wrote, or None for anything else."""
        parts = text.strip().split(":", 3)
        if len(parts) != 4 or not RUN_ID.match(parts[0]):
            return None
        try:
            return cls(parts[0], int(parts[1]), int(parts[2]), parts[3])
        except ValueError:
            return None

    def alive(self) -> bool | None:
        """True while the run's owner process runs, False once it is gone, None when that
        cannot be known here (it lives on another host)."""
        if self.host != _host():
            return None
        return _start_ticks(self.pid) == self.start


def new_run(pid: int | None = None) -> Run:
    """A new run owned by process ``pid`` (this one by default), on this host."""
    pid = os.getpid() if pid is None else pid
    start = _start_ticks(pid)
    if start is None:
        raise ValueError(f"no process {pid} to own a run")
    return Run(secrets.token_hex(6), pid, start, _host())


def start_run() -> Run:
    """Begin a new run owned by this process and hand it to every process started from now on
    (the environment); what this process already had is replaced (a child suite is a run of
    its own, not its parent's)."""
    run = new_run()
    os.environ[RUN_ENV] = run.encode()
    return run


def current_run() -> Run:
    """This process's run: the one in its environment, else a new one it owns (handed on to
    its children as well)."""
    run = Run.decode(os.environ.get(RUN_ENV, ""))
    return run if run is not None else start_run()


def _runs_dir() -> Path:
    return STATE_DIR / "runs"


def record(run: Run) -> None:
    """Note ``run``'s owner on this host (once; root only, as what it owns)."""
    path = _runs_dir() / run.id
    if path.exists():
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{run.id}.{os.getpid()}")
        tmp.write_text(run.encode())
        tmp.replace(path)
    except OSError as exc:  # not root: nothing of the sandbox is made either
        log.debug("could not record run %s: %s", run.id, exc)


def lookup(run_id: str) -> Run | None:
    """The recorded owner of run ``run_id`` on this host, or None."""
    if not RUN_ID.match(run_id):
        return None
    try:
        return Run.decode((_runs_dir() / run_id).read_text())
    except OSError:
        return None


@dataclass(frozen=True)
class Sweeper:
    """Who removes leftovers: a process of run ``run`` (None: the explicit sweep, of no run),
    and whether runs on other hosts count as gone (the explicit sweep only)."""

    run: Run | None
    foreign_runs_gone: bool = False


def sweeper() -> Sweeper:
    """This process, removing leftovers as part of its run (a desktop's start, a run's end)."""
    return Sweeper(current_run())


def explicit_sweeper() -> Sweeper:
    """The explicit sweep (``python -m computer_env.desktop sweep``): of no run."""
    return Sweeper(None, foreign_runs_gone=True)


def may_sweep(run_id: str | None, by: Sweeper) -> bool:
    """May ``by`` remove a leftover (its owner process is gone) of run ``run_id``? Yes when it
    is ``by``'s own run, carries no run, or its run is gone (see the module docstring)."""
    if run_id is None or not RUN_ID.match(run_id):
        return True
    if by.run is not None and run_id == by.run.id:
        return True
    owner = lookup(run_id)
    if owner is None:  # never recorded here, or its record swept: nothing says it lives
        return True
    alive = owner.alive()
    if alive is None:
        return by.foreign_runs_gone
    return not alive


def prune_records(by: Sweeper) -> list[str]:
    """Remove the records of runs that ended (on this host; with ``foreign_runs_gone`` also
    those of other hosts); their ids."""
    removed: list[str] = []
    try:
        paths = sorted(_runs_dir().iterdir())
    except OSError:
        return removed
    for path in paths:
        run = lookup(path.name)
        gone = run is None or run.alive() is False or (run.alive() is None and by.foreign_runs_gone)
        if gone and (by.run is None or path.name != by.run.id):
            path.unlink(missing_ok=True)
            removed.append(path.name)
    return removed


__all__ = [
    "RUN_ENV",
    "Run",
    "Sweeper",
    "current_run",
    "explicit_sweeper",
    "lookup",
    "may_sweep",
    "new_run",
    "prune_records",
    "record",
    "start_run",
    "sweeper",
]
