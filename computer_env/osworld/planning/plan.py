"""``plan``: which tasks of a list can run here, and why the others cannot.

Each task falls in exactly one bucket, checked in this order:

- ``unsupported`` (why): a need no desktop here can meet (a Google Drive account), a setup
  step, getter or metric the evaluation code cannot run here, or the internet while the task
  runs when this machine is offline;
- ``missing_app`` (which): programs, Python modules or gsettings schemas the desktop lacks
  (the desktop itself is asked, so the answer follows what is installed);
- ``needs_cache``: runnable once its files are in the download cache (offline, not cached yet);
- ``runnable``: everything it needs is here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from computer_env.osworld.catalog.tasks import Task
from computer_env.osworld.errors import Unsupported
from computer_env.osworld.planning.needs import TaskNeeds, task_needs
from computer_env.osworld.planning.needs_check import DesktopInventory, is_cached
from computer_env.osworld.scoring.in_process import ensure_supported_in_process

RUNNABLE, NEEDS_CACHE, MISSING_APP, UNSUPPORTED = (
    "runnable",
    "needs_cache",
    "missing_app",
    "unsupported",
)
OFFLINE_NETWORK = "the internet while the task runs (offline here)"

EMBEDDED_DIFFERENCES: tuple[str, ...] = (
    "Debian 12 with openbox, not Ubuntu 22.04 with GNOME Shell: other app versions, window "
    "decorations and fonts; no GNOME Shell (its gsettings schemas and top bar are absent)",
    "Chromium stands in for Google Chrome (`google-chrome` runs Chromium with Chrome's profile "
    "folder; Google is its default search engine, as in Chrome)",
    "no VS Code (Debian does not package it): its tasks skip with `needs: code`",
    "sudo has no root to give: a command run with sudo runs as the user, so the files it "
    "creates are owned by the user, and what needs real root (apt, adding users) fails",
    "each desktop is a sandbox on the host, not a VM: no systemd services, no snap packages",
    "a grab of the X server by a client of the desktop is found by the guest server in "
    "seconds, its grabber killed and the case scored 0 (x_grab); on OSWorld's VM server a grab "
    "hangs the harness",
    "a screen resized inside the desktop reaches the model at the task's size (top left of a "
    "black screen), noted on the step; a changed keymap is noted too",
    "OCR metrics (easyocr, which needs torch) are not installed: their tasks skip",
    "pyautogui types '<' as '<' (the pc105 keymap's extra key is remapped; with X's default "
    "keymap, as on a stock VM, pyautogui presses shift + that key and types '>')",
)
"""Where this project's embedded desktop differs from OSWorld's Ubuntu VM (shown by ``plan``
on an embedded desktop and in the README)."""


@dataclass(frozen=True)
class Verdict:
    """Where one task stands: its bucket and the detail (missing apps or the reason)."""

    task: Task
    bucket: str
    detail: str = ""
    uncached: tuple[str, ...] = ()


def classify(
    task: Task,
    needs: TaskNeeds,
    inventory: DesktopInventory,
    *,
    cached: Callable[[str], bool],
    online: bool,
    unsupported: Callable[[Task], str | None] = lambda task: None,
) -> Verdict:
    """The bucket of one task (see the module docstring); ``unsupported(task)`` says why the
    evaluation code cannot run it here (a metric OSWorld's package lacks), or None."""
    if needs.unsupported:
        return Verdict(task, UNSUPPORTED, needs.unsupported[0])
    if why := unsupported(task):
        return Verdict(task, UNSUPPORTED, why)
    if needs.network and not online:
        return Verdict(task, UNSUPPORTED, OFFLINE_NETWORK)
    missing = inventory.missing(needs)
    if missing:
        return Verdict(task, MISSING_APP, ", ".join(sorted(dict.fromkeys(missing))))
    uncached = tuple(u for u in needs.files if not cached(u))
    if uncached and not online:
        return Verdict(task, NEEDS_CACHE, uncached=uncached)
    return Verdict(task, RUNNABLE)


@dataclass
class Counts:
    """The counts of one slice (all tasks, or one domain)."""

    total: int = 0
    runnable: int = 0
    needs_cache: int = 0
    missing_app: Counter[str] = field(default_factory=Counter)
    unsupported: Counter[str] = field(default_factory=Counter)

    def add(self, v: Verdict) -> None:
        self.total += 1
        if v.bucket == RUNNABLE:
            self.runnable += 1
        elif v.bucket == NEEDS_CACHE:
            self.needs_cache += 1
        elif v.bucket == MISSING_APP:
            self.missing_app[v.detail] += 1
        else:
            self.unsupported[v.detail] += 1

    def to_json(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "runnable": self.runnable,
            "needs_cache": self.needs_cache,
            "missing_app": dict(self.missing_app.most_common()),
            "unsupported": dict(self.unsupported.most_common()),
        }


@dataclass
class Plan:
    """Verdicts for a task list and their counts."""

    verdicts: list[Verdict]
    online: bool

    def counts(self) -> tuple[Counts, dict[str, Counts]]:
        overall = Counts()
        by_domain: dict[str, Counts] = {}
        for v in self.verdicts:
            overall.add(v)
            by_domain.setdefault(v.task.domain, Counts()).add(v)
        return overall, by_domain

    def to_json(self) -> dict[str, Any]:
        """``{"total", "runnable", "needs_cache", "missing_app": {app: N},
        "unsupported": {why: N}, "by_domain": {domain: {...same keys}}}``."""
        overall, by_domain = self.counts()
        return {**overall.to_json(), "by_domain": {d: c.to_json() for d, c in by_domain.items()}}

    def table(self) -> str:
        """A per-domain table, then what is missing and why, for a terminal."""
        overall, by_domain = self.counts()
        head = f"{'domain':<22}{'total':>6}{'runnable':>10}{'+cache':>8}{'no app':>8}{'unsupp.':>9}"
        lines = [head, "-" * len(head)]
        for name, c in [*sorted(by_domain.items()), ("TOTAL", overall)]:
            if name == "TOTAL":
                lines.append("-" * len(head))
            lines.append(
                f"{name:<22}{c.total:>6}{c.runnable:>10}{c.needs_cache:>8}"
                f"{sum(c.missing_app.values()):>8}{sum(c.unsupported.values()):>9}"
            )
        lines.append(
            f"runnable once files are cached: {overall.runnable + overall.needs_cache} "
            f"of {overall.total}"
            + (
                ""
                if self.online
                else " (offline here: tasks that need the internet "
                "while they run are counted unsupported)"
            )
        )
        if overall.missing_app:
            lines.append("missing an app:")
            lines += [f"  {n:>4}  {app}" for app, n in overall.missing_app.most_common()]
        if overall.unsupported:
            lines.append("unsupported:")
            lines += [f"  {n:>4}  {why}" for why, n in overall.unsupported.most_common()]
        return "\n".join(lines)


def make_plan(
    tasks: Iterable[Task],
    inventory_for: Callable[[list[TaskNeeds]], DesktopInventory],
    *,
    download_cache: Path,
    online: bool,
    unsupported: Callable[[Task], str | None] = lambda task: None,
) -> Plan:
    """Classify ``tasks``; ``inventory_for(needs)`` asks a desktop about every need at once."""
    tasks = list(tasks)
    needs = [task_needs(t) for t in tasks]
    inventory = inventory_for(needs)
    verdicts = [
        classify(
            t,
            n,
            inventory,
            cached=lambda u: is_cached(download_cache, u),
            online=online,
            unsupported=unsupported,
        )
        for t, n in zip(tasks, needs)
    ]
    return Plan(verdicts, online)


def evaluation_support(embedded: bool) -> Callable[[Task], str | None]:
    """``unsupported(task)`` from the evaluation code's own check, run in this process (the
    ``plan`` command, not a worker): a step, getter or metric that cannot run here
    (``embedded``: on this project's desktops)."""
    from types import SimpleNamespace

    ctx: Any = SimpleNamespace(embedded=embedded)

    def unsupported(task: Task) -> str | None:
        try:
            ensure_supported_in_process(task, ctx)
        except Unsupported as exc:
            return str(exc)
        return None

    return unsupported


__all__ = [
    "Counts",
    "EMBEDDED_DIFFERENCES",
    "MISSING_APP",
    "NEEDS_CACHE",
    "OFFLINE_NETWORK",
    "Plan",
    "RUNNABLE",
    "UNSUPPORTED",
    "Verdict",
    "classify",
    "evaluation_support",
    "make_plan",
]
