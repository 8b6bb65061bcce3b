"""Programs that run inside a desktop or a browser, kept as real files: Python (standard
library only, plus what the desktop's system python3 carries, such as python-xlib and
python3-gi), shell scripts and page scripts. The harness reads them with :func:`read` and sends
their text (``python3 -c SOURCE ARGS...``, pyautogui code, a DevTools expression, a file
written into the desktop). They take their parameters as arguments, JSON or the environment,
never by templating their code; where a caller adds a line (a call with its arguments), the
module's docstring says which. The few files written into a desktop with a value fixed at build
time (a launcher's binary, the desktop user's password) name it by a ``__NAME__`` placeholder,
filled by :func:`fill`.

Being files in a package, the Python ones are type-checked and linted like the rest, and their
pure parts are unit-tested on the host (``tests/harness/guest_programs/``).

Nothing here imports the project: each program must run alone in a desktop.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

__all__ = ["fill", "read"]


@cache
def read(name: str) -> str:
    """The text of the guest program ``name`` (a file name in this package, e.g.
    ``"ready_probe.py"``, ``"page_ready.js"``)."""
    if "/" in name or name.startswith((".", "_")):
        raise ValueError(f"not a guest program's name: {name!r}")
    return resources.files(__name__).joinpath(name).read_text(encoding="utf-8")


def fill(name: str, **values: str) -> str:
    """The guest program ``name`` with each ``__KEY__`` placeholder replaced by ``values[KEY]``;
    a placeholder given but absent from the file, or left in it unfilled, is an error."""
    text = read(name)
    for key, value in values.items():
        mark = f"__{key}__"
        if mark not in text:
            raise KeyError(f"{name} has no placeholder {mark}")
        text = text.replace(mark, value)
    left = sorted(set(re.findall(r"__[A-Z][A-Z0-9_]*__", text)))
    if left:
        raise KeyError(f"{name}: placeholders left unfilled: {', '.join(left)}")
    return text
