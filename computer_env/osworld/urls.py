"""URL normalisation for tab and URL checks (like OSWorld's ``compare_urls``)."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit

_DEFAULT_PORTS = {"http": 80, "https": 443}


def normalize_url(url: str) -> str:
    """Lower-case scheme and host, drop ``www.``, default ports, fragment and trailing slash,
    sort the query; a URL without a scheme is taken as ``https://``."""
    url = (url or "").strip()
    if not url:
        return ""
    if "://" not in url:
        url = "https://" + url
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if host.startswith("www."):
        host = host[4:]
    port = parts.port
    netloc = host if port in (None, _DEFAULT_PORTS.get(scheme)) else f"{host}:{port}"
    path = parts.path.rstrip("/")
    query = urlencode(sorted(parse_qsl(parts.query, keep_blank_values=True)))
    return f"{scheme}://{netloc}{path}" + (f"?{query}" if query else "")


def compare_urls(url1: str | None, url2: str | None) -> bool:
    """Do two URLs name the same page (after :func:`normalize_url`)?"""
    if not url1 or not url2:
        return False
    return normalize_url(url1) == normalize_url(url2)


__all__ = ["compare_urls", "normalize_url"]
