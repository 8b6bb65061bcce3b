"""RealtimeGym's time pressure as lost turns: what a model's thinking costs the game.

RealtimeGym's planning agent (``agents/base.py``, ``planning_inference``) starts thinking on
turn ``t0`` and checks after every turn whether the answer is complete: with a budget of ``N``
tokens a turn (``--time_unit token``) the answer of ``T`` decoded tokens is there once
``k * N >= T``, on turn ``t0 + k - 1`` with ``k = ceil(T / N)``; the ``k - 1`` turns before it
take the default action (or what is left of an earlier plan). In seconds
(``--time_unit seconds``) each turn sleeps the budget while the answer streams in, so the same
holds with ``T`` the model's seconds and ``N`` the seconds a turn. Then the plan's entries for
the turns that have passed are skipped (Freeway, Snake; see ``GameSpec.drops_late_actions``).
"""

from __future__ import annotations

import math


def lost_turns(cost: float, budget: float) -> int:
    """Turns that pass with the default action while a model spends ``cost`` (tokens or
    seconds) at ``budget`` a turn: ``ceil(cost / budget) - 1``, never negative."""
    if budget <= 0:
        raise ValueError(f"a turn's budget must be > 0, got {budget}")
    if cost <= budget:
        return 0
    return math.ceil(cost / budget) - 1
