"""The suite's ``Settings`` from command-line arguments, through the suite's real option parser
(no pytest process): what the settings and profile tests check."""

from __future__ import annotations

import pytest

from fixtures.run.config.options import add_options, settings_from_config
from fixtures.run.config.settings import Settings


class ParsedOptions:
    """A ``pytest.Config`` stand-in exposing ``getoption`` over parsed suite options."""

    def __init__(self, args: list[str]) -> None:
        parser = pytest.Parser(_ispytest=True)
        add_options(parser)
        self.option = parser.parse(args)

    def getoption(self, name: str) -> object:
        return getattr(self.option, name)


def settings_of(*args: str) -> Settings:
    """``Settings`` for these arguments (``pytest.UsageError`` for a bad value)."""
    return settings_from_config(ParsedOptions(list(args)))  # type: ignore[arg-type]
