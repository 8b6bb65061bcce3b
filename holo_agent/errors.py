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


class ContextOverflow(Exception):
    """The endpoint refused a request because the conversation no longer fits the model's
    context (vLLM: HTTP 400 "This model's maximum context length is N tokens ...").

    The model's failure, not the harness' nor the environment's: its screenshots and tool
    outputs grew past what it can read. The agent ends the episode (``context_overflow``) with
    the refused turn recorded, and the case is scored on the desktop as the agent left it.
    """

    def __init__(self, status: int, message: str, max_tokens: int | None) -> None:
        super().__init__(f"the model's context is full (HTTP {status}): {message}")
        self.status = status
        self.server_message = message
        self.max_tokens = max_tokens
