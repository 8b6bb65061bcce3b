"""Nothing from a task file touches the host outside its cache folder.

Pure checks, called before any code (ours or OSWorld's) sees a task, and again where a path or
URL is used:

- :func:`confined` maps a task-supplied relative path (an evaluator ``dest``, a ``cache_file``
  path, an ``upload_file`` ``local_path``, a task-list domain) into its base folder, refusing
  absolute paths, ``..`` escapes, NUL bytes and symlinks that lead out;
- :func:`check_download_url` refuses URLs the host must not fetch for a task: other schemes than
  http(s), user info, and hosts that are (or resolve to) loopback, private, link-local or other
  non-public addresses, except the hosts explicitly allowed (the built-in asset server);
- :func:`check_task` validates every such field of a task's config and evaluator.
"""

from __future__ import annotations

import ipaddress
import posixpath
import socket
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from computer_env.osworld.guards.addresses import ip_literal, refusal

PLACEHOLDER_PREFIXES: tuple[str, ...] = ("{ASSET_URL}", "{GUEST_ASSET_URL}")
"""URLs of the harness' own asset server, substituted at run time (always allowed)."""


class ConfinementError(ValueError):
    """A task asks for a host path outside its folder or a URL the host must not fetch."""


def confined(base: Path | str, rel: str | Path) -> Path:
    """``base / rel`` resolved, guaranteed to lie inside ``base``; raises
    :class:`ConfinementError` for an absolute path, a ``..`` escape, a NUL byte, an empty name,
    or a symlink under ``base`` that points outside it."""
    text = str(rel)
    if not text or "\x00" in text:
        raise ConfinementError(f"{text!r}: not a usable file name")
    if text.startswith(("/", "\\", "~")) or (len(text) > 1 and text[1] == ":"):
        raise ConfinementError(
            f"{text!r}: an absolute path (only names inside the task's folder are allowed)"
        )
    parts = text.replace("\\", "/").split("/")
    if ".." in parts:
        raise ConfinementError(f"{text!r}: '..' leaves the task's folder")
    root = Path(base).resolve()
    target = (root / posixpath.normpath(text.replace("\\", "/"))).resolve()
    if target != root and not target.is_relative_to(root):
        raise ConfinementError(f"{text!r}: leads outside {root} (through a symlink)")
    if target == root:
        raise ConfinementError(f"{text!r}: names the folder itself, not a file in it")
    return target


def check_name(name: str, what: str) -> str:
    """A single path component (a task-list domain or task id): no separators, no dots only."""
    if not name or "\x00" in name or "/" in name or "\\" in name or name in (".", ".."):
        raise ConfinementError(f"{what} {name!r}: must be a plain name (no '/', '..' or NUL)")
    return name


def _blocked_ip(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return (
        ip.is_loopback
        or ip.is_private
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
        or not ip.is_global
        or refusal(ip) is not None
    )


def _host_port(url: str) -> tuple[str, int | None]:
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError as exc:
        raise ConfinementError(f"{url!r}: bad port") from exc
    return (parts.hostname or "").lower().rstrip("."), port


def check_download_url(
    url: str, *, allow_hosts: Collection[str] = (), resolve: bool = True
) -> None:
    """Refuse a URL the host must not fetch for a task (see the module docstring).

    ``allow_hosts``: ``host`` or ``host:port`` entries always allowed (the built-in tasks' asset
    server on this host). ``resolve``: also resolve the name and refuse private answers (off at
    load time, when no network lookup should happen)."""
    text = str(url)
    if text.startswith(PLACEHOLDER_PREFIXES):
        return
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https"):
        raise ConfinementError(
            f"{text!r}: only http(s) downloads are allowed, not {parts.scheme or 'a bare path'!r}"
        )
    host, port = _host_port(text)
    if not host:
        raise ConfinementError(f"{text!r}: no host")
    if host in allow_hosts or (port is not None and f"{host}:{port}" in allow_hosts):
        return
    if parts.username is not None or parts.password is not None:
        raise ConfinementError(f"{text!r}: credentials in a download URL are not allowed")
    if host == "localhost" or host.endswith((".localhost", ".local", ".internal")):
        raise ConfinementError(f"{text!r}: a host-local address")
    literal = ip_literal(host)  # also 127.1, 2130706433, 0x7f.1 (read as the C resolver does)
    if literal is not None:
        if _blocked_ip(literal):
            raise ConfinementError(f"{text!r}: a host-local or private address")
        return
    if not resolve:
        return
    try:
        infos = socket.getaddrinfo(host, port or 443, proto=socket.IPPROTO_TCP)
    except OSError:
        return  # unresolvable: the download itself fails as a network error
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%")[0])
        if _blocked_ip(address):
            raise ConfinementError(
                f"{text!r}: {host} resolves to a host-local or private address ({address})"
            )


def asset_hosts(vars: dict[str, str]) -> set[str]:
    """``host:port`` of the harness' asset server (``ASSET_URL``/``GUEST_ASSET_URL`` in a task
    context's ``vars``): the one host-local download a built-in task may make."""
    out: set[str] = set()
    for key in ("ASSET_URL", "GUEST_ASSET_URL"):
        if vars.get(key):
            host, port = _host_port(vars[key])
            if host and port:
                out.add(f"{host}:{port}")
    return out


def _strings(value: Any) -> Iterator[tuple[str, str]]:
    """``(index suffix, string)`` for a string or a list of strings."""
    if isinstance(value, str):
        yield "", value
    elif isinstance(value, list):
        for i, item in enumerate(value):
            if isinstance(item, str):
                yield f"[{i}]", item


def _specs(value: Any, where: str) -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(value, dict):
        yield where, value
    elif isinstance(value, list):
        for i, item in enumerate(value):
            if isinstance(item, dict):
                yield f"{where}[{i}]", item


def _check_rel(where: str, value: Any) -> None:
    probe = Path("/nonexistent-task-folder")
    for suffix, text in _strings(value):
        try:
            confined(probe, text)
        except ConfinementError as exc:
            raise ConfinementError(f"{where}{suffix}: {exc}") from None


def _check_url(where: str, value: Any, allow_hosts: Collection[str]) -> None:
    for suffix, text in _strings(value):
        try:
            check_download_url(text, allow_hosts=allow_hosts, resolve=False)
        except ConfinementError as exc:
            raise ConfinementError(f"{where}{suffix}: {exc}") from None


def _check_steps(steps: list[Any], where: str, allow_hosts: Collection[str]) -> None:
    for i, step in enumerate(steps):
        data = step.model_dump() if hasattr(step, "model_dump") else step
        if not isinstance(data, dict):
            continue
        params = data.get("parameters") or {}
        files = params.get("files") if isinstance(params, dict) else None
        for j, item in enumerate(files if isinstance(files, list) else []):
            if not isinstance(item, dict):
                continue
            at = f"{where}[{i}].parameters.files[{j}]"
            if data.get("type") == "download" and "url" in item:
                _check_url(f"{at}.url", item["url"], allow_hosts)
            if data.get("type") == "upload_file" and "local_path" in item:
                _check_rel(f"{at}.local_path", item["local_path"])


def check_task(task: Any, *, allow_hosts: Collection[str] = ()) -> None:
    """Validate every host path and URL field of a task (a ``Task`` or its dict): setup and
    postconfig ``download`` URLs and ``upload_file`` sources, evaluator ``dest`` names,
    ``cache_file`` paths and ``cloud_file`` URLs. Raises :class:`ConfinementError` naming the
    field."""
    data = task.model_dump() if hasattr(task, "model_dump") else dict(task)
    _check_steps(list(data.get("config") or []), "config", allow_hosts)
    evaluator = data.get("evaluator") or {}
    _check_steps(list(evaluator.get("postconfig") or []), "evaluator.postconfig", allow_hosts)
    for role in ("result", "expected"):
        for where, spec in _specs(evaluator.get(role), f"evaluator.{role}"):
            if "dest" in spec:
                _check_rel(f"{where}.dest", spec["dest"])
            if spec.get("type") == "cache_file" and "path" in spec:
                _check_rel(f"{where}.path", spec["path"])
            if spec.get("type") == "cloud_file" and "path" in spec:
                _check_url(f"{where}.path", spec["path"], allow_hosts)


__all__ = [
    "ConfinementError",
    "PLACEHOLDER_PREFIXES",
    "asset_hosts",
    "check_download_url",
    "check_name",
    "check_task",
    "confined",
]
