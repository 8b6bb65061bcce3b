"""A task's markers (domain, ``infeasible``, ``proxy``, ``gdrive``, ``network``, ``download``,
``smoke``), read from its JSON and what it needs (:mod:`.needs`).

Apart from :mod:`computer_env.osworld.catalog.tasks` (the format), which :mod:`.needs` reads:
neither imports the other both ways.
"""

from __future__ import annotations

from collections.abc import Collection

from computer_env.osworld.catalog.tasks import Task
from computer_env.osworld.planning.needs import task_needs

_GDRIVE_STEPS = frozenset({"googledrive", "login"})


def needs_network(task: Task) -> bool:
    """Does the task need the internet while it runs (live web pages, a proxy, installers,
    Google Drive)? Files its setup or evaluator downloads are not counted: they can come from
    the download cache (see :func:`needs_download`)."""
    return bool(task_needs(task).network)


def needs_download(task: Task) -> bool:
    """Does the task need files from the web (setup downloads, evaluator ``cloud_file``s),
    which a prefetched download cache can provide?"""
    return bool(task_needs(task).files)


def task_markers(task: Task, *, smoke_ids: Collection[str] = ()) -> list[str]:
    """Marker names for a task: its domain, ``infeasible``, ``proxy``, ``gdrive``, ``network``
    (the internet while it runs), ``download`` (files from the web or the download cache),
    ``smoke`` (when its id or case id is in ``smoke_ids``)."""
    marks: list[str] = [task.domain] if task.domain else []
    if task.evaluator.is_infeasible:
        marks.append("infeasible")
    if task.proxy:
        marks.append("proxy")
    if any(s.type in _GDRIVE_STEPS for s in task.all_steps()):
        marks.append("gdrive")
    if needs_network(task):
        marks.append("network")
    if needs_download(task):
        marks.append("download")
    if task.id in smoke_ids or task.case_id in smoke_ids:
        marks.append("smoke")
    return marks


__all__ = ["needs_download", "needs_network", "task_markers"]
