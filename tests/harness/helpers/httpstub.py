"""A real HTTP server on loopback for tests: answers every GET with a fixed status and body and
counts the requests it received."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class CountingServer:
    """``status`` and ``body`` for every GET; ``hits`` counts them; ``url`` ends in ``path``."""

    def __init__(
        self, status: int = 200, *, body: bytes = b"ok\n", port: int = 0, path: str = "/"
    ) -> None:
        self.status = status
        self.body = body
        self.hits = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server naming
                owner.hits += 1
                self.send_response(owner.status)
                self.send_header("Content-Length", str(len(owner.body)))
                self.end_headers()
                self.wfile.write(owner.body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.port = int(self.server.server_address[1])
        self.url = f"http://127.0.0.1:{self.port}{path}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
