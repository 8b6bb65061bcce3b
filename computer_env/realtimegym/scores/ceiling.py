"""Provable ceilings: exact searches of relaxed games, which can only overestimate.

- Freeway: the breadth-first search of :mod:`.expert` is exact on the real game, so the
  ceiling is the expert's ``100 - T``.
- Snake: the body is dropped (the snake is cut to its head before every turn, so it never
  hits itself); walls, obstacles, headings, spawns and apple lifetimes stay RealtimeGym's
  (each turn is RealtimeGym's own ``step`` on a copy). A forward search over every distinct
  (head, heading, apples) per turn keeps the most apples eaten: exact for the relaxed game,
  and every real game is also a relaxed one, so no player can eat more. The shipped ceiling
  is also at most the room to grow (36 cells less the obstacles and the start cell).
- Overcooked: onions are free and the partner never blocks: every pot refills with three
  onions at once after its soup is taken and is ready the recipe's cooking time later; dishes come from the dispenser (+3 each, as if always useful) or from
  any counter; soups may be parked on counters. The agent's chef is searched exactly over
  (cell, facing, held, parked soups, pots' turns to ready) for the most reward (+5 a soup
  taken, +20 a delivery). The partner (``put_onion_everywhere``) carries onions only, so it
  never delivers and adds no reward.
"""

from __future__ import annotations

from typing import Any

from computer_env.realtimegym.games import MAX_TURNS
from computer_env.realtimegym.players.expert import snake_clone, snake_moves


def snake_ceiling(raw: Any) -> int:
    """The most apples a body-free snake eats in the fresh game ``raw`` (exact search)."""
    layer: dict[tuple[Any, ...], tuple[int, Any]] = {}
    start = snake_clone(raw)
    layer[(start.snake[-1], start.dir, ())] = (0, start)
    best = 0
    while layer:
        nxt: dict[tuple[Any, ...], tuple[int, Any]] = {}
        for eaten, sim in layer.values():
            for action in snake_moves(sim):
                child = snake_clone(sim)
                child.snake = [child.snake[-1]]
                child.step(action)
                if child.r < 0:
                    continue  # a wall or an obstacle: never better than not moving there
                total = eaten + child.r
                best = max(best, total)
                if child.terminal:
                    continue
                food = tuple((f, child.food_attributes[f[0]][f[1]]) for f in child.food)
                key = (child.snake[-1], child.dir, food)
                if key not in nxt or nxt[key][0] < total:
                    nxt[key] = (total, child)
        layer = nxt
    return best


# ----- Overcooked -------------------------------------------------------------------------

_DIRS = ((0, -1), (0, 1), (1, 0), (-1, 0))
PARKED_CAP = 3
"""Soups parked on counters tracked by the search (more never pays: each waits to be served)."""


def overcooked_ceiling(
    mdp: Any,
    start: tuple[int, int],
    facing: tuple[int, int],
    *,
    serve_r: int,
    cook: int,
    turns: int = MAX_TURNS,
) -> int:
    """The most reward the agent's chef earns in the relaxed kitchen (see the module doc):
    ``serve_r`` is the soup's value, ``cook`` its cooking time in turns."""
    terrain = mdp.terrain_mtx
    params = mdp.reward_shaping_params
    dish_r = params["DISH_PICKUP_REWARD"]
    soup_r = params["SOUP_PICKUP_REWARD"] + 3 * params["PLACEMENT_IN_POT_REW"]
    refill = cook  # a pot cooks at least ``cook`` turns between two soups (onions are free)
    pots = sorted(mdp.get_pot_locations())
    pot_index = {p: i for i, p in enumerate(pots)}
    walk = {(x, y) for y, row in enumerate(terrain) for x, t in enumerate(row) if t == " "}

    def kind(cell: tuple[int, int]) -> str:
        x, y = cell
        return terrain[y][x]

    # state: (pos, facing, held, parked, pot timers) -> best reward so far
    layer: dict[tuple[Any, ...], int] = {(start, facing, "", 0, (refill,) * len(pots)): 0}
    best = 0
    for _turn in range(turns):
        nxt: dict[tuple[Any, ...], int] = {}
        for (pos, face, held, parked, timers), value in layer.items():
            ticked = tuple(max(0, t - 1) for t in timers)
            options: list[tuple[tuple[Any, ...], int]] = []
            for d in _DIRS:  # a move: into a free cell, else only turn
                cell = (pos[0] + d[0], pos[1] + d[1])
                options.append(((cell if cell in walk else pos, d, held, parked, ticked), 0))
            options.append(((pos, face, held, parked, ticked), 0))  # stay
            target = (pos[0] + face[0], pos[1] + face[1])
            t = (
                kind(target)
                if 0 <= target[1] < len(terrain) and 0 <= target[0] < len(terrain[0])
                else "X"
            )
            if t == "D" and held == "":
                options.append(((pos, face, "dish", parked, ticked), dish_r))
            elif t == "X" and held == "" and parked:
                options.append(((pos, face, "soup", parked - 1, ticked), 0))
            elif t == "X" and held == "":
                options.append(((pos, face, "dish", parked, ticked), 0))
            elif t == "X" and held == "soup" and parked < PARKED_CAP:
                options.append(((pos, face, "", parked + 1, ticked), 0))
            elif t == "X" and held == "dish":
                options.append(((pos, face, "", parked, ticked), 0))
            elif t == "P" and held == "dish" and timers[pot_index[target]] == 0:
                after = list(ticked)
                after[pot_index[target]] = refill
                options.append(((pos, face, "soup", parked, tuple(after)), soup_r))
            elif t == "S" and held == "soup":
                options.append(((pos, face, "", parked, ticked), serve_r))
            for key, gain in options:
                total = value + gain
                if nxt.get(key, -1) < total:
                    nxt[key] = total
                    best = max(best, total)
        layer = nxt
    return best
