"""The screen: /screenshot, /screen_size, /window_size, /cursor_position, /platform."""

from __future__ import annotations

import platform

from flask import Blueprint, Response, jsonify, request

from computer_env.desktop.server.http import bad_request, body, error_response, field_str
from computer_env.desktop.server.state import state

bp = Blueprint("screen", __name__)


@bp.get("/screenshot")
def screenshot() -> Response:
    """The screen with the cursor. ``?format=png|jpeg|webp`` (PNG default), ``&quality=1..100``
    for JPEG/WebP."""
    from computer_env.desktop.server.screenshot import FORMATS, MIME, encode

    fmt = request.args.get("format", "png").lower()
    if fmt == "jpg":
        fmt = "jpeg"
    if fmt not in FORMATS:
        raise bad_request(f"parameter 'format' must be one of {', '.join(FORMATS)}")
    quality: int | None = None
    if "quality" in request.args:
        try:
            quality = int(request.args["quality"])
        except ValueError:
            raise bad_request("parameter 'quality' must be an integer from 1 to 100") from None
        if not 1 <= quality <= 100:
            raise bad_request("parameter 'quality' must be an integer from 1 to 100")
    image = state().screen.grab()
    data = encode(image, fmt, None if fmt == "png" else quality)  # type: ignore[arg-type]
    return Response(data, mimetype=MIME[fmt])  # type: ignore[index]


@bp.route("/screen_size", methods=["GET", "POST"])
def screen_size() -> Response:
    """OSWorld: ``{width, height}``."""
    width, height = state().screen.size()
    return jsonify({"width": width, "height": height})


@bp.post("/window_size")
def window_size() -> Response | tuple[Response, int]:
    """OSWorld: form ``app_class_name`` -> ``{width, height}`` of that app's window."""
    name = field_str(body(), "app_class_name")
    size = state().x.window_size(name or "")
    if size is None:
        return error_response(404, f"no window of class {name!r}")
    return jsonify({"width": size[0], "height": size[1]})


@bp.get("/cursor_position")
def cursor_position() -> Response:
    """OSWorld: ``[x, y]``."""
    x, y = state().x.pointer()
    return jsonify([x, y])


@bp.get("/platform")
def get_platform() -> str:
    """OSWorld: the OS name as text (``Linux``)."""
    return platform.system()
