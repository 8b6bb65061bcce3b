"""Browser metrics: ``is_expected_active_tab``, ``is_expected_url_pattern_match``,
``is_expected_tabs`` (OSWorld's names and rule formats)."""

from __future__ import annotations

import re
from typing import Any

from computer_env.osworld.urls import compare_urls


def _url_of(info: Any) -> str | None:
    return info.get("url") if isinstance(info, dict) else info


def is_expected_active_tab(active_tab_info: Any, rule: dict[str, Any]) -> float:
    """1 when the active tab's URL is ``rule["url"]`` (``rule["type"] == "url"``)."""
    if not active_tab_info:
        return 0.0
    if rule.get("type") != "url":
        raise NotImplementedError(f"is_expected_active_tab rule type {rule.get('type')!r}")
    return float(compare_urls(_url_of(active_tab_info), rule["url"]))


def is_expected_url_pattern_match(result: Any, rules: dict[str, Any]) -> float:
    """1 when every regex in ``rules["expected"]`` is found in the URL."""
    url = _url_of(result)
    if not url:
        return 0.0
    return float(all(re.search(p, url) for p in rules["expected"]))


def is_expected_tabs(open_tabs: list[dict[str, str]] | None, rule: dict[str, Any]) -> float:
    """1 when the open tabs' URLs are exactly ``rule["urls"]`` in order."""
    if open_tabs is None:
        return 0.0
    if rule.get("type") != "url":
        raise NotImplementedError(f"is_expected_tabs rule type {rule.get('type')!r}")
    urls = [t.get("url", "") for t in open_tabs]
    expected = rule["urls"]
    return float(len(urls) == len(expected) and all(compare_urls(a, b)
                                                    for a, b in zip(urls, expected)))
