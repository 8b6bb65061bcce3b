"""Chrome getters on the DevTools endpoint queried inside the desktop: ``active_tab_url`` (and
OSWorld's ``active_url_from_accessTree`` name), ``active_tab_info``, ``open_tabs_info``."""

from __future__ import annotations

from typing import Any

from computer_env.errors import EvaluatorInfraError, VMUnreachable
from computer_env.osworld import chrome


def _tabs(env: Any) -> list[dict[str, Any]]:
    try:
        return chrome.list_tabs(env.client)
    except (chrome.CDPUnavailable, VMUnreachable) as exc:
        raise EvaluatorInfraError(f"Chrome state unavailable: {exc}") from exc


def get_active_tab_url(env: Any, config: dict[str, Any]) -> str | None:
    """The URL of the active tab (None when no tab is open)."""
    tabs = _tabs(env)
    return tabs[0].get("url") if tabs else None


get_active_url_from_accessTree = get_active_tab_url


def get_active_tab_info(env: Any, config: dict[str, Any]) -> dict[str, str] | None:
    """``{"title", "url", "content"}`` of the active tab; ``content`` is the page's HTML as
    fetched again inside the desktop (not the live DOM)."""
    tabs = _tabs(env)
    if not tabs:
        return None
    tab = tabs[0]
    url = tab.get("url", "")
    content = ""
    if url.startswith(("http://", "https://")):
        try:
            res = env.client.execute(["curl", "-s", "-L", "--max-time", "20", url], timeout=30)
        except VMUnreachable as exc:
            raise EvaluatorInfraError(f"active_tab_info: desktop unreachable: {exc}") from exc
        content = res.output or ""
    return {"title": tab.get("title", ""), "url": url, "content": content}


def get_open_tabs_info(env: Any, config: dict[str, Any]) -> list[dict[str, str]]:
    """``[{"title", "url"}]`` of every open tab."""
    return [{"title": t.get("title", ""), "url": t.get("url", "")} for t in _tabs(env)]
