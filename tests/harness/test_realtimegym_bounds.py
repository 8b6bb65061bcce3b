"""The normalisation bounds of ``computer_env.realtimegym.bounds``, re-derived from RealtimeGym's
game code (the derivation tests need RealtimeGym and skip with its reason without it)."""

from __future__ import annotations

import pytest

from computer_env.base import KeyPress
from computer_env.realtimegym import (
    LOADS,
    SEEDS,
    GameComputerEnv,
    ReferencePlayer,
    all_cases,
    best_score,
    normalize_score,
    realtimegym_available,
)
from computer_env.realtimegym import bounds

AVAILABLE, REASON = realtimegym_available()
needs_realtimegym = pytest.mark.skipif(not AVAILABLE, reason=REASON)


def _backend(game: str, load: str, seed: int):  # noqa: ANN202 - RealtimeGym's own objects
    from computer_env.realtimegym.backend import RealtimeGymBackend

    backend = RealtimeGymBackend(game, load, seed)
    backend.reset()
    return backend


def test_bounds_table() -> None:
    assert [bounds.snake_apple_cap(x) for x in LOADS] == [34, 30, 27]
    assert bounds.snake_eatable_apples() == 36
    assert bounds.overcooked_soup_credit() == 28
    assert [best_score("overcooked", x, 0) for x in LOADS] == [84, 56, 56]
    assert best_score("freeway", "H", 3) == 100 - 21 and best_score("freeway", "E", 1) == 89
    for case in all_cases():
        assert best_score(case.game, case.load, case.seed) > 0


@pytest.mark.parametrize("case", all_cases(), ids=lambda c: c.case_id)
def test_normalize_is_clipped_and_monotone(case) -> None:  # noqa: ANN001
    bound = best_score(case.game, case.load, case.seed)
    raws = [-1000, -1, 0, 1, bound / 2, bound, bound + 1, 1000]
    values = [normalize_score(case.game, case.load, case.seed, r) for r in raws]
    assert values == sorted(values) and values[0] == 0.0 and values[-1] == 1.0
    assert normalize_score(case.game, case.load, case.seed, bound) == 1.0
    assert normalize_score(case.game, case.load, case.seed, bound / 2) == 0.5


@needs_realtimegym
@pytest.mark.parametrize("load", LOADS)
def test_freeway_fastest_crossings_are_the_games(load: str) -> None:
    """Breadth-first search over (turn, row) on the real game per seed; playing the path on the
    real game scores exactly the bound (so it is reachable)."""
    from computer_env.realtimegym.reference import _freeway_clone, _freeway_plan

    for seed in SEEDS:
        backend = _backend("freeway", load, seed)
        assert backend.raw.reward == bounds.FREEWAY_START
        plan = _freeway_plan(_freeway_clone(backend.raw))
        assert len(plan) == bounds.FREEWAY_FASTEST[load][seed], (load, seed)
        for _turn, _pos, action in plan:
            backend.advance(action)
        assert backend.terminal and backend.score == best_score("freeway", load, seed)


@needs_realtimegym
@pytest.mark.parametrize("load", LOADS)
def test_snake_cap_from_the_games_code(load: str) -> None:
    """Obstacles and board from the real reset on every seed; apples spawned in time counted on
    the real game (a one-cell snake is re-placed each turn so that it never dies)."""
    for seed in SEEDS:
        raw = _backend("snake", load, seed).raw
        assert len(raw.obstacle) == bounds.SNAKE_OBSTACLES[load]
        assert (raw.B - 2) ** 2 == bounds.SNAKE_INTERIOR and len(raw.snake) == 1
    assert raw.idx == bounds.SNAKE_INITIAL_APPLES  # apples spawned at reset
    free = [(x, y) for x in range(2, raw.B - 2) for y in range(1, raw.B - 1)
            if (x, y) not in raw.obstacle and (x - 1, y) not in raw.obstacle]
    spawned_in_time = 0
    for turn in range(1, 100):
        before = raw.idx
        raw.snake, raw.dir, raw.food = [free[turn % len(free)]], "L", []
        raw.food_attributes = [[0] * raw.B for _ in range(raw.B)]
        raw.step("L")
        assert not raw.terminal, turn
        spawned_in_time += (raw.idx - before) % len(raw.coords)
    assert bounds.SNAKE_INITIAL_APPLES + spawned_in_time == bounds.snake_eatable_apples()


@needs_realtimegym
@pytest.mark.parametrize("load", LOADS)
def test_overcooked_soup_credit_and_reachable_soups(load: str) -> None:
    """The credit per soup from the real MDP's shaping and recipe; the soups by playing the
    reference player on the real game (turn pacing), on two seeds (the same game)."""
    from realtimegym.environments.overcooked import Recipe

    raw = _backend("overcooked", load, 0).raw
    shaping = raw.gym_env.base_mdp.reward_shaping_params
    assert shaping["PLACEMENT_IN_POT_REW"] == bounds.OVERCOOKED_ONION_PLACEMENT
    assert shaping["DISH_PICKUP_REWARD"] == bounds.OVERCOOKED_DISH_PICKUP
    assert shaping["SOUP_PICKUP_REWARD"] == bounds.OVERCOOKED_SOUP_PICKUP
    assert Recipe(("onion",) * 3).value == bounds.OVERCOOKED_RECIPE_VALUE
    scores = []
    for seed in (0, 5):
        env = GameComputerEnv("overcooked", load, seed)
        player = ReferencePlayer(env)
        try:
            while not env.done:
                env.step(KeyPress(key=player.next_key()))
            delivered = env.read_state(
                lambda r: len(r.gym_env.base_env.game_stats["soup_delivery"][0]))
        finally:
            env.close()
        assert delivered == bounds.OVERCOOKED_SOUPS[load]
        scores.append(env.score)
    assert scores[0] == scores[1] >= best_score("overcooked", load, 0)
