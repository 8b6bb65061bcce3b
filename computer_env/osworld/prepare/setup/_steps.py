"""What this harness adds around OSWorld's setup steps: path and URL confinement of a step's
host-side fields, routing launches and commands through the run's proxy, and the time a step
may wait for what an earlier step started (:func:`step_wait`). The steps themselves are
OSWorld's (``SetupController._<type>_setup``, see ``_run``)."""

from __future__ import annotations

import logging
import os
import posixpath
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from computer_env.osworld.catalog.tasks import SetupStep
from computer_env.osworld.context import TaskContext
from computer_env.osworld.guards.confine import asset_hosts, check_download_url, confined

logger = logging.getLogger(__name__)

CHROME_NAMES = frozenset(
    {"google-chrome", "google-chrome-stable", "chromium", "chromium-browser", "chrome"}
)


def is_host_local_url(ctx: TaskContext, url: str) -> bool:
    """Is ``url`` the harness' own asset server (built-in tasks' files, never cached)?"""
    base = ctx.vars.get("ASSET_URL")
    return bool(base and url.startswith(base))


def confine_step(ctx: TaskContext, step: SetupStep) -> None:
    """Check a step's host-side fields before OSWorld's controller sees them (in place):
    download URLs must be public (or the asset server); ``upload_file`` sources must lie in the
    task's folder (rewritten to that absolute path)."""
    files = step.parameters.get("files")
    if not isinstance(files, list):
        return
    for item in files:
        if not isinstance(item, dict):
            continue
        if step.type == "download" and item.get("url"):
            check_download_url(item["url"], allow_hosts=asset_hosts(ctx.vars))
        if step.type == "upload_file" and item.get("local_path"):
            item["local_path"] = str(confined(ctx.task_cache_dir, item["local_path"]))


def _split_if_needed(command: str | list[str], shell: bool) -> str | list[str]:
    if not shell and isinstance(command, str):
        return shlex.split(command)
    return command


# ------------------------------------------------------------------------------------ proxy


def _proxy_env(proxy: str) -> dict[str, str]:
    return {
        "http_proxy": proxy,
        "https_proxy": proxy,
        "HTTP_PROXY": proxy,
        "HTTPS_PROXY": proxy,
        "no_proxy": "localhost,127.0.0.1,::1",
        "NO_PROXY": "localhost,127.0.0.1,::1",
    }


def _with_env(command: str | list[str], shell: bool, env: dict[str, str]) -> str | list[str]:
    if shell and isinstance(command, str):
        exports = "; ".join(f"export {k}={shlex.quote(v)}" for k, v in env.items())
        return f"{exports}; {command}"
    if isinstance(command, list) and command:
        return ["env", *(f"{k}={v}" for k, v in env.items()), *command]
    return command


def _add_proxy_flag(command: str | list[str], proxy: str) -> str | list[str]:
    flag = f"--proxy-server={proxy}"
    if isinstance(command, list) and command and os.path.basename(command[0]) in CHROME_NAMES:
        return [*command, flag] if flag not in command else command
    if isinstance(command, str):
        words = command.split()
        if words and os.path.basename(words[0]) in CHROME_NAMES and flag not in words:
            return f"{command} {flag}"
    return command


def apply_proxy(step_type: str, params: dict[str, Any], proxy: str | None) -> dict[str, Any]:
    """Route a step through ``proxy``: ``--proxy-server`` for browsers, proxy variables for
    commands. Returns new parameters (the input is not modified)."""
    if not proxy or step_type not in ("launch", "execute", "command"):
        return params
    params = dict(params)
    shell = bool(params.get("shell", False))
    command = params.get("command")
    if command is None:
        return params
    if step_type == "launch":
        command = _add_proxy_flag(_split_if_needed(command, shell), proxy)
    params["command"] = _with_env(command, shell, _proxy_env(proxy))
    return params


# ---------------------------------------------------------------- waiting on earlier steps

START_GRACE_S = 60.0
"""How long a step may wait for what an earlier step started. OSWorld's controller sends each
step without waiting (``launch`` returns at once, a missed ``activate_window`` is only logged)
and its runner then waits 60 s before the first screenshot, so on its VM a window launched
just before is up by the time the agent looks. Here the step is repeated (or the window
polled) until it is there, at most this long."""

GUI_PROGRAMS: dict[str, tuple[str, ...]] = {
    "google-chrome": ("google-chrome", "chromium"),
    "google-chrome-stable": ("google-chrome", "chromium"),
    "chromium": ("chromium",),
    "chromium-browser": ("chromium",),
    "chrome": ("chromium",),
    "libreoffice": ("libreoffice", "soffice"),
    "soffice": ("libreoffice", "soffice"),
    "localc": ("libreoffice",),
    "lowriter": ("libreoffice",),
    "loimpress": ("libreoffice",),
    "code": ("code",),
    "thunderbird": ("thunderbird",),
    "gimp": ("gimp",),
    "vlc": ("vlc",),
    "nautilus": ("nautilus",),
    "gnome-terminal": ("gnome-terminal",),
    "xterm": ("xterm",),
    "gedit": ("gedit",),
    "mousepad": ("mousepad",),
    "totem": ("totem",),
}
"""Programs a ``launch`` step starts that open a window: the WM_CLASS words of that window."""

BACKGROUND_PROGRAMS = frozenset({"socat", "sleep", "sh", "bash", "python", "python3", "nohup"})
"""Programs a ``launch`` step starts that open no window (nothing to wait for)."""

STARTERS = frozenset({"launch", "open", "execute", "command", "chrome_open_tabs"})
"""Step types that may start something (a program, a window) a later step depends on."""

_SELF_WAITING = {
    "open": "the earlier open step waited for its window",
    "chrome_open_tabs": "the earlier chrome_open_tabs step waited for Chrome",
}


@dataclass(frozen=True)
class StepWait:
    """How a step waits for what an earlier step started: ``retry`` (the step is repeated until
    its window or file is there), ``app`` (input waits until the launched app's window, WM_CLASS
    ``classes``, is mapped), ``earlier`` (the earlier step itself waited)."""

    kind: Literal["retry", "app", "earlier"]
    reason: str
    classes: tuple[str, ...] = ()
    seconds: float = START_GRACE_S


def launched_program(step: Any) -> str:
    """The program a ``launch`` step starts (its file name; ``VAR=value`` words skipped)."""
    cmd = step.parameters.get("command")
    try:
        words = cmd if isinstance(cmd, list) else shlex.split(str(cmd or ""))
    except ValueError:
        words = str(cmd or "").split()
    for word in words:
        head = str(word).split("=", 1)[0]
        if "=" in str(word) and head.isidentifier():
            continue
        return posixpath.basename(str(word))
    return ""


def sends_input(step: Any) -> bool:
    """Does an ``execute``/``command`` step type or click into the desktop (pyautogui,
    xdotool)?"""
    if step.type not in ("execute", "command"):
        return False
    text = str(step.parameters.get("command", ""))
    return "pyautogui" in text or "xdotool" in text


def step_wait(steps: Sequence[Any], index: int) -> StepWait | None:
    """How ``steps[index]`` waits for what an earlier step started; None when it depends on
    nothing started earlier."""
    step, earlier = steps[index], list(steps[:index])
    if not any(e.type in STARTERS for e in earlier):
        return None
    if step.type in ("activate_window", "close_window"):
        return StepWait(
            "retry", f"{step.type} is repeated until its window is there", seconds=START_GRACE_S
        )
    if step.type == "open":
        return StepWait(
            "retry",
            "open is repeated until its file is there (the server then waits for its window)",
            seconds=START_GRACE_S,
        )
    if not sends_input(step):
        return None
    for prior in reversed(earlier):
        if prior.type in _SELF_WAITING:
            return StepWait("earlier", _SELF_WAITING[prior.type])
        if prior.type == "launch" and (program := launched_program(prior)) in GUI_PROGRAMS:
            return StepWait(
                "app",
                f"input waits for {program}'s window",
                classes=GUI_PROGRAMS[program],
                seconds=START_GRACE_S,
            )
    return None


def window_classes(listing: str) -> list[str]:
    """The WM_CLASS column of ``wmctrl -lx`` output, lower-cased."""
    return [
        parts[2].lower() for line in listing.splitlines() if len(parts := line.split(None, 4)) >= 3
    ]


__all__ = [
    "BACKGROUND_PROGRAMS",
    "CHROME_NAMES",
    "GUI_PROGRAMS",
    "START_GRACE_S",
    "STARTERS",
    "StepWait",
    "apply_proxy",
    "confine_step",
    "is_host_local_url",
    "launched_program",
    "sends_input",
    "step_wait",
    "window_classes",
]
