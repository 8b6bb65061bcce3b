"""The built-in implementation of OSWorld setup steps (``SetupController._<type>_setup``),
driving the desktop through ``DesktopClient``. Each function takes the context and the step's
parameters; failures raise ordinary exceptions that :func:`run_setup` maps to ``SetupError``."""

from __future__ import annotations

import logging
import os
import shlex
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from computer_env.osworld import chrome
from computer_env.osworld.confine import asset_hosts, check_download_url, confined
from computer_env.osworld.context import TaskContext
from computer_env.osworld.download import cached_fetch, fetch
from computer_env.osworld.urls import compare_urls

logger = logging.getLogger(__name__)

CHROME_NAMES = frozenset({"google-chrome", "google-chrome-stable", "chromium", "chromium-browser",
                          "chrome"})
EXECUTE_UNTIL_TIMEOUT_S = 60.0
"""Upstream retries an ``execute`` with ``until`` forever; here it gives up after this long."""


def _is_asset_url(ctx: TaskContext, url: str) -> bool:
    base = ctx.vars.get("ASSET_URL")
    return bool(base) and url.startswith(base) or url.startswith(
        ("http://127.0.0.1", "http://localhost"))


def download(ctx: TaskContext, files: list[dict[str, str]]) -> None:
    """Fetch each URL on the host (cached by URL unless it is the asset server), upload it."""
    for item in files:
        url, path = item.get("url", ""), item.get("path", "")
        if not url or not path:
            raise ValueError(f"invalid download entry (url={url!r}, path={path!r})")
        check_download_url(url, allow_hosts=asset_hosts(ctx.vars))
        if _is_asset_url(ctx, url):
            with tempfile.TemporaryDirectory() as tmp:
                data = fetch(url, Path(tmp) / "file").read_bytes()
        else:
            data = cached_fetch(ctx.download_cache_dir, url).read_bytes()
        ctx.client.upload_file(path, data)


def upload_file(ctx: TaskContext, files: list[dict[str, str]]) -> None:
    """Upload host files (``local_path``) to guest paths (``path``)."""
    for item in files:
        local = confined(ctx.task_cache_dir, item["local_path"])
        if not local.is_file():
            raise FileNotFoundError(f"upload_file: no local file {local}")
        ctx.client.upload_file(item["path"], local.read_bytes())


def _split_if_needed(command: str | list[str], shell: bool) -> str | list[str]:
    if not shell and isinstance(command, str):
        return shlex.split(command)
    return command


def launch(ctx: TaskContext, command: str | list[str], shell: bool = False) -> None:
    """Start a program in the background."""
    if not command:
        raise ValueError("empty command to launch")
    ctx.client.launch(_split_if_needed(command, shell), shell=shell)


def open_(ctx: TaskContext, path: str) -> None:
    """Open a file with its default application and wait for its window."""
    if not path:
        raise ValueError("empty path to open")
    ctx.client.open_file(path)


def execute(ctx: TaskContext, command: str | list[str], stdout: str = "", stderr: str = "",
            shell: bool = False, until: dict[str, Any] | None = None) -> None:
    """Run a command and wait for it (a non-zero exit is logged, as upstream); with ``until``
    repeat until its returncode/stdout/stderr condition holds."""
    if not command:
        raise ValueError("empty command to execute")
    until = until or {}
    deadline = time.monotonic() + EXECUTE_UNTIL_TIMEOUT_S
    while True:
        res = ctx.client.execute(command, shell=shell)
        if res.returncode not in (0, None):
            logger.info("setup command exited %s: %s", res.returncode, (res.error or "")[:300])
        if stdout:
            (ctx.task_cache_dir / stdout).write_text(res.output or "", encoding="utf-8")
        if stderr:
            (ctx.task_cache_dir / stderr).write_text(res.error or "", encoding="utf-8")
        if not until or (
            ("returncode" in until and res.returncode == until["returncode"])
            or ("stdout" in until and until["stdout"] in (res.output or ""))
            or ("stderr" in until and until["stderr"] in (res.error or ""))
        ):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up after {EXECUTE_UNTIL_TIMEOUT_S:g} s waiting for the "
                               f"command to satisfy {until}")
        time.sleep(0.3)


def sleep(ctx: TaskContext, seconds: float) -> None:
    """Wait (the task asks for it explicitly)."""
    time.sleep(float(seconds))


def _window_call(fn: Callable[..., Any], name: str, **kw: Any) -> None:
    from computer_env.desktop.client import DesktopRequestError

    if not name:
        raise ValueError("empty window name")
    try:
        fn(name, **kw)
    except DesktopRequestError as exc:  # upstream logs and carries on
        logger.warning("window step on %r failed: %s", name, exc)


def activate_window(ctx: TaskContext, window_name: str, strict: bool = False,
                    by_class: bool = False) -> None:
    """Raise and focus a window (a missing window is logged, as upstream)."""
    _window_call(ctx.client.activate_window, window_name, strict=strict, by_class=by_class)


def close_window(ctx: TaskContext, window_name: str, strict: bool = False,
                 by_class: bool = False) -> None:
    """Close a window (a missing window is logged, as upstream)."""
    _window_call(ctx.client.close_window, window_name, strict=strict, by_class=by_class)


def chrome_open_tabs(ctx: TaskContext, urls_to_open: list[str]) -> None:
    """Open URLs in new tabs of the running Chrome, then close the tabs it had before."""
    chrome.wait_for_cdp(ctx.client, timeout=60.0)
    before = chrome.list_tabs(ctx.client)
    for url in urls_to_open:
        chrome.open_tab(ctx.client, url)
    if urls_to_open:
        for tab in before:
            chrome.close_tab(ctx.client, tab["id"])


def chrome_close_tabs(ctx: TaskContext, urls_to_close: list[str]) -> None:
    """Close the first open tab matching each URL."""
    chrome.wait_for_cdp(ctx.client, timeout=60.0)
    for url in urls_to_close:
        for tab in chrome.list_tabs(ctx.client):
            if compare_urls(tab.get("url", ""), url):
                chrome.close_tab(ctx.client, tab["id"])
                break


STEPS: dict[str, Callable[..., None]] = {
    "download": download, "upload_file": upload_file, "launch": launch, "open": open_,
    "execute": execute, "command": execute, "sleep": sleep,
    "activate_window": activate_window, "close_window": close_window,
    "chrome_open_tabs": chrome_open_tabs, "chrome_close_tabs": chrome_close_tabs,
}
"""Step type -> implementation."""


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


__all__ = ["CHROME_NAMES", "STEPS", "apply_proxy"]
