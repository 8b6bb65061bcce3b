"""The screen: /screenshot, /screen_size, /window_size, /cursor_position, /platform."""

from __future__ import annotations

import platform

from flask import Blueprint, Response, jsonify, request, send_file

from computer_env.desktop.server.httputil import bad_request, body, error_response, field_str
from computer_env.desktop.server.state import state

bp = Blueprint("screen", __name__)


@bp.get("/screenshot")
def screenshot() -> Response | tuple[Response, int]:
    """The screen with the cursor. ``?format=png|jpeg|webp`` (PNG default), ``&quality=1..100``
    for JPEG/WebP. The ``Server-Timing`` header says how long the grab and the encoding took."""
    from computer_env.desktop.server.screen.screenshot import FORMATS, ScreenUnavailable

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
    png = fmt == "png"
    watch = state().xwatch
    try:
        shot = state().screen.screenshot(
            fmt,  # type: ignore[arg-type]
            None if png else quality,
            unavailable=watch.x_stopped if watch is not None else None,
        )
    except ScreenUnavailable as exc:  # the environment's, in seconds, not at the time-outs
        return error_response(503, str(exc))
    response = Response(shot.data, mimetype=shot.mime)
    # Where the time went, for benchmarks (Server-Timing); clients may ignore it.
    response.headers["Server-Timing"] = (
        f"grab;dur={shot.grab_ms:.2f}, encode;dur={shot.encode_ms:.2f}"
    )
    if watch is not None:  # grabs released by killing a client of the desktop (GET /x_grabs)
        response.headers["X-Grabs"] = str(watch.released())
        response.headers["X-Keymap"] = watch.keymap() or ""  # a digest: changed inside?
    return response


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
    if size is None:  # OSWorld's server fails with a 500 here too (its route returns None)
        return error_response(500, f"no window of class {name!r}")
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


@bp.post("/start_recording")
def start_recording() -> Response | tuple[Response, int]:
    """OSWorld: start an ffmpeg screen recording; 400 when one is running."""
    from computer_env.desktop.server.screen.recording import RecordingError

    st = state()
    if st.recorder.active:
        return error_response(400, "Recording is already in progress.")
    try:
        st.recorder.start(st.screen.size())
    except RecordingError as exc:
        return error_response(500, str(exc))
    return jsonify({"status": "success", "message": "Started recording successfully."})


@bp.post("/end_recording")
def end_recording() -> Response | tuple[Response, int]:
    """OSWorld: stop the recording and answer the MP4; 400 when none is running."""
    from computer_env.desktop.server.screen.recording import RecordingError

    st = state()
    if not st.recorder.active:
        return error_response(400, "No recording in progress to stop.")
    try:
        path = st.recorder.stop()
    except RecordingError as exc:
        return error_response(500, str(exc))
    return send_file(
        path,
        mimetype="video/mp4",
        as_attachment=True,
        download_name="recording.mp4",
        max_age=0,
        conditional=False,
        etag=False,
    )
