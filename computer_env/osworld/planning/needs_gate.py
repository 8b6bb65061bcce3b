"""Know before running: what a task needs that is not here, as the ``needs: <what>`` reason the
harness skips its case with before any model time is spent (a skip is never rerun).

Two checks, both cheap: before a desktop is taken (Google Drive, files neither cached nor
downloadable offline, the internet while the task runs) and on the reset desktop, before setup
(programs, Python modules, gsettings schemas: the desktop is asked, once per desktop).
"""

from __future__ import annotations

import logging
from functools import cache
from pathlib import Path

from computer_env.osworld.catalog.tasks import Task
from computer_env.osworld.context import TaskContext
from computer_env.osworld.planning.needs import TaskNeeds, task_needs
from computer_env.osworld.planning.needs_check import (
    DesktopNeedsChecker,
    OnlineProbe,
    host_unmet,
    skip_reason,
)

log = logging.getLogger(__name__)

_CHECKER = DesktopNeedsChecker()
"""One per pytest process: what each of its desktops has (asked once per desktop)."""


@cache
def _online_probe(url: str, proxy: str | None) -> OnlineProbe:
    return OnlineProbe(url, proxy)


_NEEDS: dict[tuple[str, str], TaskNeeds] = {}


def needs_of(task: Task) -> TaskNeeds:
    """The task's needs (computed once per task file)."""
    key = (task.case_id, str(task.path))
    if key not in _NEEDS:
        _NEEDS[key] = task_needs(task)
    return _NEEDS[key]


def unmet_before_desktop(
    task: Task, *, probe_url: str, proxy: str | None, downloads: Path
) -> str | None:
    """The ``needs: ...`` reason for needs no desktop here can meet; None when all are met."""
    unmet = host_unmet(needs_of(task), downloads, _online_probe(probe_url, proxy))
    return skip_reason(unmet) if unmet else None


def unmet_on_desktop(task: Task, ctx: TaskContext) -> str | None:
    """The ``needs: ...`` reason for programs, modules or schemas the desktop lacks."""
    missing = _CHECKER.missing(ctx.client, ctx.handle.url, needs_of(task))
    return skip_reason(missing) if missing else None


__all__ = ["needs_of", "unmet_before_desktop", "unmet_on_desktop"]
