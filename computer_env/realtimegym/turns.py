"""The turns of a game episode: the record of each played turn and what a step tells the agent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Pacing = Literal["turn", "wallclock"]
"""``turn``: each step plays one turn; ``wallclock``: the game advances on its own clock."""


@dataclass(frozen=True)
class TurnRecord:
    """One played turn: which action, where it came from and why."""

    turn: int
    """1-based number of the turn played."""
    action: str
    source: Literal["agent", "default"]
    reason: str
    """Why this action: the input that chose it, or why the default was taken."""
    seen_turn: int | None
    """Turns played when the agent last observed (None when it never did)."""
    score: float
    """The game's score after the turn."""
    elapsed_s: float
    """Seconds since the episode started."""
    dropped: str | None = None
    """The agent's action that was dropped on this turn because it came after turns it lost."""

    @property
    def lag(self) -> int | None:
        """Turns that passed between the frame the agent saw and this turn (0 = on time)."""
        return None if self.seen_turn is None else self.turn - 1 - self.seen_turn


@dataclass
class PendingTurn:
    """The action chosen for the next turn, before it is played."""

    action: str
    source: Literal["agent", "default"]
    reason: str
    seen_turn: int | None
    dropped: str | None = None


def explain(record: TurnRecord, what: str, unmapped: bool, final_score: float | None) -> str:
    """What a step tells the agent about the turn its input ``what`` played.

    ``unmapped``: the input was no game control; ``final_score``: the score when the game is
    over after this turn, else None."""
    if record.dropped is not None:
        text = (
            f"Too late: {record.reason}; turn {record.turn} took the default action "
            f"{record.action}."
        )
    elif unmapped:
        text = (
            f"{what[0].upper()}{what[1:]} is not a game control; turn {record.turn} "
            f"took the default action {record.action}."
        )
    else:
        text = f"Action {record.action} ({record.reason}) played on turn {record.turn}."
    if record.lag and record.dropped is None:
        text += f" It came {record.lag} turn(s) after the frame you saw."
    if final_score is not None:
        text += f" The game is over; score {final_score:g}."
    return text


__all__ = ["Pacing", "PendingTurn", "TurnRecord", "explain"]
