"""Running commands: /execute, /setup/execute, /setup/launch, /run_python, /run_bash_script."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import tempfile
from typing import Any

from flask import Blueprint, Response, jsonify

from computer_env.desktop.server.httputil import (
    body,
    error_response,
    field_command,
    field_number,
    field_str,
)
from computer_env.desktop.server.state import state

logger = logging.getLogger(__name__)
bp = Blueprint("exec", __name__)

EXECUTE_TIMEOUT = 120.0


@bp.post("/execute")
@bp.post("/setup/execute")
def execute() -> Response | tuple[Response, int]:
    """OSWorld: ``{command, shell}`` -> ``{status, output, error, returncode}`` (120 s)."""
    data = body()
    command, shell = field_command(data)
    timeout = field_number(data, "timeout", EXECUTE_TIMEOUT, low=0.1, high=3600)
    try:
        result = state().procs.run(command, shell=shell, timeout=timeout)
    except subprocess.TimeoutExpired:
        return error_response(500, f"command timed out after {timeout:g} s")
    except OSError as exc:  # command not found, not executable...
        return error_response(500, str(exc))
    return jsonify(
        {
            "status": "success",
            "output": result.stdout,
            "error": result.stderr,
            "returncode": result.returncode,
        }
    )


def _verified(verification: dict[str, Any]) -> bool:
    """OSWorld's checks: ``window_exists`` (a title containing it, any case) and
    ``command_success`` (a shell command exiting 0 within 5 s)."""
    from computer_env.desktop.server.x11.windows import list_windows

    if "window_exists" in verification:
        wanted = str(verification["window_exists"]).lower()
        try:
            if not any(wanted in w.title.lower() for w in list_windows()):
                return False
        except Exception:  # noqa: BLE001 - as OSWorld: a failed check is "not yet"
            return False
    if "command_success" in verification:
        try:
            res = state().procs.run(str(verification["command_success"]), shell=True, timeout=5)
        except (subprocess.TimeoutExpired, OSError):
            return False
        if res.returncode != 0:
            return False
    return True


@bp.post("/execute_with_verification")
@bp.post("/setup/execute_with_verification")
def execute_with_verification() -> Response | tuple[Response, int]:
    """OSWorld: run ``command``, then poll ``verification`` (``window_exists``,
    ``command_success``) every ``check_interval`` s for up to ``max_wait_time`` s; 500 with
    ``status: verification_failed`` when it never holds."""
    import time

    data = body()
    command, shell = field_command(data)
    verification = data.get("verification") or {}
    if not isinstance(verification, dict):
        return error_response(400, "field 'verification' must be an object")
    max_wait = field_number(data, "max_wait_time", 10, low=0, high=3600)
    interval = field_number(data, "check_interval", 1, low=0.05, high=60)
    try:
        result = state().procs.run(command, shell=shell, timeout=EXECUTE_TIMEOUT)
    except subprocess.TimeoutExpired:
        return error_response(500, f"command timed out after {EXECUTE_TIMEOUT:g} s")
    except OSError as exc:
        return error_response(500, str(exc))
    answer = {"output": result.stdout, "error": result.stderr, "returncode": result.returncode}
    if not verification:
        return jsonify({"status": "success", **answer})
    start = time.monotonic()
    while time.monotonic() - start < max_wait:
        if _verified(verification):
            return jsonify(
                {
                    "status": "success",
                    **answer,
                    "verification": "passed",
                    "wait_time": time.monotonic() - start,
                }
            )
        time.sleep(interval)
    return jsonify(
        {"status": "verification_failed", **answer, "verification": "failed", "wait_time": max_wait}
    ), 500


@bp.post("/setup/launch")
def launch() -> str | tuple[Response, int]:
    """OSWorld: start ``command`` in the background; answers a line of text."""
    command, shell = field_command(body())
    try:
        state().procs.popen(command, shell=shell)
    except OSError as exc:
        return error_response(500, str(exc))
    shown = command if shell else " ".join(command)
    return f"{shown} launched successfully"


def _script_file(text: str, suffix: str, prefix: str) -> str:
    """``text`` in a new temporary file (its path). A full ``/tmp`` (the agent may fill it)
    raises ``OSError`` and leaves no partial file behind to take the space that is left."""
    with tempfile.NamedTemporaryFile("w", suffix=suffix, prefix=prefix, delete=False) as f:
        try:
            f.write(text)
            f.flush()
        except OSError:
            os.unlink(f.name)
            raise
        return f.name


@bp.post("/run_python")
def run_python() -> Response | tuple[Response, int]:
    """OSWorld: run ``code`` as a script -> ``{status, message, need_more, output, error,
    return_code}``. Uses this server's Python (pyautogui, PIL available)."""
    data = body()
    code = field_str(data, "code")
    timeout = field_number(data, "timeout", 30.0, low=0.1, high=3600)
    script = _script_file(code or "", ".py", "run_python_")
    try:
        result = state().procs.run([sys.executable, script], timeout=timeout)
    except subprocess.TimeoutExpired:
        return jsonify(
            {
                "status": "error",
                "message": "Execution timeout: Code took too long to execute",
                "error": "TimeoutExpired",
                "need_more": False,
                "output": None,
            }
        ), 500
    finally:
        os.unlink(script)
    output, error = result.stdout, result.stderr
    message = output + (("\n" if output else "") + error if error else "")
    if result.returncode != 0 and not error:
        error = f"Process exited with code {result.returncode}"
        message = message + ("\n" if message else "") + error
    return jsonify(
        {
            "status": "success" if result.returncode == 0 else "error",
            "message": message,
            "need_more": False,
            "output": output,
            "error": error,
            "return_code": result.returncode,
        }
    )


def _bash_answer(status: str, output: str, returncode: int, code: int = 200) -> Any:
    return jsonify(
        {"status": status, "output": output, "error": "", "returncode": returncode}
    ), code


@bp.post("/run_bash_script")
def run_bash_script() -> Any:
    """OSWorld: ``{script, timeout=100, working_dir}`` -> ``{status, output (stdout+stderr),
    error: "", returncode}``."""
    data = body()
    script = data.get("script")
    if not isinstance(script, str) or not script:
        return _bash_answer("error", "field 'script' is required (a string)", -1, 400)
    try:
        timeout = field_number(data, "timeout", 100.0, low=0.1, high=3600)
    except Exception as exc:  # noqa: BLE001 - RequestError, answered in this route's shape
        return _bash_answer("error", str(exc), -1, 400)
    working_dir = data.get("working_dir")
    cwd = None
    if working_dir is not None:
        if not isinstance(working_dir, str):
            return _bash_answer("error", "field 'working_dir' must be a string", -1, 400)
        cwd = os.path.expanduser(working_dir)
        if not os.path.isdir(cwd):
            return _bash_answer("error", f"Working directory does not exist: {cwd}", -1, 400)
    if not script.startswith("#!"):
        script = "#!/bin/bash\n\n" + script
    path = _script_file(script, ".sh", "run_bash_")
    try:
        result = state().procs.run(["/bin/bash", path], timeout=timeout, cwd=cwd, merge_stderr=True)
    except subprocess.TimeoutExpired:
        return _bash_answer(
            "error", f"Script execution timed out after {timeout:g} seconds", -1, 500
        )
    finally:
        os.unlink(path)
    status = "success" if result.returncode == 0 else "error"
    return _bash_answer(status, result.stdout, result.returncode)
