"""A rule-based reference player (the harness check; no model).

``ReferencePlayer(env).next_key()`` reads the game state the env exposes (under its lock) and
returns the key to press. What it achieves:

- Freeway: a breadth-first search over (turn, lane) on copies of the real game finds the
  fewest-turns collision-free way to the top and plays its first move (the plan is kept while
  the game follows it). It reaches the top on every seed it can in turn pacing.
- Snake: greedy toward the nearest apple it can reach before the apple expires, never moving
  into a wall, an obstacle or the body, and preferring moves after which the free area it can
  still reach is at least its length (a flood fill), so it rarely traps itself.
- Overcooked: a scripted cook: fetch onions (from a dispenser or a counter) into the fullest
  unfull pot, then take a plate to a cooking/ready pot, pick the soup up and serve it. Moves
  follow a shortest path that treats the other chef as an obstacle.
"""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Iterable
from typing import Any

from computer_env.realtimegym.env import GameComputerEnv
from computer_env.realtimegym.keymap import action_to_key

Cell = tuple[int, int]


class ReferencePlayer:
    """Chooses the next key for a :class:`GameComputerEnv` on a real RealtimeGym game."""

    def __init__(self, env: GameComputerEnv) -> None:
        self.env = env
        self._plan: list[tuple[int, int, str]] = []  # (turn, pos) expected before each action

    def next_key(self) -> str:
        """The key name to press now (e.g. ``"w"``, ``"space"``, ``"f"``)."""
        return action_to_key(self.next_action(), self.env.game)

    def next_action(self) -> str:
        """The game action (letter) to play now (the default once the game is over: a clock
        may end it between the agent's observation and its request)."""
        if self.env.done:
            return self.env.spec.default_action
        if self.env.game == "freeway":
            return self._freeway()
        if self.env.game == "snake":
            return _snake_action(self.env.read_state(_snake_view))
        return _overcooked_action(*self.env.read_state(_overcooked_view))

    # ----- Freeway --------------------------------------------------------------------------

    def _freeway(self) -> str:
        sim = self.env.read_state(_freeway_clone)
        if sim.terminal:  # ended after the check above (the wall clock runs on its own)
            return self.env.spec.default_action
        if self._plan and self._plan[0][:2] == (sim.game_turn, sim.pos):
            return self._plan.pop(0)[2]
        self._plan = _freeway_plan(sim)
        return self._plan.pop(0)[2] if self._plan else "S"


def _freeway_clone(raw: Any) -> Any:
    """A cheap copy of a Freeway game that can be stepped without touching the original."""
    sim = copy.copy(raw)
    sim.cars = [list(car) for car in raw.cars]
    sim.observe = dict  # skip building the text observation on every simulated step
    return sim


def _freeway_plan(start: Any) -> list[tuple[int, int, str]]:
    """Fewest-turns collision-free moves to the top, as ``(turn, pos, action)`` steps."""
    layer: dict[int, tuple[Any, list[tuple[int, int, str]]]] = {start.pos: (start, [])}
    while layer:
        nxt: dict[int, tuple[Any, list[tuple[int, int, str]]]] = {}
        for pos, (sim, path) in layer.items():
            for action in ("U", "S", "D"):
                step = (sim.game_turn, pos, action)
                if pos == 1 and action == "U":
                    return [*path, step]
                child = _freeway_clone(sim)
                child.step(action)
                if child.r or child.terminal or child.pos in nxt:
                    continue
                nxt[child.pos] = (child, [*path, step])
        layer = nxt
    return []


# ----- Snake ------------------------------------------------------------------------------

_SNAKE_MOVES: dict[str, Cell] = {"U": (0, 1), "D": (0, -1), "L": (-1, 0), "R": (1, 0)}
_REVERSE = {"U": "D", "D": "U", "L": "R", "R": "L"}


def _snake_view(raw: Any) -> dict[str, Any]:
    return {
        "snake": list(raw.snake),
        "dir": raw.dir,
        "size": raw.B,
        "obstacles": set(raw.obstacle),
        "foods": {f: raw.food_attributes[f[0]][f[1]] for f in raw.food},
        # where the next apples will appear (RealtimeGym spawns them in a seeded order)
        "next_apples": {raw.coords[(raw.idx + k) % len(raw.coords)] for k in range(2)},
    }


def _snake_action(view: dict[str, Any]) -> str:
    snake: list[Cell] = view["snake"]  # tail first, head last
    size: int = view["size"]
    blocked = set(view["obstacles"])
    foods: dict[Cell, tuple[int, int]] = view["foods"]
    head = snake[-1]

    def free(cell: Cell, body: Iterable[Cell]) -> bool:
        x, y = cell
        return 0 < x < size - 1 and 0 < y < size - 1 and cell not in blocked and cell not in body

    best: tuple[tuple[int, int, int], str] | None = None
    for action, (dx, dy) in _SNAKE_MOVES.items():
        if action == _REVERSE[view["dir"]]:
            continue
        new = (head[0] + dx, head[1] + dy)
        eats = new in foods and foods[new][1] > 0
        if not free(new, snake[1:]) or (eats and new == snake[0]):
            continue
        body = snake + [new] if eats else snake[1:] + [new]
        # Safe: it survives the next moves (a depth-first look-ahead without growth) and its
        # head can still reach its tail; then either; then the least bad move.
        dist = _distances(new, set(body[1:-1]) | blocked, size)
        apples = {f for f, (_, value) in foods.items() if value > 0 and f != new}
        apples |= view.get("next_apples", set())
        lives = _survives(body, action, SNAKE_LOOKAHEAD, free, apples, [SNAKE_LOOKAHEAD_NODES])
        danger = 0 if lives and (len(body) <= 2 or body[0] in dist) else 1 if lives else 2
        reach = min(
            (
                dist[f]
                for f, (life, value) in foods.items()
                if value > 0 and f in dist and dist[f] < life
            ),
            default=size * size,
        )
        key = (danger, 0 if eats else 1, reach)
        if best is None or key < best[0]:
            best = (key, action)
    return best[1] if best else "S"


SNAKE_LOOKAHEAD = 12
SNAKE_LOOKAHEAD_NODES = 20_000
"""Moves the snake must be able to survive after a candidate move, and the search's budget
(an exhausted budget counts as surviving: the search only stalls in open space)."""


def _survives(
    body: list[Cell], heading: str, depth: int, free: Any, apples: set[Cell], budget: list[int]
) -> bool:
    """Whether ``body`` (tail first) heading ``heading`` can make ``depth`` more moves (never
    onto its tail while an apple lies there: RealtimeGym kills a head that meets the tail it
    would grow)."""
    if depth == 0 or budget[0] <= 0:
        return True
    budget[0] -= 1
    head = body[-1]
    for action, (dx, dy) in _SNAKE_MOVES.items():
        if action == _REVERSE[heading]:
            continue
        new = (head[0] + dx, head[1] + dy)
        if new == body[0] and new in apples:
            continue
        if free(new, body[1:]) and _survives(
            body[1:] + [new], action, depth - 1, free, apples, budget
        ):
            return True
    return False


def _distances(start: Cell, blocked: set[Cell], size: int) -> dict[Cell, int]:
    """Steps from ``start`` to every cell it can reach around ``blocked`` (walls excluded)."""
    dist = {start: 0}
    todo = deque([start])
    while todo:
        x, y = todo.popleft()
        for dx, dy in _SNAKE_MOVES.values():
            cell = (x + dx, y + dy)
            if cell in dist or not (0 < cell[0] < size - 1 and 0 < cell[1] < size - 1):
                continue
            dist[cell] = dist[(x, y)] + 1
            if cell not in blocked:
                todo.append(cell)
    return {c: d for c, d in dist.items() if c not in blocked or c == start}


# ----- Overcooked -------------------------------------------------------------------------

# RealtimeGym's letters: U = (0, +1) (a row down on screen), D = (0, -1), L = (-1, 0), R = (1, 0).
_OC_LETTER: dict[Cell, str] = {(0, 1): "U", (0, -1): "D", (-1, 0): "L", (1, 0): "R"}


def _overcooked_view(raw: Any) -> tuple[Any, Any]:
    return raw.gym_env.base_mdp, raw.gym_env.base_env.state.deepcopy()


def _overcooked_action(mdp: Any, state: Any) -> str:
    me, other = state.players[0], state.players[1]
    held = me.held_object.name if me.held_object is not None else None
    pots = list(mdp.get_pot_locations())
    soups = {p: o for p, o in state.objects.items() if p in pots and o.name == "soup"}
    loose = {p: o.name for p, o in state.objects.items() if p not in pots}
    ready = [p for p in pots if p in soups and soups[p].is_ready]
    cooking = [p for p in pots if p in soups and soups[p].is_cooking]
    unfull = sorted(
        (p for p in pots if p not in soups or (soups[p].is_idle and len(soups[p].ingredients) < 3)),
        key=lambda p: -len(soups[p].ingredients) if p in soups else 0,
    )
    other_dish = other.held_object is not None and other.held_object.name in ("dish", "soup")

    if held == "soup":
        targets = list(mdp.get_serving_locations())
    elif held == "dish":
        targets = ready or cooking or pots
    elif held == "onion":
        targets = unfull[:1] or unfull
        if not targets:
            return "S"
    elif held is None and (ready or cooking) and not other_dish:
        targets = list(mdp.get_dish_dispenser_locations()) + [
            p for p, n in loose.items() if n == "dish"
        ]
    elif held is None and unfull:
        targets = list(mdp.get_onion_dispenser_locations()) + [
            p for p, n in loose.items() if n == "onion"
        ]
    else:
        return "S"
    return _walk_and_interact(mdp, me, other.position, targets)


def _walk_and_interact(mdp: Any, me: Any, other: Cell, targets: list[Cell]) -> str:
    """The next action toward facing one of ``targets`` and interacting with it."""
    walkable = {
        (x, y) for y, row in enumerate(mdp.terrain_mtx) for x, t in enumerate(row) if t == " "
    }
    goals: dict[Cell, Cell] = {}  # standing cell -> the target it faces
    for tx, ty in targets:
        for dx, dy in _OC_LETTER:
            stand = (tx - dx, ty - dy)
            if stand in walkable:
                goals.setdefault(stand, (dx, dy))
    pos = tuple(me.position)
    if pos in goals:
        facing = goals[pos]
        return "I" if tuple(me.orientation) == facing else _OC_LETTER[facing]
    first = _first_step(pos, set(goals), walkable - {tuple(other)})
    return _OC_LETTER[first] if first else "S"


def _first_step(start: Cell, goals: set[Cell], walkable: set[Cell]) -> Cell | None:
    """The first move of a shortest path from ``start`` to any goal (None when unreachable)."""
    todo: deque[tuple[Cell, Cell | None]] = deque([(start, None)])
    seen = {start}
    while todo:
        (x, y), first = todo.popleft()
        for delta in _OC_LETTER:
            cell = (x + delta[0], y + delta[1])
            if cell in seen or cell not in walkable:
                continue
            step = first or delta
            if cell in goals:
                return step
            seen.add(cell)
            todo.append((cell, step))
    return None
