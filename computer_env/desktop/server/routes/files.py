"""Files: /file, /setup/upload, /setup/download_file, /list_directory, /desktop_path,
/wallpaper, /setup/change_wallpaper."""

from __future__ import annotations

import logging
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from flask import Blueprint, Response, jsonify, request, send_file

from computer_env.desktop.server.httputil import (
    bad_request,
    body,
    error_response,
    expand_path,
    field_str,
)
from computer_env.desktop.server.state import state

logger = logging.getLogger(__name__)
bp = Blueprint("files", __name__)


def _as_seen_inside(path: str) -> Path:
    """``path`` as the desktop's programs see it: through the nest's root when there is one
    (the Docker nest has its own copy of ``/usr``, ``/opt``, ``/var``: what root installed or
    wrote there inside is what a getter must read), else as it is."""
    nest_pid = state().config.nest_pid
    absolute = os.path.abspath(path)
    return Path(f"/proc/{nest_pid}/root{absolute}") if nest_pid is not None else Path(absolute)


@bp.post("/file")
def get_file() -> Response | tuple[Response, int]:
    """OSWorld: form ``file_path`` -> the file's bytes, 404 when absent."""
    named = expand_path(field_str(body(), "file_path") or "")
    path = _as_seen_inside(named)
    if path.is_dir():
        raise bad_request(f"field 'file_path' names a directory: {named}")
    if not path.is_file():
        return error_response(404, f"File not found: {named}")
    return send_file(
        path, as_attachment=True, download_name=path.name, max_age=0, conditional=False, etag=False
    )


@bp.post("/setup/upload")
def upload() -> str:
    """OSWorld: multipart ``file_path`` + ``file_data`` -> written (parent folders made)."""
    path_field = request.form.get("file_path")
    if not path_field:
        raise bad_request("form field 'file_path' is required")
    if "file_data" not in request.files:
        raise bad_request("multipart file 'file_data' is required")
    path = Path(expand_path(path_field))
    path.parent.mkdir(parents=True, exist_ok=True)
    request.files["file_data"].save(path)
    return f"File Uploaded: {path.stat().st_size} bytes"


@bp.post("/setup/download_file")
def download_file() -> str | tuple[str, int]:
    """OSWorld: ``{url, path}``; the desktop fetches the URL itself (3 tries)."""
    data = body()
    url = field_str(data, "url") or ""
    path = Path(expand_path(field_str(data, "path") or ""))
    if not url.startswith(("http://", "https://", "file://")):
        raise bad_request("field 'url' must be an http(s) or file URL")
    path.parent.mkdir(parents=True, exist_ok=True)
    error: Exception | None = None
    for attempt in range(3):
        tmp = path.with_name(f".{path.name}.part")
        try:
            with urllib.request.urlopen(url, timeout=300) as response, tmp.open("wb") as out:  # noqa: S310
                while chunk := response.read(1 << 16):
                    out.write(chunk)
            tmp.replace(path)
            return f"File downloaded successfully: {path.stat().st_size} bytes"
        except (OSError, urllib.error.URLError) as exc:
            error = exc
            tmp.unlink(missing_ok=True)
            logger.warning("download %s failed (attempt %d): %s", url, attempt + 1, exc)
    return f"Failed to download {url}. No retries left. Error: {error}", 500


def _tree(directory: str) -> dict[str, Any]:
    node: dict[str, Any] = {
        "type": "directory",
        "name": os.path.basename(directory),
        "children": [],
    }
    try:
        for entry in sorted(os.listdir(directory)):
            full = os.path.join(directory, entry)
            if os.path.isdir(full) and not os.path.islink(full):
                node["children"].append(_tree(full))
            else:
                node["children"].append({"type": "file", "name": entry})
    except OSError as exc:
        return {"error": str(exc)}
    return node


@bp.post("/list_directory")
def list_directory() -> Response:
    """OSWorld: ``{path}`` -> ``{"directory_tree": {type, name, children}}``."""
    named = expand_path(field_str(body(), "path") or "")
    path = str(_as_seen_inside(named))
    if not named or not os.path.isdir(path):
        raise bad_request(f"field 'path' is not a directory: {named}")
    tree = _tree(path)
    if "name" in tree:
        tree["name"] = os.path.basename(os.path.abspath(named))
    return jsonify({"directory_tree": tree})


@bp.post("/desktop_path")
def desktop_path() -> Response | tuple[Response, int]:
    """OSWorld: ``{"desktop_path": "~/Desktop"}`` (absolute), 404 when it does not exist."""
    path = state().config.home / "Desktop"
    if not path.is_dir():
        return error_response(404, f"desktop path not found: {path}")
    return jsonify({"desktop_path": str(path)})


@bp.post("/setup/change_wallpaper")
def change_wallpaper() -> str:
    """OSWorld: ``{path}``. This desktop draws no wallpaper: the path is only remembered, so
    that /wallpaper serves it back."""
    path = Path(expand_path(field_str(body(), "path") or ""))
    if not path.is_file():
        from computer_env.desktop.server.httputil import RequestError

        raise RequestError(404, f"File not found: {path}")
    state().wallpaper = path
    return "Wallpaper recorded (no-op: this desktop draws no wallpaper)"


DEFAULT_WALLPAPER_COLOR = (44, 0, 30)  # Ubuntu's aubergine: OSWorld's VM always has a wallpaper


def _default_wallpaper() -> Path:
    """A plain wallpaper the size of the screen, made once per session (OSWorld's GNOME desktop
    always has one, so /wallpaper never answers 404 there)."""
    from PIL import Image

    st = state()
    path = st.config.home / ".local/share/backgrounds/default.png"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        size = st.screen.size() if st.config.display else (1920, 1080)
        tmp = path.with_suffix(".tmp.png")
        Image.new("RGB", size, DEFAULT_WALLPAPER_COLOR).save(tmp)
        tmp.replace(path)
    return path


@bp.post("/wallpaper")
def wallpaper() -> Response | tuple[Response, int]:
    """OSWorld: the wallpaper image file (the one set by /setup/change_wallpaper, else this
    desktop's default)."""
    path = state().wallpaper
    if path is None or not path.is_file():
        path = _default_wallpaper()
    return send_file(path, mimetype="image/png", max_age=0, conditional=False, etag=False)
