"""RealtimeGym games (Freeway, Snake, Overcooked) as a ``ComputerEnv``.

RealtimeGym itself is optional and imported lazily: :func:`realtimegym_available` says whether
it can be used and why not.
"""

from computer_env.realtimegym.backend import (
    GameBackend,
    GameFactory,
    RealtimeGymBackend,
    make_realtimegym_backend,
    realtimegym_available,
)
from computer_env.realtimegym.cases import SEED_INDEPENDENT, GameCase, all_cases
from computer_env.realtimegym.clock import TurnClock
from computer_env.realtimegym.env import GameComputerEnv
from computer_env.realtimegym.games import (
    GAMES,
    LOADS,
    MAX_TURNS,
    SEEDS,
    SPECS,
    GameSpec,
    game_spec,
)
from computer_env.realtimegym.keymap import action_to_key, key_to_action
from computer_env.realtimegym.panel import PANEL_HEIGHT, Button, ControlPanel
from computer_env.realtimegym.players.reference import ReferencePlayer
from computer_env.realtimegym.scores.bounds import (
    best_score,
    ceiling_score,
    expert_score,
    normalize_score,
)
from computer_env.realtimegym.toy import ScriptedGame, toy_factory
from computer_env.realtimegym.turns import Pacing, TurnRecord

__all__ = [
    "GAMES",
    "LOADS",
    "MAX_TURNS",
    "PANEL_HEIGHT",
    "SEEDS",
    "SEED_INDEPENDENT",
    "SPECS",
    "Button",
    "ControlPanel",
    "GameBackend",
    "GameCase",
    "GameComputerEnv",
    "GameFactory",
    "GameSpec",
    "Pacing",
    "RealtimeGymBackend",
    "ReferencePlayer",
    "ScriptedGame",
    "TurnClock",
    "TurnRecord",
    "action_to_key",
    "all_cases",
    "best_score",
    "ceiling_score",
    "expert_score",
    "game_spec",
    "key_to_action",
    "make_realtimegym_backend",
    "normalize_score",
    "realtimegym_available",
    "toy_factory",
]
