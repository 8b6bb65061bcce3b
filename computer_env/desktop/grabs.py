"""Grabs of a desktop's X server as the client sees them (``GET /x_grabs``).

The guest server finds and releases a grab of its X server (``server/xwatch.py``) and counts
those it released by killing a client of the desktop in every screenshot's ``X-Grabs``
header; :class:`XServerGrabbed` is what an environment raises when that count grew while the
agent had the desktop: the agent's side took the X server from the harness, a scored 0
(``x_grab``), never an unscored time-out. A grab no such kill released is listed (``released``
false) but is nobody's fault the harness can name: not counted.
"""

from __future__ import annotations

from pydantic import BaseModel, Field


class XGrabRecord(BaseModel):
    """One grab found by the guest server."""

    at: float = Field(description="wall-clock time it was found")
    held_s: float = Field(description="how long the server's probe had waited")
    released: bool = Field(description="whether killing a client of the desktop released it")
    grabber: str = Field(
        "", description="`pid: command line` of the client whose death released it"
    )
    detail: str = ""


class XGrabReport(BaseModel):
    """``GET /x_grabs``: every grab found so far, and whether the watch runs."""

    grabs: list[XGrabRecord] = Field(default_factory=list)
    watching: bool = False
    x_server: int | None = None


class XServerGrabbed(Exception):
    """A client of the desktop (the agent's side) grabbed the X server."""

    def __init__(self, grabs: list[XGrabRecord]) -> None:
        self.grabs = grabs
        super().__init__(describe(grabs))


def released(grabs: list[XGrabRecord]) -> list[XGrabRecord]:
    """The grabs the desktop's side held (released by killing one of its clients)."""
    return [g for g in grabs if g.released]


def describe(grabs: list[XGrabRecord]) -> str:
    """One line for a failure message."""
    parts = [
        (
            f"held {g.held_s:g} s by {g.grabber}, killed"
            if g.released
            else f"held {g.held_s:g} s, not released: {g.detail}"
        )
        for g in grabs
    ]
    return "the desktop's X server was grabbed: " + "; ".join(parts or ["(no detail)"])


__all__ = ["XGrabRecord", "XGrabReport", "XServerGrabbed", "describe", "released"]
