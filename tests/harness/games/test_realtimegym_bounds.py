"""The normalisers of ``computer_env.realtimegym.scores.bounds``: the shipped expert scores, replayed
and re-searched on RealtimeGym's own games, and the ceilings re-derived by the relaxed searches
(the game-playing tests need RealtimeGym and skip with its reason without it)."""

from __future__ import annotations

import pytest

from computer_env.realtimegym import all_cases, normalize_score, realtimegym_available
from computer_env.realtimegym.games import LOADS, SEEDS
from computer_env.realtimegym.players.expert import SNAKE_BEAM, expert_plan
from computer_env.realtimegym.scores.bounds import ceiling_score, expert_score, seed_scores

AVAILABLE, REASON = realtimegym_available()
needs_realtimegym = pytest.mark.skipif(not AVAILABLE, reason=REASON)
EVERY_SEED = [(g, x, s) for g in ("freeway", "snake", "overcooked") for x in LOADS for s in SEEDS]


def _fresh(game: str, load: str, seed: int):  # noqa: ANN202 - RealtimeGym's own objects
    from computer_env.realtimegym.backend import RealtimeGymBackend

    backend = RealtimeGymBackend(game, load, seed)
    backend.reset()
    return backend


@pytest.mark.parametrize(("game", "load", "seed"), EVERY_SEED)
def test_every_case_has_an_expert_below_its_ceiling(game: str, load: str, seed: int) -> None:
    entry = seed_scores(game, load, seed)
    assert 0 < entry.expert <= entry.ceiling
    assert expert_score(game, load, seed) == entry.expert
    assert ceiling_score(game, load, seed) == entry.ceiling


@pytest.mark.parametrize(("game", "load"), [(g, x) for g in ("snake", "overcooked") for x in LOADS])
def test_no_normaliser_is_the_reference_players_own_score(game: str, load: str) -> None:
    """Where the reference player is not optimal, the expert plays better than it on every
    seed, so the reference scores below 1 (Overcooked M and H: the macro-action beam search
    beats the scripted cook's 56)."""
    for seed in SEEDS:
        entry = seed_scores(game, load, seed)
        assert entry.expert > entry.reference, (game, load, seed)
        assert normalize_score(game, load, seed, entry.reference) < 1


def test_freeway_normaliser_is_the_proven_optimum() -> None:
    """Freeway's normaliser equals the reference player's score, and that is no flaw: the
    expert's breadth-first search over (turn, row) is exact on the real game, so its ``100 - T``
    is the proven optimum (the ceiling), and the reference, which plays the same exact
    search, is optimal too. No player can score above 1 on Freeway."""
    for load in LOADS:
        for seed in SEEDS:
            entry = seed_scores("freeway", load, seed)
            assert entry.expert == entry.ceiling, (load, seed)
            assert entry.reference == entry.expert, (load, seed)


def test_normalisation_is_never_clipped() -> None:
    for case in all_cases():
        expert = expert_score(case.game, case.load, case.seed)
        assert normalize_score(case.game, case.load, case.seed, expert) == 1.0
        assert normalize_score(case.game, case.load, case.seed, 1.25 * expert) == 1.25
        assert normalize_score(case.game, case.load, case.seed, expert / 2) == 0.5
    assert normalize_score("snake", "E", 0, -1) < 0


@needs_realtimegym
@pytest.mark.parametrize(
    ("game", "load", "seed"), [c for c in EVERY_SEED if c[0] != "overcooked" or c[2] in (0, 5)]
)
def test_the_expert_moves_reach_the_recorded_score(game: str, load: str, seed: int) -> None:
    """The recorded moves, played on a fresh game of the seed, score exactly the expert's
    score (Overcooked's seeds are one game: two of them, on every load)."""
    entry = seed_scores(game, load, seed)
    backend = _fresh(game, load, seed)
    try:
        for action in entry.moves:
            assert not backend.terminal
            backend.advance(action)
        assert backend.score == entry.expert
    finally:
        backend.close()


@needs_realtimegym
@pytest.mark.parametrize(
    ("game", "load", "seed"),
    [("freeway", "H", 3), ("freeway", "M", 7), ("snake", "E", 1), ("snake", "H", 6)],
)
def test_the_expert_search_reproduces_its_moves(game: str, load: str, seed: int) -> None:
    entry = seed_scores(game, load, seed)
    backend = _fresh(game, load, seed)
    moves = "".join(expert_plan(game, backend.raw, snake_beam=SNAKE_BEAM))
    assert moves == entry.moves


@needs_realtimegym
@pytest.mark.parametrize(("load", "seed"), [("E", 2), ("M", 4), ("H", 6)])
def test_snake_ceiling_is_the_body_free_optimum(load: str, seed: int) -> None:
    from computer_env.realtimegym.scores.ceiling import snake_ceiling

    room = {"E": 34, "M": 30, "H": 27}[load]  # 36 cells less the obstacles and the start cell
    value = min(snake_ceiling(_fresh("snake", load, seed).raw), room)
    assert value == ceiling_score("snake", load, seed)
    if (load, seed) == ("H", 6):
        assert ceiling_score("snake", "H", 6) == 23  # the old bound, 27, cannot be reached


@needs_realtimegym
@pytest.mark.parametrize("load", LOADS)
def test_overcooked_ceiling_from_the_relaxed_kitchen(load: str) -> None:
    from computer_env.realtimegym.scores.ceiling import overcooked_ceiling

    raw = _fresh("overcooked", load, 0).raw
    from realtimegym.environments.overcooked import Recipe

    recipe = Recipe(("onion",) * 3)
    me = raw.gym_env.base_env.state.players[0]
    value = overcooked_ceiling(
        raw.gym_env.base_mdp,
        tuple(me.position),
        tuple(me.orientation),
        serve_r=recipe.value,
        cook=recipe.time,
    )
    assert value == ceiling_score("overcooked", load, 0) >= expert_score("overcooked", load, 0)
    # fewer turns never earn more
    assert (
        overcooked_ceiling(
            raw.gym_env.base_mdp,
            tuple(me.position),
            tuple(me.orientation),
            serve_r=recipe.value,
            cook=recipe.time,
            turns=30,
        )
        < value
    )


@needs_realtimegym
@pytest.mark.parametrize("load", LOADS)
def test_overcooked_copies_play_out_as_the_real_game(load: str) -> None:
    """The expert searches copies that skip the observations and share the layout and its
    planners: played with the expert's moves beside the real game, from the start and from
    a copy taken mid-game, they match it (reward, chefs, objects, partner's moves) every turn."""
    from computer_env.realtimegym.players.expert_overcooked import overcooked_clone

    moves = seed_scores("overcooked", load, 0).moves
    backend = _fresh("overcooked", load, 0)
    copies = [overcooked_clone(backend.raw)]
    for turn, action in enumerate(moves):
        if turn == 50:
            copies.append(overcooked_clone(backend.raw))
        backend.advance(action)
        for sim in copies:
            sim.go(action)
            assert sim.reward == backend.raw.reward, (turn, action)
            assert sim.gym_env.base_env.state == backend.raw.gym_env.base_env.state, turn
            assert sim.history[1] == backend.raw.history[1], turn
    assert len(copies) == 2 and backend.score == seed_scores("overcooked", load, 0).expert


@needs_realtimegym
def test_overcooked_macro_walks_to_its_tile_and_interacts() -> None:
    """A macro-action ends with the interaction that changes what the chef holds: from the
    start of cc_hard, walking to the nearest onion dispenser picks an onion up."""
    from computer_env.realtimegym.players.expert_overcooked import (
        macro_targets,
        overcooked_clone,
        play_macro,
    )

    raw = _fresh("overcooked", "M", 0).raw
    sim = overcooked_clone(raw)
    mdp, state = sim.gym_env.base_mdp, sim.gym_env.base_env.state
    dispensers = list(mdp.get_onion_dispenser_locations())
    assert set(dispensers) <= set(macro_targets(mdp, state))
    moves, done = play_macro(sim, dispensers[0])
    assert done and moves[-1] == "I" and len(moves) <= 5
    assert sim.gym_env.base_env.state.players[0].held_object.name == "onion"
    assert raw.game_turn == 0  # the search never steps the game it was given
