"""Benchmark cases (game x load x seed); the score bounds are in :mod:`.bounds`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from computer_env.realtimegym.games import GAMES, LOADS, SEEDS, check_load, game_spec

SEED_INDEPENDENT = frozenset({"overcooked"})
"""Games whose seeds are all the same game (Overcooked: a fixed layout and a partner seeded
with 42 whatever the seed); :func:`all_cases` collects one seed of them."""


@dataclass(frozen=True)
class GameCase:
    """One benchmark case; ``case_id`` is ``game/load/seedN`` (e.g. ``freeway/H/seed3``), with
    ``/tokensN`` when a run plays several token budgets."""

    game: str
    load: str
    seed: int
    turn_tokens: int | None = None
    """The token budget a turn, when a run plays several (then part of the id)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "game", game_spec(self.game).name)
        check_load(self.load)
        if self.seed not in SEEDS:
            raise ValueError(f"seed must be in 0..{SEEDS[-1]}, got {self.seed}")

    @property
    def case_id(self) -> str:
        """The pytest id of the case."""
        base = f"{self.game}/{self.load}/seed{self.seed}"
        return base if self.turn_tokens is None else f"{base}/tokens{self.turn_tokens}"


def all_cases(
    games: Iterable[str] | None = None,
    loads: Iterable[str] | None = None,
    seeds: Iterable[int] | None = None,
) -> list[GameCase]:
    """Every case (games x loads x seeds), optionally restricted to some games/loads/seeds.

    Seed-independent games (Overcooked) get only the first selected seed."""
    chosen_games = [game_spec(g).name for g in games] if games is not None else list(GAMES)
    chosen_loads = [check_load(x) for x in loads] if loads is not None else list(LOADS)
    chosen_seeds = sorted(set(seeds)) if seeds is not None else list(SEEDS)
    cases = []
    for g in chosen_games:
        # RealtimeGym's Overcooked ignores the seed: its seeds are one game, collected once.
        game_seeds = chosen_seeds[:1] if g in SEED_INDEPENDENT else chosen_seeds
        cases += [GameCase(g, x, s) for x in chosen_loads for s in game_seeds]
    return cases
