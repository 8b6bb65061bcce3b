"""What this harness adds around OSWorld's setup steps: path and URL confinement of a step's
host-side fields, and routing launches and commands through the run's proxy. The steps
themselves are OSWorld's (``SetupController._<type>_setup``, see :mod:`.setup`)."""

from __future__ import annotations

import logging
import os
import shlex
from typing import Any

from computer_env.osworld.confine import asset_hosts, check_download_url, confined
from computer_env.osworld.context import TaskContext
from computer_env.osworld.tasks import SetupStep

logger = logging.getLogger(__name__)

CHROME_NAMES = frozenset({"google-chrome", "google-chrome-stable", "chromium", "chromium-browser",
                          "chrome"})


def is_host_local_url(ctx: TaskContext, url: str) -> bool:
    """Is ``url`` the harness' own asset server (built-in tasks' files, never cached)?"""
    base = ctx.vars.get("ASSET_URL")
    return bool(base) and url.startswith(base)


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
    return {"http_proxy": proxy, "https_proxy": proxy, "HTTP_PROXY": proxy, "HTTPS_PROXY": proxy,
            "no_proxy": "localhost,127.0.0.1,::1", "NO_PROXY": "localhost,127.0.0.1,::1"}


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


__all__ = ["CHROME_NAMES", "apply_proxy", "confine_step", "is_host_local_url"]
