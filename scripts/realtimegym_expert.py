"""Regenerate RealtimeGym's normalisers (computer_env/realtimegym/scores/expert_scores.json).

For every game, load and seed: the expert's moves (computer_env.realtimegym.players.expert) replayed on
a fresh game give the expert score; the relaxed exact search (computer_env.realtimegym.scores.ceiling)
gives the ceiling; the reference player's own game gives the reference score (shown, never a
divisor). Prints the table; ``--out`` writes the JSON. One core; about fifteen minutes in all
(Overcooked: about a minute and a half a load).

    nice -n 10 .venv/bin/python scripts/realtimegym_expert.py --out computer_env/realtimegym/scores/expert_scores.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from computer_env.base import KeyPress  # noqa: E402
from computer_env.realtimegym import GameComputerEnv, ReferencePlayer  # noqa: E402
from computer_env.realtimegym.backend import RealtimeGymBackend  # noqa: E402
from computer_env.realtimegym.games import GAMES, LOADS, SEEDS  # noqa: E402
from computer_env.realtimegym.players.expert import (  # noqa: E402
    OVERCOOKED_HORIZON,
    OVERCOOKED_WIDTH,
    SNAKE_BEAM,
    expert_plan,
)
from computer_env.realtimegym.scores.bounds import ExpertScores, SeedScores  # noqa: E402
from computer_env.realtimegym.scores.ceiling import overcooked_ceiling, snake_ceiling  # noqa: E402

METHOD = {
    "expert": "computer_env/realtimegym/players/expert.py: Freeway breadth-first search over (turn, "
    "row); Snake beam search over whole episodes; Overcooked "
    "(computer_env/realtimegym/players/expert_overcooked.py) beam search over "
    "macro-actions (walk to a tile and interact), games ranked by rollouts of the "
    "reference cook. Each searches copies of RealtimeGym's "
    "own game; the score is its moves replayed on a fresh game of the seed.",
    "ceiling": "computer_env/realtimegym/scores/ceiling.py: Freeway = the exact search above; Snake "
    "= exact search of a body-free snake, at most the free cells less the start "
    "cell (36 - obstacles - 1); Overcooked = exact search of the agent's "
    "chef with free onions, pots ready the cooking time after each soup, no "
    "blocking partner.",
    "reference": "the rule-based reference player (computer_env/realtimegym/players/reference.py) "
    "in turn pacing.",
    "made_by": "scripts/realtimegym_expert.py",
}


def fresh(game: str, load: str, seed: int) -> RealtimeGymBackend:
    """A reset RealtimeGym game."""
    backend = RealtimeGymBackend(game, load, seed)
    backend.reset()
    return backend


def replay(game: str, load: str, seed: int, moves: str) -> float:
    """The score of ``moves`` played on a fresh game of the seed."""
    backend = fresh(game, load, seed)
    try:
        for action in moves:
            if backend.terminal:
                break
            backend.advance(action)
        return backend.score
    finally:
        backend.close()


def reference_score(game: str, load: str, seed: int) -> float:
    """The reference player's score (turn pacing, through the suite's own env)."""
    env = GameComputerEnv(game, load, seed)
    player = ReferencePlayer(env)
    try:
        while not env.done:
            env.step(KeyPress(key=player.next_key()))
        return float(env.score)
    finally:
        env.close()


def ceiling(game: str, load: str, seed: int, expert: float) -> float:
    """The relaxed game's optimum (Freeway: the exact search, i.e. the expert)."""
    if game == "freeway":
        return expert
    backend = fresh(game, load, seed)
    try:
        if game == "snake":  # the body-free optimum, and room to grow: 36 cells less
            room = (backend.raw.B - 2) ** 2 - len(backend.raw.obstacle) - 1  # obstacles, start
            return float(min(snake_ceiling(backend.raw), room))
        from realtimegym.environments.overcooked import Recipe  # noqa: PLC0415

        recipe = Recipe(("onion",) * 3)
        me = backend.raw.gym_env.base_env.state.players[0]
        return float(
            overcooked_ceiling(
                backend.raw.gym_env.base_mdp,
                tuple(me.position),
                tuple(me.orientation),
                serve_r=recipe.value,
                cook=recipe.time,
            )
        )
    finally:
        backend.close()


def score_case(game: str, load: str, seed: int, beam: int, width: int, horizon: int) -> SeedScores:
    """Everything recorded for one case."""
    backend = fresh(game, load, seed)
    try:
        moves = "".join(
            expert_plan(
                game,
                backend.raw,
                snake_beam=beam,
                overcooked_width=width,
                overcooked_horizon=horizon,
            )
        )
    finally:
        backend.close()
    expert = replay(game, load, seed, moves)
    return SeedScores(
        expert=expert,
        ceiling=ceiling(game, load, seed, expert),
        reference=reference_score(game, load, seed),
        moves=moves,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", default=",".join(GAMES))
    ap.add_argument("--loads", default=",".join(LOADS))
    ap.add_argument("--seeds", default=",".join(map(str, SEEDS)))
    ap.add_argument("--snake-beam", type=int, default=SNAKE_BEAM)
    ap.add_argument(
        "--width",
        type=int,
        default=OVERCOOKED_WIDTH,
        help="Overcooked: games kept per turn by the beam search",
    )
    ap.add_argument(
        "--horizon",
        type=int,
        default=OVERCOOKED_HORIZON,
        help="Overcooked: turns of the reference cook that rank a game",
    )
    ap.add_argument(
        "--out",
        type=Path,
        help="write the JSON table here (entries of other cases already in it stay)",
    )
    args = ap.parse_args(argv)
    cases: dict[str, dict[str, dict[str, SeedScores]]] = {}
    if args.out and args.out.is_file():  # regenerate only the selected cases
        cases = ExpertScores.model_validate_json(args.out.read_text()).cases
    print(f"{'case':<22}{'raw ref':>9}{'expert':>8}{'ceiling':>9}{'ref/expert':>12}{'s':>7}")
    for game in args.games.split(","):
        for load in args.loads.split(","):
            done: SeedScores | None = None
            for seed in map(int, args.seeds.split(",")):
                start = time.monotonic()
                if game == "overcooked" and done is not None:
                    entry = done  # one game whatever the seed (fixed layout, partner seed 42)
                else:
                    entry = score_case(game, load, seed, args.snake_beam, args.width, args.horizon)
                done = entry
                cases.setdefault(game, {}).setdefault(load, {})[str(seed)] = entry
                print(
                    f"{game}/{load}/seed{seed:<8}{entry.reference:>9g}{entry.expert:>8g}"
                    f"{entry.ceiling:>9g}{entry.reference / entry.expert:>12.2f}"
                    f"{time.monotonic() - start:>7.1f}",
                    flush=True,
                )
    if args.out:
        table = ExpertScores(
            method=METHOD,
            settings={
                "snake_beam": args.snake_beam,
                "overcooked_width": args.width,
                "overcooked_horizon": args.horizon,
            },
            cases=cases,
        )
        args.out.write_text(json.dumps(table.model_dump(), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
