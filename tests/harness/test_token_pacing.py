"""Token-budget pacing: while the model decodes a step, ``tokens // N`` game turns pass with the
default action. Real agent loop against the real reference endpoint (over HTTP), on the small
scripted game of ``computer_env.realtimegym.toy`` (no RealtimeGym needed)."""

from __future__ import annotations

from pathlib import Path

from computer_env.realtimegym import GameComputerEnv, toy_factory
from fixtures.game_case import token_clock
from holo_agent import HoloComputerAgent, Recorder
from holo_agent.reference import ReferenceEndpoint

PRESS_UP = {"note": None, "thought": "climb", "tool_call": {"tool_name": "press_key", "key": "w"}}


def test_each_steps_tokens_cost_turns_before_its_action_lands(tmp_path: Path) -> None:
    factory = toy_factory(goal=1000, max_turns=60)
    env = GameComputerEnv("freeway", "E", 0, pacing="turn", game_factory=factory)
    with ReferenceEndpoint(policy=lambda instruction, index, request: PRESS_UP) as endpoint:
        agent = HoloComputerAgent(endpoint.url, "reference-policy", recorder=Recorder(tmp_path))
        agent.before_action = token_clock(env, turn_tokens=10)
        traj = agent.run(env, max_steps=6)
    env.close()
    tokens = [r.completion_tokens for r in traj.steps]
    assert all(t and t >= 10 for t in tokens), tokens
    lost = sum(t // 10 for t in tokens)
    assert env.default_turns == lost > 0
    assert env.turns == lost + len(tokens)
    game = factory.games[0]
    # the game saw the default action for the thinking turns, then the agent's action, per step
    assert game.applied.count(env.spec.default_action) >= lost
    assert traj.end == "max_steps"
