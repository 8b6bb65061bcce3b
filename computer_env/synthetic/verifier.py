"""Running a synthesized task's verifier inside the desktop (the desktop server's /run_python,
never on the host), with a time limit. A verifier that crashes, returns something that is not a
score, or runs out of time raises :class:`VerifierError` (unscored, category ``verifier``)."""

from __future__ import annotations

import json

from computer_env.desktop.client import DesktopClient, DesktopRequestError
from computer_env.errors import InfraError

MARKER = "@@HOLO_VERIFIER@@"

_WRAPPER = '''\
import json as _json, sys as _sys, traceback as _tb
_ns = {"__name__": "verifier"}
try:
    exec(compile(%(code)r, "verifier_code", "exec"), _ns)
    _r = _ns["verify"]()
    _out = {"result": _r} if isinstance(_r, (bool, int, float)) else {"bad": repr(_r)[:300]}
except BaseException:
    _out = {"error": _tb.format_exc()[-1500:]}
print("\\n%(marker)s" + _json.dumps(_out))
'''


class VerifierError(InfraError):
    """The verifier could not give a score (crash, bad return value, timeout): the case is
    unscored, never 0. Permanent: rerunning the same code cannot help."""

    category = "verifier"
    permanent = True


def run_verifier(client: DesktopClient, code: str, *, timeout_s: float) -> float:
    """The verifier's score in [0, 1] for the desktop's current state."""
    script = _WRAPPER % {"code": code, "marker": MARKER}
    try:
        answer = client.run_python(script, timeout=timeout_s)
    except DesktopRequestError as exc:
        low = exc.message.lower()
        if "timeout" in low or "timed out" in low or "too long" in low:
            raise VerifierError(f"the verifier ran out of time ({timeout_s:g} s)") from exc
        raise
    output = str(answer.get("output") or "")
    lines = [ln for ln in output.splitlines() if ln.startswith(MARKER)]
    if not lines:
        err = str(answer.get("error") or answer.get("message") or "")[-300:]
        raise VerifierError(f"the verifier printed no result (exit "
                            f"{answer.get('return_code')}): {err.strip()}")
    data = json.loads(lines[-1][len(MARKER):])
    if "error" in data:
        last = data["error"].strip().splitlines()[-1] if data["error"].strip() else "?"
        raise VerifierError(f"the verifier crashed: {last}", detail=data["error"])
    if "bad" in data:
        raise VerifierError(f"verify() returned {data['bad']}, not True/False or a score")
    value = float(data["result"])
    if not 0.0 <= value <= 1.0:
        raise VerifierError(f"verify() returned {value:g}, outside [0, 1]")
    return value
