"""Atomic file writes: a temp file in the same folder, fsync, rename.

A reader (or a run killed half-way) sees either the old file or the complete new one, never a
partial write. Temp names start with ``.`` and end with ``.tmp`` so that nothing that looks for
``result.json`` ever picks them up. The one implementation for the whole project: the agent's
recorder and the harness's result files both write through it.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = [
    "FILE_MODE",
    "DIR_MODE",
    "ensure_dir",
    "share_modes",
    "atomic_write",
    "atomic_write_bytes",
    "atomic_write_text",
    "atomic_write_json",
]

FILE_MODE = 0o644
"""Every result file: readable by everyone, so a results folder can be served as it is."""
DIR_MODE = 0o755
"""Every result folder (whatever the process umask)."""


def ensure_dir(directory: Path | str) -> Path:
    """Create ``directory`` and missing parents with mode ``DIR_MODE``; return it."""
    folder = Path(directory)
    missing = []
    probe = folder
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    folder.mkdir(parents=True, exist_ok=True)
    for created in missing:
        try:
            os.chmod(created, DIR_MODE)
        except OSError:
            pass
    return folder


def _fsync_dir(directory: Path) -> None:
    """Flush the rename itself to disk (best effort: not every filesystem allows it)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def share_modes(path: Path | str) -> None:
    """Give ``path`` (a file, or a folder and everything in it) the result modes: files
    ``FILE_MODE``, folders ``DIR_MODE``; for files other tools wrote (the HTML report)."""
    root = Path(path)
    items = [root, *root.rglob("*")] if root.is_dir() else [root]
    for item in items:
        try:
            if item.is_symlink():
                continue
            os.chmod(item, DIR_MODE if item.is_dir() else FILE_MODE)
        except OSError:
            continue


def atomic_write_bytes(path: Path | str, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically; create the parent folder if needed."""
    target = Path(path)
    ensure_dir(target.parent)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(target.parent)
    return target


def atomic_write(path: Path | str, data: bytes | str) -> Path:
    """Write ``data`` (bytes, or text as UTF-8) to ``path`` atomically."""
    return atomic_write_bytes(path, data.encode("utf-8") if isinstance(data, str) else data)


def atomic_write_text(path: Path | str, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: Path | str, obj: Any) -> Path:
    """Write ``obj`` as indented JSON (UTF-8, trailing newline) to ``path`` atomically."""
    return atomic_write_text(path, json.dumps(obj, indent=2, ensure_ascii=False) + "\n")
