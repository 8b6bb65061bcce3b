"""The guest server: OSWorld's in-VM HTTP API plus a token, a fast action path and Unicode typing.

Run it with ``python -m computer_env.desktop.server --host H --port P --token-fd N`` (or
``--token-file F``).
Heavy modules (Flask, mss, pyautogui) load lazily; importing this package is cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from computer_env.desktop.server.state import VERSION, ServerConfig

if TYPE_CHECKING:
    from flask import Flask

__all__ = ["VERSION", "ServerConfig", "create_app", "main"]


def create_app(config: ServerConfig) -> Flask:
    """The Flask app for ``config`` (see :func:`computer_env.desktop.server.app.create_app`)."""
    from computer_env.desktop.server.app import create_app as _create_app

    return _create_app(config)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    from computer_env.desktop.server.cli import main as _main

    return _main(argv)
