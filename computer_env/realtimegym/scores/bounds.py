"""Per-case normalisers: the expert's score (the divisor) and the provable ceiling (shown).

RealtimeGym reports the raw reward (``env.reward``); the suite reports it first. The normalised
score is ``raw / expert``, where ``expert`` is what the search-based player of
:mod:`computer_env.realtimegym.players.expert` reaches on that seed of RealtimeGym's own game (its moves
are recorded and replayed by the tests). It is never clipped: a player better than the expert
scores above 1, a Snake crash before any apple (-1) below 0. Beside it stands the ceiling of
:mod:`computer_env.realtimegym.scores.ceiling`, an exact search of a relaxed game that no player can
beat. Both come from ``expert_scores.json`` (``scripts/realtimegym_expert.py`` regenerates it
and prints the table).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from computer_env.errors import ConfigurationError
from computer_env.realtimegym.games import check_load, game_spec

SCORES_FILE = Path(__file__).with_name("expert_scores.json")


class SeedScores(BaseModel):
    """One seed of one game and load."""

    model_config = ConfigDict(extra="forbid")

    expert: float
    """What the expert's recorded moves score on RealtimeGym's game (the divisor)."""
    ceiling: float
    """The exact optimum of a relaxed game: no player scores more."""
    reference: float
    """The rule-based reference player's score (shown for comparison, never a divisor)."""
    moves: str
    """The expert's action letters, one a turn (replayed by the tests)."""


class ExpertScores(BaseModel):
    """The shipped table: how it was made, and ``cases[game][load][seed]``."""

    model_config = ConfigDict(extra="forbid")

    method: dict[str, str]
    settings: dict[str, int]
    cases: dict[str, dict[str, dict[str, SeedScores]]]


@lru_cache(maxsize=1)
def expert_table(path: Path = SCORES_FILE) -> ExpertScores:
    """The shipped expert scores (a bad file names itself and the field)."""
    try:
        return ExpertScores.model_validate(json.loads(path.read_text()))
    except (OSError, ValueError, ValidationError) as exc:
        raise ConfigurationError(f"{path}: not a valid expert score table ({exc})") from exc


def seed_scores(game: str, load: str, seed: int) -> SeedScores:
    """The recorded expert, ceiling and reference scores of one case."""
    name = game_spec(game).name
    try:
        return expert_table().cases[name][check_load(load)][str(seed)]
    except KeyError:
        raise ConfigurationError(
            f"{SCORES_FILE}: no entry cases.{name}.{load}.{seed}; regenerate it with "
            "scripts/realtimegym_expert.py"
        ) from None


def expert_score(game: str, load: str, seed: int) -> float:
    """The normaliser of one case: the expert's score on that seed."""
    return seed_scores(game, load, seed).expert


def ceiling_score(game: str, load: str, seed: int) -> float:
    """The provable ceiling of one case (an exact search of a relaxed game)."""
    return seed_scores(game, load, seed).ceiling


def normalize_score(game: str, load: str, seed: int, raw: float) -> float:
    """``raw / expert``, unclipped: above 1 beats the expert."""
    return float(raw) / expert_score(game, load, seed)


best_score = expert_score
"""The former name of :func:`expert_score` (kept for callers of the package API)."""
