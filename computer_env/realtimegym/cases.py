"""Benchmark cases (game x load x seed) and the per-game score normalisation."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from computer_env.realtimegym.games import GAMES, LOADS, MAX_TURNS, SEEDS, check_load, game_spec

FREEWAY_BEST = MAX_TURNS - 9
"""Freeway's best conceivable score: the chicken needs 9 moves up, the score is 100 - turns."""
SNAKE_APPLES = 3 + (MAX_TURNS + 2) // 3
"""Apples that appear in a 100-turn Snake game: 3 at the start, then one every third turn."""
OVERCOOKED_SOUP_CREDIT = 20 + 3 * 3 + 3 + 5
"""The most one soup can earn the agent's chef: delivery 20, three onions potted 3 each, a useful
plate pickup 3, the soup pickup 5 (RealtimeGym's reward includes these shaping terms)."""
OVERCOOKED_CAP = 5.0 * OVERCOOKED_SOUP_CREDIT
"""Five soups at full credit (see :func:`normalize_score`)."""


@dataclass(frozen=True)
class GameCase:
    """One benchmark case; ``case_id`` is ``game/load/seedN`` (e.g. ``freeway/H/seed3``)."""

    game: str
    load: str
    seed: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "game", game_spec(self.game).name)
        check_load(self.load)
        if self.seed not in SEEDS:
            raise ValueError(f"seed must be in 0..{SEEDS[-1]}, got {self.seed}")

    @property
    def case_id(self) -> str:
        """The pytest id of the case."""
        return f"{self.game}/{self.load}/seed{self.seed}"


def all_cases(
    games: Iterable[str] | None = None,
    loads: Iterable[str] | None = None,
    seeds: Iterable[int] | None = None,
) -> list[GameCase]:
    """Every case (games x loads x seeds), optionally restricted to some games/loads/seeds."""
    chosen_games = [game_spec(g).name for g in games] if games is not None else list(GAMES)
    chosen_loads = [check_load(x) for x in loads] if loads is not None else list(LOADS)
    chosen_seeds = list(seeds) if seeds is not None else list(SEEDS)
    return [GameCase(g, x, s) for g in chosen_games for x in chosen_loads for s in chosen_seeds]


def normalize_score(game: str, raw: float) -> float:
    """Map a game's raw score (RealtimeGym's ``env.reward`` at the end) to [0, 1].

    - Freeway: the score starts at 100 and loses 1 a turn until the chicken reaches the top
      (at turn 100 without reaching it, it is 0). At least 9 turns are needed, so
      ``raw / 91`` clipped to [0, 1]: 1 is a run with no waiting, 0 never reaching the top.
    - Snake: +1 per apple eaten, -1 on death. ``raw / 37`` clipped to [0, 1]: 37 apples
      appear in a 100-turn game (3 at the start plus one every third turn), so 1 means every
      apple was eaten; a death with no apple clips to 0.
    - Overcooked: RealtimeGym's reward is 20 per delivered onion soup plus its shaping rewards
      (3 per useful onion placed in a pot, 3 per useful plate pickup, 5 per soup picked up).
      One soup thus earns the agent's chef at most 37. A soup needs three onion trips, 5 cooking
      turns, a plate and a serving trip: about 20 turns at best even with the partner's help,
      so at most five soups fit in 100 turns. ``raw / 185`` (five soups at full credit) clipped
      to [0, 1].
    """
    name = game_spec(game).name
    if name == "freeway":
        value = raw / FREEWAY_BEST
    elif name == "snake":
        value = raw / SNAKE_APPLES
    else:
        value = raw / OVERCOOKED_CAP
    return min(1.0, max(0.0, float(value)))
