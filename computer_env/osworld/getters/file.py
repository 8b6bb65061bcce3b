"""File getters: ``vm_file``, ``cache_file``, ``cloud_file``, ``content_from_vm_file``,
``list_directory`` (same names, configs and return values as OSWorld's)."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from computer_env.errors import EvaluatorInfraError, NetworkError
from computer_env.osworld.confine import asset_hosts, check_download_url, confined
from computer_env.osworld.download import fetch

logger = logging.getLogger(__name__)


def _paths(config: dict[str, Any]) -> tuple[list[str], list[str], set[int]]:
    if config.get("multi", False):
        paths, dests = list(config["path"]), list(config["dest"])
    else:
        paths, dests = [config["path"]], [config.get("dest") or os.path.basename(config["path"])]
    return paths, dests, set(config.get("gives", [0]))


def _give(values: list[Any]) -> Any:
    return values[0] if len(values) == 1 else values


def get_vm_file(env: Any, config: dict[str, Any]) -> str | None | list[str | None]:
    """Copy guest file(s) into the task cache; the local path(s), None for a missing file."""
    paths, dests, gives = _paths(config)
    out: list[str | None] = []
    for i, (path, dest) in enumerate(zip(paths, dests)):
        local = confined(env.cache_dir, dest)  # before anything is fetched or written
        data = env.controller.get_file(path)
        if data is None:
            logger.info("vm_file: %s does not exist in the desktop", path)
            if i in gives:
                out.append(None)
            continue
        local.parent.mkdir(parents=True, exist_ok=True)
        local.write_bytes(data)
        if i in gives:
            out.append(str(local))
    return _give(out)


def get_cache_file(env: Any, config: dict[str, Any]) -> str:
    """A file already in the task cache (e.g. a setup step's ``stdout``)."""
    path = confined(env.cache_dir, config["path"])
    if not path.exists():
        raise FileNotFoundError(f"cache_file: {path} does not exist")
    return str(path)


def get_cloud_file(env: Any, config: dict[str, Any]) -> str | list[str]:
    """Download URL(s) on the host into the task cache; the local path(s)."""
    paths, dests, gives = _paths(config)
    out: list[str] = []
    ctx_vars = getattr(getattr(env, "ctx", None), "vars", None) or {}
    for i, (url, dest) in enumerate(zip(paths, dests)):
        check_download_url(url, allow_hosts=asset_hosts(ctx_vars))
        local = confined(env.cache_dir, dest)
        if i in gives:
            out.append(str(local))
        if local.exists():
            continue
        try:
            fetch(url, local)
        except NetworkError as exc:
            raise EvaluatorInfraError(f"cloud_file: {exc}") from exc
    return _give(out)


def get_content_from_vm_file(env: Any, config: dict[str, Any]) -> Any:
    """A part of a guest file's content (``file_type`` xlsx, ``file_content`` last_row)."""
    path = get_vm_file(env, {"path": config["path"], "dest": os.path.basename(config["path"])})
    if path is None:
        raise FileNotFoundError(f"content_from_vm_file: {config['path']} does not exist")
    file_type, content = config["file_type"], config["file_content"]
    if file_type == "xlsx" and content == "last_row":
        import pandas as pd

        frame = pd.read_excel(path)
        return frame.iloc[-1].astype(str).tolist()
    raise NotImplementedError(f"content_from_vm_file: {file_type}/{content} not supported")


def get_list_directory(env: Any, config: dict[str, Any]) -> dict | None:
    """The guest's directory tree under ``path``."""
    return env.controller.get_vm_directory_tree(config["path"])
