"""Saved means saved: before evaluation, pending saves of the files the evaluator reads finish.

An agent may answer a second after ctrl+s, while the app is still writing (LibreOffice writes a
``lu*.tmp`` next to the document, then renames it; GTK editors a ``.goutputstream-*``).
:func:`wait_for_saves` derives the files from the task's evaluator (``vm_file`` and
``content_from_vm_file`` result paths) and waits until, for ``quiet_s`` in a row:

- each file's size and mtime and its LibreOffice lock file's mtime are unchanged (LibreOffice
  rewrites its ``.~lock.<name>#`` when a save starts);
- no save temp file sits beside it, and no window shows it as modified (a ``*`` title);

then checks that each office file (a zip: xlsx, docx, pptx, od*) is complete. A save still
running at the timeout, or a file that cannot be parsed once its saves are over, is an evaluator
infrastructure failure (unscored, rerun), never a 0. A document the agent never saved is the
agent's doing: evaluation goes on.
"""

from __future__ import annotations

import io
import json
import logging
import posixpath
import time
import zipfile
from dataclasses import dataclass, field
from typing import Any

from computer_env import guest_programs
from computer_env.errors import EvaluatorInfraError
from computer_env.osworld.catalog.tasks import Task
from computer_env.osworld.context import substitute
from computer_env.osworld.prepare.readiness import last_json

logger = logging.getLogger(__name__)

ZIP_SUFFIXES = frozenset({".xlsx", ".docx", ".pptx", ".ods", ".odt", ".odp", ".zip"})
_READ_PATH_GETTERS = frozenset({"vm_file", "content_from_vm_file"})


@dataclass
class SaveReport:
    """What :func:`wait_for_saves` saw."""

    files: list[str]
    waited_s: float = 0.0
    polls: int = 0
    last: dict[str, Any] = field(default_factory=dict)


def evaluated_files(task: Task, vars: dict[str, str] | None = None) -> list[str]:
    """Guest paths the evaluator reads (``vm_file``/``content_from_vm_file`` results), in
    order, without placeholders left unresolved."""
    specs = task.evaluator.result
    items = specs if isinstance(specs, list) else [specs]
    paths: list[str] = []
    for spec in items:
        if not isinstance(spec, dict) or spec.get("type") not in _READ_PATH_GETTERS:
            continue
        value = substitute(spec.get("path"), vars or {})
        for p in value if isinstance(value, list) else [value]:
            if isinstance(p, str) and p.startswith("/") and "{" not in p and p not in paths:
                paths.append(posixpath.normpath(p))
    return paths


def _state(client: Any, files: list[str]) -> dict[str, Any]:
    res = client.execute(
        ["/usr/bin/python3", "-c", guest_programs.read("file_saves.py"), *files], timeout=60
    )
    value = last_json(getattr(res, "output", ""))
    if value is not None:
        return value
    err = (getattr(res, "error", "") or "").strip().splitlines()
    return {"error": err[-1] if err else "no answer from the file probe"}


class UnparsableResult(EvaluatorInfraError):
    """A file the evaluator reads does not parse although its saves finished and it is stable:
    no save is in progress, so it is what was left on the desktop (the harness attributes it to
    the agent once the agent acted: ``fixtures.cases.integrity.integrity``)."""


INFLATED_LIMIT = 1 << 30
"""An office document whose parts inflate past this (1 GiB; OSWorld's are megabytes) is what
the agent left, not a document: a decompression bomb would keep the evaluator parsing for
tens of minutes. Its members' sizes are read from the archive's directory (a member whose
header understates its size fails its CRC check instead)."""


def check_zip(data: bytes, path: str, limit: int = INFLATED_LIMIT) -> None:
    """Raise :class:`UnparsableResult` unless ``data`` is a sound zip archive (an office
    document) of at most ``limit`` bytes inflated."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            inflated = sum(member.file_size for member in archive.infolist())
            if inflated > limit:
                raise UnparsableResult(
                    f"{path} cannot be parsed after its saves finished: its parts inflate to "
                    f"{inflated / 2**30:.1f} GiB ({len(data)} bytes on disk), past the "
                    f"{limit / 2**30:g} GiB no document of a task needs"
                )
            bad = archive.testzip()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise UnparsableResult(
            f"{path} cannot be parsed after its saves finished "
            f"({len(data)} bytes): {type(exc).__name__}: {exc}"
        ) from exc
    if bad is not None:
        raise UnparsableResult(
            f"{path} cannot be parsed after its saves finished: member {bad} is corrupt"
        )


def _check_parses(client: Any, path: str) -> None:
    data = client.read_file(path)
    if data is None:
        return  # the file does not exist: the agent's result, scored as such
    check_zip(data, path)


def wait_for_saves(
    client: Any,
    task: Task,
    *,
    vars: dict[str, str] | None = None,
    quiet_s: float = 1.5,
    timeout: float = 60.0,
    poll_s: float = 0.5,
    modified_grace_s: float = 10.0,
) -> SaveReport:
    """Wait until the files the evaluator reads are saved and stable (module docstring)."""
    files = evaluated_files(task, vars)
    report = SaveReport(files)
    if not files:
        return report
    start = time.monotonic()
    previous: Any = None
    modified: list[str] = []
    stable_since = time.monotonic()
    while True:
        report.polls += 1
        state = _state(client, files)
        report.last = state
        if state.get("error"):
            logger.warning("cannot check pending saves: %s", state["error"])
            break
        key = json.dumps(state.get("files"), sort_keys=True)
        busy = [b for b in state.get("busy", []) if not b.startswith("window ")]
        modified = [b for b in state.get("busy", []) if b.startswith("window ")]
        now = time.monotonic()
        changed, previous = key != previous, key
        if changed or busy or (modified and now - start < modified_grace_s):
            stable_since = now
        if now - stable_since >= quiet_s:
            break
        if now - start >= timeout:
            if busy or changed:
                raise EvaluatorInfraError(
                    f"saves did not finish in {timeout:g} s: "
                    f"{', '.join(busy) or 'files still changing'}"
                )
            break
        time.sleep(poll_s)
    if modified:
        logger.info("still modified in the app (never saved by the agent?): %s", modified)
    for path in files:
        if posixpath.splitext(path)[1].lower() in ZIP_SUFFIXES:
            _check_parses(client, path)
    report.waited_s = round(time.monotonic() - start, 3)
    logger.debug("saves settled after %.2f s (%d polls)", report.waited_s, report.polls)
    return report


__all__ = ["SaveReport", "UnparsableResult", "ZIP_SUFFIXES", "evaluated_files", "wait_for_saves"]
