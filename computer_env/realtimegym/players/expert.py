"""The expert: a search-based player whose score on each seed normalises the benchmark.

Every search steps RealtimeGym's own game objects (copies of the live game), so the rules,
spawns and rewards are the game's; the expert's plan is a list of action letters that, played
on a fresh game of the same seed, reaches the recorded score (``expert_scores.json``).

- Freeway: breadth-first search over (turn, row) on copies of the game: the fewest-turns
  collision-free crossing, i.e. the optimum ``100 - T``.
- Snake: a beam search over whole episodes: each turn every kept game is stepped with each
  legal move, duplicates (same body, heading and apples) are merged, and the best ``width``
  (reward, then room to move, then closeness to an apple) are kept; the best finished game's
  moves are the plan. It sees the apples the game will spawn (they are in the copied game).
- Overcooked: a beam search over macro-actions ("walk to a tile and interact"), a few games
  kept per turn, each ranked by a rollout of the reference cook (see
  :mod:`.expert_overcooked`).
"""

from __future__ import annotations

import copy
from collections import deque
from typing import Any

from computer_env.realtimegym.players.expert_overcooked import (
    OVERCOOKED_HORIZON,
    OVERCOOKED_WIDTH,
    overcooked_plan,
)
from computer_env.realtimegym.players.reference import _freeway_clone, _freeway_plan

SNAKE_BEAM = 500
"""Games kept per turn by the Snake beam search (about 10 s a seed on one core)."""
_SNAKE_MOVES = {"U": (0, 1), "D": (0, -1), "L": (-1, 0), "R": (1, 0)}
_REVERSE = {"U": "D", "D": "U", "L": "R", "R": "L"}


def expert_plan(
    game: str,
    raw: Any,
    *,
    snake_beam: int = SNAKE_BEAM,
    overcooked_width: int = OVERCOOKED_WIDTH,
    overcooked_horizon: int = OVERCOOKED_HORIZON,
) -> list[str]:
    """The expert's moves (action letters) for the fresh game ``raw`` (a RealtimeGym env)."""
    if game == "freeway":
        return [action for _turn, _pos, action in _freeway_plan(_freeway_clone(raw))]
    if game == "snake":
        return snake_plan(raw, width=snake_beam)
    if game == "overcooked":
        return overcooked_plan(raw, width=overcooked_width, horizon=overcooked_horizon)
    raise ValueError(f"unknown game {game!r}")


# ----- Snake ------------------------------------------------------------------------------


def snake_clone(raw: Any) -> Any:
    """A copy of a Snake game that steps without touching the original (the spawn order,
    ``coords``, is shared: the game only reads it)."""
    sim = copy.copy(raw)
    sim.snake = list(raw.snake)
    sim.food = list(raw.food)
    sim.food_attributes = [list(row) for row in raw.food_attributes]
    sim.observe = dict  # skip building the text observation on every simulated step
    return sim


def snake_moves(sim: Any) -> list[str]:
    """The moves that change the heading or keep it (a reversal is the game's no-op)."""
    return [a for a in _SNAKE_MOVES if a != _REVERSE[sim.dir]]


def _room(sim: Any) -> int:
    """Free cells the head can reach (walls, obstacles and body but the tail block), capped at
    the snake's length: a snake with room for its length is not yet trapped."""
    size, need = sim.B, len(sim.snake)
    blocked = set(sim.obstacle) | set(sim.snake[1:-1])
    start = sim.snake[-1]
    seen, todo = {start}, deque([start])
    while todo and len(seen) <= need:
        x, y = todo.popleft()
        for dx, dy in _SNAKE_MOVES.values():
            cell = (x + dx, y + dy)
            if (
                cell not in seen
                and cell not in blocked
                and 0 < cell[0] < size - 1
                and 0 < cell[1] < size - 1
            ):
                seen.add(cell)
                todo.append(cell)
    return min(len(seen) - 1, need)


def _apple_gap(sim: Any) -> int:
    hx, hy = sim.snake[-1]
    gaps = [abs(x - hx) + abs(y - hy) for x, y in sim.food if sim.food_attributes[x][y][1] > 0]
    return min(gaps, default=2 * sim.B)


def snake_plan(raw: Any, width: int = SNAKE_BEAM) -> list[str]:
    """Beam search over whole Snake episodes on copies of ``raw`` (see the module doc)."""
    beam: list[tuple[Any, list[str]]] = [(snake_clone(raw), [])]
    best: tuple[float, list[str]] = (float(raw.reward), [])
    while beam:
        children: dict[tuple[Any, ...], tuple[tuple[float, int, int], Any, list[str]]] = {}
        for sim, path in beam:
            for action in snake_moves(sim):
                child = snake_clone(sim)
                child.step(action)
                moves = [*path, action]
                if child.terminal:
                    if child.reward > best[0]:
                        best = (float(child.reward), moves)
                    continue
                key = (tuple(child.snake), child.dir, tuple(child.food))
                rank = (float(child.reward), _room(child), -_apple_gap(child))
                if key not in children or rank > children[key][0]:
                    children[key] = (rank, child, moves)
        kept = sorted(children.values(), key=lambda c: c[0], reverse=True)[:width]
        beam = [(child, moves) for _rank, child, moves in kept]
    return best[1]


__all__ = [
    "OVERCOOKED_HORIZON",
    "OVERCOOKED_WIDTH",
    "SNAKE_BEAM",
    "expert_plan",
    "overcooked_plan",
    "snake_clone",
    "snake_moves",
    "snake_plan",
]
