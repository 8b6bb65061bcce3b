"""The code tool of the hybrid GUI + code protocol (OS-Helix): a ``run_code`` call runs a Python
or Bash script in the environment (``ComputerEnv.run_code``: inside the desktop, never here), and
its output, cut to a readable size, is the tool's result.

Cutting keeps the head and the tail (errors are usually at the end) and says how much was cut:
the model sees at most ``MODEL_CHARS`` characters, the trajectory records at most
``RECORD_CHARS``.
"""

from __future__ import annotations

from typing import Any

from computer_env.base import ComputerEnv

MODEL_CHARS = 4000
RECORD_CHARS = 64000
DEFAULT_TIMEOUT_S = 60.0


def truncate(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut to about ``limit`` characters (head and tail kept), and whether it was."""
    if len(text) <= limit:
        return text, False
    head = limit * 5 // 8
    tail = limit - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n[... {cut} characters cut ...]\n{text[-tail:]}", True


def run_status(info: dict[str, Any]) -> str:
    """How a code action ended: ``timed out``, ``not run`` or ``exit code N``."""
    if info.get("timed_out"):
        return "timed out"
    if info.get("exit_code") is None:
        return "not run"
    return f"exit code {info['exit_code']}"


def model_output(output: str, info: dict[str, Any]) -> str:
    """The tool result the model is shown: exit status, then the (cut) output."""
    status = run_status(info)
    shown, _ = truncate(output, MODEL_CHARS)
    return (
        f"[{info.get('language', 'code')} {status}]\n{shown}"
        if shown
        else f"[{info.get('language', 'code')} {status}, no output]"
    )


def run_code_action(
    env: ComputerEnv, language: str, code: str, timeout_s: float = DEFAULT_TIMEOUT_S
) -> tuple[str, dict[str, Any]]:
    """Run one code action; (text for the model, the record's ``code`` entry)."""
    try:
        result = env.run_code(language, code, timeout_s=timeout_s)
    except NotImplementedError as exc:
        info: dict[str, Any] = {
            "language": language,
            "exit_code": None,
            "timed_out": False,
            "error": str(exc),
        }
        text = f"[{language} not run: this environment has no code actions]"
        return text, {**info, "code": code, "output": "", "truncated": False}
    info = dict(result.info)
    recorded, cut = truncate(result.output, RECORD_CHARS)
    entry = {
        **info,
        "language": language,
        "code": code,
        "output": recorded,
        "output_chars": len(result.output),
        "truncated": cut or len(result.output) > MODEL_CHARS,
    }
    return model_output(result.output, {**info, "language": language}), entry


__all__ = [
    "DEFAULT_TIMEOUT_S",
    "MODEL_CHARS",
    "RECORD_CHARS",
    "model_output",
    "run_code_action",
    "truncate",
]
