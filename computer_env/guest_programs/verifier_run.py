"""A synthetic task's verifier, run INSIDE the desktop by the guest server's ``run_python``
(standard library only, no project imports): the verifier's code is compiled and its
``verify()`` called in a namespace of its own, with the user's site folders off ``sys.path`` and
no ``PYTHON*``/``LD_*`` variables, ``PATH`` set to a safe one.

The harness sends this file's text followed by one line, ``run(CODE, MARKER, PATH)`` (Python
string literals), and reads the line that starts with MARKER: MARKER then one JSON object,
``{"result": bool|number}``, ``{"bad": repr}`` (verify() returned something else) or
``{"error": traceback}``.
"""

import json
import os
import sys
import traceback
from typing import Any, Dict

__all__ = ["answer", "run"]


def answer(result: Any) -> Dict[str, Any]:
    """What a verifier's return value ``result`` reports."""
    if isinstance(result, (bool, int, float)):
        return {"result": result}
    return {"bad": repr(result)[:300]}


def run(code: str, marker: str, path: str) -> None:
    """Run the verifier ``code`` and print its answer after ``marker`` (see the docstring)."""
    sys.path[:] = [p for p in sys.path if p and not p.startswith(os.path.expanduser("~"))]
    for key in list(os.environ):
        if key.startswith(("PYTHON", "LD_")):
            del os.environ[key]
    os.environ["PATH"] = path
    namespace: Dict[str, Any] = {"__name__": "verifier"}
    try:
        exec(compile(code, "verifier_code", "exec"), namespace)  # noqa: S102 - the task's verifier
        out = answer(namespace["verify"]())
    except BaseException:  # noqa: BLE001 - whatever the verifier raised is its answer
        out = {"error": traceback.format_exc()[-1500:]}
    print("\n" + marker + json.dumps(out))
