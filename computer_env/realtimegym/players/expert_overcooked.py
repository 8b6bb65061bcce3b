"""The Overcooked expert: a beam search over macro-actions on copies of RealtimeGym's own game.

A macro-action is "walk to a tile and interact with it" (the reference cook's shortest-path
walk, the partner treated as an obstacle, re-planned every turn): an onion or dish dispenser,
an onion, dish or soup on a counter, a pot that takes the held onion or holds the soup for the
held dish, the serving counter, or one of the two nearest empty counters to put the held item
down (soups may be parked and served later); or waiting one turn. A macro ends when the
interaction changes what the chef holds or what lies on the tile (a dish at a cooking pot waits
there until the soup is ready), and is dropped if that does not happen within ``MACRO_CAP``.

The search keeps, for every game turn, the ``width`` best games that reached it (duplicates,
same chefs and same objects, merged), and expands them in turn order with every macro, on
deep copies of the whole game (partner included: ``put_onion_everywhere`` carries onions from
the dispensers to random counters and pots with its own seeded generator, so a copy plays out
exactly as the real game would). A game's rank is the reward after ``horizon`` more turns of
the reference cook (a rollout with the reference as default policy), plus a tenth of the
progress it has made (onions in pots, cooking soups, a held onion or soup). The plan is the
moves of the game with the highest reward seen.
"""

from __future__ import annotations

import copy
from collections import deque
from typing import Any

from computer_env.realtimegym.games import MAX_TURNS
from computer_env.realtimegym.players.reference import (
    _overcooked_action,
    _overcooked_view,
    _walk_and_interact,
)

OVERCOOKED_WIDTH = 8
"""Games kept per turn by the beam search (about 1.5 min a load on one core)."""
OVERCOOKED_HORIZON = 30
"""Turns of the reference cook played out to rank a game."""
MACRO_CAP = 25
"""The most turns a macro-action may take before it is given up."""
NEAREST_DROPS = 2
"""Empty counters (nearest first) the chef may put its item down on."""
# progress weights: an onion in a pot, a cooking or ready soup, a held onion, a held soup
_ONION, _COOKING, _HELD_ONION, _HELD_SOUP = 4.0, 14.0, 2.0, 18.0
_DIRS = ((0, 1), (0, -1), (1, 0), (-1, 0))

Node = tuple[float, Any, list[str]]


def overcooked_clone(raw: Any) -> Any:
    """A deep copy of the game that shares the kitchen layout, its motion planners and the
    settings (read-only during play; the planners alone cost a second a copy) and builds no
    observations (features and text are never read by the search)."""
    gym = raw.gym_env
    base = gym.base_env
    shared = [
        gym.base_mdp,
        base.mdp,
        getattr(base, "_mlam", None),
        getattr(base, "_mp", None),
        gym.all_args,
        getattr(gym, "observation_space", None),
        getattr(gym, "share_observation_space", None),
        getattr(gym, "action_space", None),
    ]
    sim = copy.deepcopy(raw, {id(obj): obj for obj in shared if obj is not None})
    sim.observe = dict
    sim.gym_env.featurize_fn = lambda _state: (None, None)
    sim.gym_env._gen_share_observation = lambda _state: None
    return sim


def _held(player: Any) -> str | None:
    return player.held_object.name if player.held_object is not None else None


def _over(sim: Any) -> bool:
    return bool(sim.terminal) or sim.game_turn >= MAX_TURNS


def _tile(state: Any, pos: tuple[int, int]) -> tuple[Any, ...] | None:
    obj = state.objects.get(pos)
    if obj is None:
        return None
    return obj.name, len(getattr(obj, "ingredients", ()) or ()), getattr(obj, "_cooking_tick", 0)


def _drops(mdp: Any, state: Any) -> list[tuple[int, int]]:
    """The nearest empty counters (by walking distance around the partner)."""
    me, other = state.players
    walkable = {
        (x, y) for y, row in enumerate(mdp.terrain_mtx) for x, t in enumerate(row) if t == " "
    } - {tuple(other.position)}
    free = {
        (x, y)
        for y, row in enumerate(mdp.terrain_mtx)
        for x, t in enumerate(row)
        if t == "X" and (x, y) not in state.objects
    }
    start = tuple(me.position)
    seen, todo = {start}, deque([start])
    out: list[tuple[int, int]] = []
    while todo and len(out) < NEAREST_DROPS:
        x, y = todo.popleft()
        for dx, dy in _DIRS:
            cell = (x + dx, y + dy)
            if cell in free and cell not in out:
                out.append(cell)
            if cell in walkable and cell not in seen:
                seen.add(cell)
                todo.append(cell)
    return out[:NEAREST_DROPS]


def macro_targets(mdp: Any, state: Any) -> list[tuple[int, int]]:
    """The tiles worth walking to and interacting with, given what the chef holds."""
    held = _held(state.players[0])
    pots = list(mdp.get_pot_locations())
    soups = {p: o for p, o in state.objects.items() if p in pots}
    loose = {p: o.name for p, o in state.objects.items() if p not in pots}
    if held is None:
        return (
            list(mdp.get_onion_dispenser_locations())
            + list(mdp.get_dish_dispenser_locations())
            + [p for p, name in loose.items() if name in ("onion", "dish", "soup")]
        )
    drops = _drops(mdp, state)
    if held == "onion":
        return drops + [
            p
            for p in pots
            if p not in soups or (soups[p].is_idle and len(soups[p].ingredients) < 3)
        ]
    if held == "dish":
        return drops + [
            p for p in pots if p in soups and (soups[p].is_ready or soups[p].is_cooking)
        ]
    if held == "soup":
        return drops + list(mdp.get_serving_locations())
    return drops


def play_macro(sim: Any, target: tuple[int, int], cap: int = MACRO_CAP) -> tuple[list[str], bool]:
    """Walk to ``target`` and interact with it on ``sim``: the moves, and whether the
    interaction changed something before ``cap`` turns."""
    mdp = sim.gym_env.base_mdp
    moves: list[str] = []
    while len(moves) < cap and not _over(sim):
        state = sim.gym_env.base_env.state
        me, other = state.players
        action = _walk_and_interact(mdp, me, other.position, [target])
        before = (_held(me), _tile(state, target))
        sim.go(action)
        moves.append(action)
        state = sim.gym_env.base_env.state
        if action == "I" and (_held(state.players[0]), _tile(state, target)) != before:
            return moves, True
    return moves, False


def progress(sim: Any) -> float:
    """Reward not yet earned but under way (onions in pots, soups cooking, held items)."""
    state = sim.gym_env.base_env.state
    value = 0.0
    for pot in sim.gym_env.base_mdp.get_pot_locations():
        soup = state.objects.get(pot)
        if soup is not None:
            value += (
                _COOKING if soup.is_cooking or soup.is_ready else _ONION * len(soup.ingredients)
            )
    held = _held(state.players[0])
    return value + (_HELD_ONION if held == "onion" else _HELD_SOUP if held == "soup" else 0.0)


def rank(sim: Any, horizon: int = OVERCOOKED_HORIZON) -> float:
    """The reward after ``horizon`` turns of the reference cook, plus a tenth of ``sim``'s
    progress (a tie-break between games the rollout scores alike)."""
    out = overcooked_clone(sim)
    for _ in range(horizon):
        if _over(out):
            break
        out.go(_overcooked_action(*_overcooked_view(out)))
    return float(out.reward) + 0.1 * progress(sim)


def _key(sim: Any) -> tuple[Any, ...]:
    state = sim.gym_env.base_env.state
    chefs = tuple((tuple(p.position), tuple(p.orientation), _held(p)) for p in state.players)
    return chefs, tuple(sorted((pos, _tile(state, pos)) for pos in state.objects))


def overcooked_plan(
    raw: Any, width: int = OVERCOOKED_WIDTH, horizon: int = OVERCOOKED_HORIZON
) -> list[str]:
    """The beam search of the module doc from the game ``raw`` (left untouched)."""
    import numpy as np  # noqa: PLC0415 - RealtimeGym's dependency, present when its games are

    rng = np.random.get_state()  # the game draws from its own generators; keep the global one
    try:
        return _search(raw, width, horizon)
    finally:
        np.random.set_state(rng)


def _search(raw: Any, width: int, horizon: int) -> list[str]:
    turns: dict[int, dict[Any, Node]] = {
        raw.game_turn: {_key(raw): (0.0, overcooked_clone(raw), [])}
    }
    best: tuple[float, list[str]] = (float(raw.reward), [])

    def keep(child: Any, moves: list[str], penalty: float = 0.0) -> None:
        nonlocal best
        if child.reward > best[0]:
            best = (float(child.reward), moves)
        if _over(child):
            return
        layer = turns.setdefault(child.game_turn, {})
        value, key = rank(child, horizon) - penalty, _key(child)
        if key not in layer or layer[key][0] < value:
            layer[key] = (value, child, moves)

    for turn in range(raw.game_turn, MAX_TURNS):
        layer = turns.pop(turn, {})
        for _value, sim, moves in sorted(layer.values(), key=lambda n: n[0], reverse=True)[:width]:
            for target in macro_targets(sim.gym_env.base_mdp, sim.gym_env.base_env.state):
                child = overcooked_clone(sim)
                steps, done = play_macro(child, target)
                if done or _over(child):
                    keep(child, moves + steps)
            child = overcooked_clone(sim)
            child.go("S")
            keep(child, [*moves, "S"], penalty=0.5)
    return best[1]
