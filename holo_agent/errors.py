"""Agent-side errors that are neither infrastructure failures nor model failures."""

from __future__ import annotations


class HarnessRequestError(Exception):
    """The endpoint rejected a request the harness built wrongly (HTTP 400/404/422).

    Not an ``InfraError`` (it is not rerun) and not a model failure (it is not scored): it fails
    loudly with the server's message so the harness bug gets fixed.
    """

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"endpoint rejected the request (HTTP {status}): {message}")
        self.status = status
        self.server_message = message
