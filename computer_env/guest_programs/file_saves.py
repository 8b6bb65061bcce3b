"""Whether the files a task's evaluator reads are saved, run INSIDE the desktop by its system
python3 (standard library only, no project imports) as ``python3 -c SOURCE PATH...``; prints one
JSON object::

    {"files": {PATH: [[size, mtime_ns] | null, lock file's mtime_ns | null]},
     "busy": [a save in progress: a temporary file beside PATH, or "window '*title'"]}

A save in progress: LibreOffice's ``lu*.tmp``, GTK's ``.goutputstream-*``, an editor's
``.NAME.*.tmp``/``.part`` beside the file, or a window whose title starts with ``*`` (unsaved
changes) and names the file.
"""

import fnmatch
import json
import os
import subprocess
import sys
from typing import Any, Dict, List, Optional

__all__ = ["busy_titles", "is_busy_name", "saves_state"]


def is_busy_name(entry: str, name: str) -> bool:
    """Is ``entry``, beside the file ``name``, a save of it (or of its folder) in progress?"""
    return (
        fnmatch.fnmatch(entry, "lu*.tmp")
        or entry.startswith(".goutputstream-")
        or entry.startswith("." + name + ".")
        and entry.endswith((".tmp", ".part"))
    )


def busy_titles(listing: str, paths: List[str]) -> List[str]:
    """The windows of ``wmctrl -l``'s ``listing`` with unsaved changes to one of ``paths``."""
    busy = []
    for line in listing.splitlines():
        parts = line.split(None, 3)
        title = parts[3] if len(parts) == 4 else ""
        for path in paths:
            if title.startswith("*") and os.path.basename(path) in title:
                busy.append("window " + repr(title))
    return busy


def _stat(path: str) -> Optional[List[int]]:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


def saves_state(paths: List[str]) -> Dict[str, Any]:
    """The files' state and the saves in progress (see the module's docstring)."""
    out: Dict[str, Any] = {"files": {}, "busy": []}
    for path in paths:
        d, name = os.path.split(path)
        try:
            lock: Optional[int] = os.stat(os.path.join(d, ".~lock." + name + "#")).st_mtime_ns
        except OSError:
            lock = None
        out["files"][path] = [_stat(path), lock]
        try:
            names = os.listdir(d or ".")
        except OSError:
            names = []
        out["busy"] += [os.path.join(d, n) for n in names if is_busy_name(n, name)]
    try:
        titles = subprocess.run(["wmctrl", "-l"], capture_output=True, text=True, timeout=10).stdout
    except Exception:  # noqa: BLE001 - no window list is no busy window
        titles = ""
    out["busy"] += busy_titles(titles, paths)
    return out


if __name__ == "__main__":
    print(json.dumps(saves_state(sys.argv[1:])))
