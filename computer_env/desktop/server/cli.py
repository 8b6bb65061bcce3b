"""Command line: parse options, read the token, serve until SIGTERM/SIGINT, then clean up."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import tempfile
import threading
from pathlib import Path
from types import FrameType

logger = logging.getLogger("computer_env.desktop.server")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m computer_env.desktop.server",
        description="OSWorld-compatible guest server for a desktop (token-protected).",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on")
    p.add_argument("--port", type=int, default=5000, help="port to listen on (0 = any free port)")
    p.add_argument(
        "--token-fd",
        type=int,
        help="an inherited pipe holding the bearer token, "
        "read to its end once and closed (the local desktop's way: no file, no "
        "environment)",
    )
    p.add_argument(
        "--token-file",
        type=Path,
        help="file holding the bearer token (else env DESKTOP_SERVER_TOKEN)",
    )
    p.add_argument("--port-file", type=Path, help="write the bound port here once listening")
    p.add_argument(
        "--osworld-only",
        action="store_true",
        help="serve only OSWorld's API (no /capabilities, /actions, /type), like an upstream VM",
    )
    p.add_argument(
        "--no-warm", action="store_true", help="do not pre-start the pyautogui interpreter"
    )
    p.add_argument("--log-level", default=os.environ.get("DESKTOP_SERVER_LOG", "INFO"))
    return p


def _read_token_fd(fd: int) -> str:
    """The token on an inherited pipe: read to its end, then the descriptor is closed (nothing
    this server starts inherits it, and the pipe is empty for anyone else who holds it)."""
    chunks = []
    try:
        while chunk := os.read(fd, 4096):
            chunks.append(chunk)
            if sum(map(len, chunks)) > 65536:
                raise OSError(f"fd {fd}: more than 64 KiB, not a token")
    finally:
        os.close(fd)
    return b"".join(chunks).decode("ascii", "strict").strip()


def _read_token(path: Path | None, fd: int | None = None) -> str | None:
    if fd is not None:
        token = _read_token_fd(fd)
    elif path is not None:
        token = path.read_text().strip()
    else:
        token = os.environ.get("DESKTOP_SERVER_TOKEN", "").strip()
    return token or None


def _nest_pid() -> int | None:
    """The nest's init (env ``DESKTOP_NEST_PID``, set by the init script), read once at start:
    a later change of the environment cannot move the server's commands out of the nest."""
    from computer_env.desktop.server.commands.nest import PID_ENV

    value = os.environ.pop(PID_ENV, "").strip()
    if not value:
        return None
    try:
        return int(value)
    except ValueError:
        raise SystemExit(f"{PID_ENV} must be a pid, not {value!r}") from None


def main(argv: list[str] | None = None) -> int:
    """Serve until told to stop; returns the exit status."""
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        token = _read_token(args.token_file, args.token_fd)
    except (OSError, UnicodeDecodeError) as exc:
        print(f"cannot read the token: {exc}", file=sys.stderr)
        return 2
    if token is None:
        print(
            "no token: pass --token-fd or --token-file, or set DESKTOP_SERVER_TOKEN",
            file=sys.stderr,
        )
        return 2
    os.environ.pop("DESKTOP_SERVER_TOKEN", None)  # children must not see it
    from computer_env.desktop.server.commands.verifier import (
        RunnerGone,
        VerifierRunner,
        make_non_dumpable,
    )

    if not make_non_dumpable():  # the desktop's processes cannot reach into this one
        logger.warning("could not make the server non-dumpable")

    from werkzeug.serving import make_server

    from computer_env.desktop.server.app import create_app
    from computer_env.desktop.server.state import ServerConfig

    nest_pid = _nest_pid()
    if nest_pid is not None:  # apps' pids (_NET_WM_PID, at-spi) are the nest's
        from computer_env.desktop.server.commands.nest import proc_root
        from computer_env.desktop.server.screen import appcpu

        appcpu.PROC = proc_root(nest_pid)
        os.environ["DESKTOP_APP_PROC"] = appcpu.PROC
    config = ServerConfig(
        token=token,
        nest_pid=nest_pid,
        home=Path.home(),
        display=os.environ.get("DISPLAY"),
        extras=not args.osworld_only,
        recording_path=Path(tempfile.gettempdir()) / f"desktop-recording-{os.getpid()}.mp4",
    )
    try:
        (config.home / "Desktop").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        logger.warning("cannot create %s/Desktop: %s", config.home, exc)
    app = create_app(config)
    state = app.extensions["desktop_server"]
    state.procs.become_subreaper()
    if config.extras:  # now, before any agent acts (see verifier)
        try:
            state.verifier = VerifierRunner(config.home, state.own, nest_pid=nest_pid)
        except (OSError, RunnerGone, ValueError) as exc:  # the desktop still serves
            logger.warning("no verifier runner (verifiers fall back to /run_python): %s", exc)
    if config.extras:  # a grab of the X server is found and released (see xwatch.py)
        from computer_env.desktop.server.x11.xwatch import start_watch

        state.xwatch = start_watch(config.display, nested=nest_pid is not None)
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = make_server(args.host, args.port, app, threaded=True)
    port = server.server_port
    if args.port_file is not None:
        tmp = args.port_file.with_suffix(".tmp")
        tmp.write_text(str(port))
        tmp.replace(args.port_file)
    logger.info("listening on http://%s:%d (display %s)", args.host, port, config.display)

    def _stop(signum: int, _frame: FrameType | None) -> None:
        logger.info("signal %d: shutting down", signum)
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    if config.extras and not args.no_warm and config.display:
        threading.Thread(target=state.actions.warm, name="warm-actions", daemon=True).start()
    try:
        server.serve_forever()
    finally:
        server.server_close()
        state.close()
        logger.info("stopped")
    return 0
