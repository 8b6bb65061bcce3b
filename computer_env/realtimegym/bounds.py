"""Per-case score bounds and the normalisation ``raw / bound`` clipped to [0, 1].

Each bound comes from RealtimeGym's game code (``tests/harness/test_realtimegym_bounds.py``
re-derives every number from the installed game and fails when one drifts):

- **Freeway**: the score starts at 100 and loses 1 a turn until the chicken reaches the top
  (``FreewayEnv.step``); a collision resets the cars. The bound is ``100 - T`` where ``T`` is the
  fewest turns of a collision-free crossing, found by breadth-first search over (turn, row) on
  the real game per load and seed (cars depend on the seed): reachable by construction.
- **Snake**: +1 an apple, -1 and the end on a crash (``SnakeEnv.step``). Three apples appear at
  the start and one after every turn ``t`` with ``t % 3 == 1``; an apple spawned after turn 97
  is the last one that can be eaten by turn 100, so 3 + 33 = 36 apples can be eaten at most.
  The snake grows by one per apple and must fit in the 6 x 6 interior minus the obstacles
  (1/5/8 on E/M/H), starting at length 1: at most 34/30/27 apples. The bound is the smaller,
  34/30/27. It is an upper bound from the code; no player is known to reach it.
- **Overcooked**: the agent's chef earns 20 per delivered onion soup (the recipe value) plus
  RealtimeGym's shaping: 3 for a useful plate pickup and 5 for picking a soup up; placing an
  onion earns 0 (``PLACEMENT_IN_POT_REW`` is 0 in RealtimeGym's ``Overcooked_Env``). One soup
  thus earns at most 28. The number of soups is the most the reference player delivers in 100
  turns of turn pacing on the layout (3 on cc_easy, 2 on cc_hard and cc_insane), so the bound is
  reachable; a better player scores above it and clips to 1 (its raw score shows by how much).
  RealtimeGym's Overcooked ignores the seed (fixed layout, partner seeded with 42).
"""

from __future__ import annotations

from computer_env.realtimegym.games import MAX_TURNS, check_load, game_spec

FREEWAY_START = 100
FREEWAY_FASTEST: dict[str, tuple[int, ...]] = {
    "E": (13, 11, 11, 11, 13, 12, 11, 11),
    "M": (12, 14, 14, 16, 14, 14, 15, 16),
    "H": (19, 19, 20, 21, 19, 19, 21, 20),
}
"""Fewest turns to the top per load and seed (breadth-first search on the real game)."""

SNAKE_INITIAL_APPLES = 3
SNAKE_SPAWN_EVERY = 3
SNAKE_INTERIOR = 6 * 6
SNAKE_OBSTACLES: dict[str, int] = {"E": 1, "M": 5, "H": 8}
"""RealtimeGym's ``seed_mapping`` gives seeds 1000+/5000+/8000+; obstacles = seed // 1000."""

OVERCOOKED_RECIPE_VALUE = 20
OVERCOOKED_DISH_PICKUP = 3
OVERCOOKED_SOUP_PICKUP = 5
OVERCOOKED_ONION_PLACEMENT = 0
OVERCOOKED_SOUPS: dict[str, int] = {"E": 3, "M": 2, "H": 2}
"""Soups delivered in 100 turns by the reference player on cc_easy/cc_hard/cc_insane."""


def snake_eatable_apples(max_turns: int = MAX_TURNS) -> int:
    """Apples that appear early enough to be eaten within ``max_turns`` turns."""
    spawned_in_time = sum(1 for t in range(1, max_turns) if t % SNAKE_SPAWN_EVERY == 1)
    return SNAKE_INITIAL_APPLES + spawned_in_time


def snake_apple_cap(load: str) -> int:
    """The most apples a snake can eat on ``load``: apples in time, and room to grow."""
    room = SNAKE_INTERIOR - SNAKE_OBSTACLES[check_load(load)] - 1
    return min(snake_eatable_apples(), room)


def overcooked_soup_credit() -> int:
    """The most one soup earns the agent's chef."""
    return (OVERCOOKED_RECIPE_VALUE + OVERCOOKED_DISH_PICKUP + OVERCOOKED_SOUP_PICKUP
            + 3 * OVERCOOKED_ONION_PLACEMENT)


def best_score(game: str, load: str, seed: int) -> float:
    """The normalisation bound of one case (see the module docstring)."""
    name = game_spec(game).name
    check_load(load)
    if name == "freeway":
        return float(FREEWAY_START - FREEWAY_FASTEST[load][seed])
    if name == "snake":
        return float(snake_apple_cap(load))
    return float(OVERCOOKED_SOUPS[load] * overcooked_soup_credit())


def normalize_score(game: str, load: str, seed: int, raw: float) -> float:
    """``raw / best_score`` clipped to [0, 1] (a Snake crash with no apple, -1, gives 0)."""
    return min(1.0, max(0.0, float(raw) / best_score(game, load, seed)))
