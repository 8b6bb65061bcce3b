"""A read-only static file server for the built-in tasks' input files and web pages.

Setup ``download`` steps fetch ``{ASSET_URL}/<file>`` from the host, and browsers inside the
desktop open ``{GUEST_ASSET_URL}/<page>``; both point at one :class:`AssetServer`. Files the
evaluator compares against (gold files) are served only over this host's loopback, never to a
desktop: an agent must not be able to read the expected answer. A connection over the loopback
is accepted only from a socket this host user owns (:func:`computer_env.peers.same_user`):
another user of the host gets no answer, gold file or not.

    python -m computer_env.osworld.catalog.assets --port 8765
"""

from __future__ import annotations

import argparse
import json
import logging
import mimetypes
import posixpath
import threading
import time
from collections.abc import Collection
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import unquote, urlsplit

from computer_env.osworld.builtin import BUILTIN_ROOT
from computer_env.peers import is_loopback, same_user

logger = logging.getLogger(__name__)

_EXTRA_TYPES: dict[str, str] = {
    ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    ".ods": "application/vnd.oasis.opendocument.spreadsheet",
    ".odt": "application/vnd.oasis.opendocument.text",
    ".csv": "text/csv",
    ".md": "text/markdown",
    ".json": "application/json",
    ".js": "text/javascript",
    ".log": "text/plain",
    ".py": "text/x-python",
    ".sh": "text/x-shellscript",
}
_TEXT_PREFIXES = ("text/",)
_TEXT_TYPES = {"application/json", "text/javascript"}


def content_type(path: Path) -> str:
    """The Content-Type for a file (text types get ``charset=utf-8``)."""
    ctype = _EXTRA_TYPES.get(path.suffix.lower()) or mimetypes.guess_type(path.name)[0]
    ctype = ctype or "application/octet-stream"
    if ctype.startswith(_TEXT_PREFIXES) or ctype in _TEXT_TYPES:
        return f"{ctype}; charset=utf-8"
    return ctype


@dataclass(frozen=True)
class RequestRecord:
    """One request the server answered."""

    method: str
    path: str
    status: int
    time: float


def resolve(root: Path, url_path: str) -> Path | None:
    """Map a URL path to a file under ``root``; None for anything outside it or not a file."""
    path = unquote(urlsplit(url_path).path)
    if "\x00" in path:
        return None
    parts = [p for p in posixpath.normpath("/" + path).split("/") if p]
    if any(p in (".", "..") or p.startswith(".") for p in parts):
        return None
    candidate = root.joinpath(*parts) if parts else root
    if candidate.is_dir():
        candidate = candidate / "index.html"
    try:
        real = candidate.resolve(strict=True)
    except (FileNotFoundError, RuntimeError, OSError):
        return None
    if not real.is_relative_to(root.resolve()) or not real.is_file():
        return None
    return real


def private_assets(root: Path = BUILTIN_ROOT) -> frozenset[str]:
    """Asset paths (relative, ``/``-separated) that only the evaluator may fetch: every
    ``{ASSET_URL}/...`` (a host-side download) named in a task's ``evaluator`` (gold files,
    expected outputs) and in no task's setup."""
    found: dict[str, set[str]] = {"evaluator": set(), "config": set()}

    def walk(value: object, into: set[str]) -> None:
        if isinstance(value, str) and value.startswith("{ASSET_URL}/"):
            into.add(posixpath.normpath(urlsplit(value.split("}/", 1)[1]).path).lstrip("/"))
        elif isinstance(value, dict):
            for item in value.values():
                walk(item, into)
        elif isinstance(value, list):
            for item in value:
                walk(item, into)

    for path in sorted((root / "examples").glob("*/*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            evaluator = data.get("evaluator") or {}
            walk(
                [evaluator.get(k) for k in ("result", "expected", "postconfig")], found["evaluator"]
            )
            walk(data.get("config"), found["config"])
        except (OSError, ValueError, AttributeError):
            continue
    return frozenset(found["evaluator"] - found["config"])


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    server_version = "AssetServer/1.0"
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 (stdlib name)
        self._serve(body=True)

    def do_HEAD(self) -> None:  # noqa: N802
        self._serve(body=False)

    def _refuse(self) -> None:
        self.send_response(HTTPStatus.METHOD_NOT_ALLOWED)
        self.send_header("Allow", "GET, HEAD")
        self.send_header("Content-Length", "0")
        self.end_headers()
        self.server.owner._record(self.command, self.path, HTTPStatus.METHOD_NOT_ALLOWED)

    do_POST = do_PUT = do_DELETE = do_PATCH = _refuse  # noqa: N815

    def _host_side(self) -> bool:
        """The request came over this host's loopback (the harness), not from a desktop."""
        return is_loopback(str(self.client_address[0])) and is_loopback(
            str(self.connection.getsockname()[0])
        )

    def _serve(self, *, body: bool) -> None:
        owner = self.server.owner
        target = resolve(owner.root, self.path)
        if (
            target is not None
            and not self._host_side()
            and target.relative_to(owner.root).as_posix() in owner.private
        ):
            target = None  # an expected/gold file: for the evaluator on the host only
        if target is None:
            data = b"not found\n"
            self.send_response(HTTPStatus.NOT_FOUND)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            status = HTTPStatus.NOT_FOUND
        else:
            data = target.read_bytes()
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", content_type(target))
            self.send_header("Cache-Control", "no-store")
            status = HTTPStatus.OK
        self.send_header("Content-Length", str(len(data)))
        self.server.owner._record(self.command, self.path, status)  # logged before it is seen
        self.end_headers()
        if body:
            self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        logger.debug("asset server: " + format, *args)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], owner: AssetServer) -> None:
        self.owner = owner
        super().__init__(address, _Handler)

    def verify_request(self, request: Any, client_address: Any) -> bool:
        """Over this host's loopback only this host user's sockets (the harness) are answered;
        a desktop's connection arrives on another interface."""
        if is_loopback(str(client_address[0])):
            return same_user(request, client_address, what="asset server")
        return True


class AssetServer:
    """Serves ``root`` read-only over HTTP from a background thread."""

    def __init__(
        self,
        root: Path = BUILTIN_ROOT / "assets",
        host: str = "0.0.0.0",
        port: int = 0,
        private: Collection[str] | None = None,
    ) -> None:
        """``private``: paths under ``root`` served only to this host's loopback (default: the
        evaluator-only files of the built-in tasks, :func:`private_assets`)."""
        self.root = Path(root).resolve()
        self.private = frozenset(private) if private is not None else private_assets()
        self.host = host
        self._requested_port = port
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._log: list[RequestRecord] = []
        self._lock = threading.Lock()

    @property
    def port(self) -> int:
        """The bound port (only valid once started)."""
        if self._server is None:
            raise RuntimeError("AssetServer is not started")
        return int(self._server.server_address[1])

    @property
    def requests(self) -> list[RequestRecord]:
        """A copy of the request log, oldest first."""
        with self._lock:
            return list(self._log)

    def url(self, host: str = "127.0.0.1") -> str:
        """Base URL of the server as reached through ``host``."""
        return f"http://{host}:{self.port}"

    def start(self) -> int:
        """Bind and serve in a daemon thread; returns the port."""
        if self._server is not None:
            return self.port
        if not self.root.is_dir():
            raise FileNotFoundError(f"asset root {self.root} is not a directory")
        self._server = _Server((self.host, self._requested_port), self)
        self._thread = threading.Thread(
            target=self._server.serve_forever, name=f"asset-server-{self.port}", daemon=True
        )
        self._thread.start()
        logger.info("asset server on %s:%d serving %s", self.host, self.port, self.root)
        return self.port

    def stop(self) -> None:
        """Stop serving and release the port (idempotent)."""
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._thread = None

    def _record(self, method: str, path: str, status: int) -> None:
        with self._lock:
            self._log.append(RequestRecord(method, path, int(status), time.time()))

    def __enter__(self) -> AssetServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    """CLI: serve the built-in assets (or ``--root``) until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=BUILTIN_ROOT / "assets")
    parser.add_argument("--host", default="0.0.0.0")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)
    server = AssetServer(args.root, args.host, args.port)
    server.start()
    print(f"serving {server.root} at http://{args.host}:{server.port}/", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
