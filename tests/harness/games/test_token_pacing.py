"""Budget pacing with RealtimeGym's semantics, through the real agent loop against the real
reference endpoint (over HTTP), on the small scripted game of ``computer_env.realtimegym.toy``
(no RealtimeGym needed).

A step whose model turns (re-asks included) decoded ``T`` tokens at ``N`` a turn loses
``ceil(T/N) - 1`` turns to the default action; its action, meant for a turn that has passed, is
dropped on Freeway and Snake. Seconds pacing charges the model's latency the same way, and
nothing of the harness' own work.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from computer_env.realtimegym import GameComputerEnv, toy_factory
from computer_env.realtimegym.budget import lost_turns
from fixtures.benchmarks.realtimegym import seconds_clock, token_clock
from holo_agent import HoloComputerAgent, Recorder
from holo_agent.reference import ReferenceEndpoint

PRESS_UP = {"note": None, "thought": "climb", "tool_call": {"tool_name": "press_key", "key": "w"}}


def test_lost_turns_is_ceil_minus_one() -> None:
    assert [lost_turns(t, 10) for t in (0, 1, 10, 11, 20, 21, 95)] == [0, 0, 0, 1, 1, 2, 9]
    assert lost_turns(0.4, 1.0) == 0 and lost_turns(1.2, 1.0) == 1 and lost_turns(3.0, 1.0) == 2
    with pytest.raises(ValueError):
        lost_turns(5, 0)


def _play(tmp_path: Path, game: str, clock, *, faults: str | None = None, steps: int = 6):
    factory = toy_factory(goal=1000, max_turns=60)
    env = GameComputerEnv(game, "E", 0, pacing="turn", game_factory=factory)
    with ReferenceEndpoint(
        policy=lambda instruction, index, request: PRESS_UP, faults=faults
    ) as endpoint:
        agent = HoloComputerAgent(
            endpoint.url, "reference-policy", recorder=Recorder(tmp_path), max_reasks=2
        )
        agent.before_action = clock(env)
        traj = agent.run(env, max_steps=steps)
    env.close()
    return env, getattr(factory, "games")[0], traj  # toy_factory keeps the games it made


def test_tokens_cost_ceil_turns_and_late_actions_are_dropped(tmp_path: Path) -> None:
    env, game, traj = _play(tmp_path, "freeway", lambda env: token_clock(env, turn_tokens=10))
    tokens = [r.completion_tokens for r in traj.steps]
    assert all(t and t > 10 for t in tokens), tokens  # every step costs at least one turn
    lost = sum(-(-t // 10) - 1 for t in tokens)
    assert env.turns == lost + len(tokens)
    # Freeway drops each late action: every turn took the default, each step's last one as
    # a recorded drop of the agent's U (Freeway's default is also U; the records tell them apart)
    assert env.dropped_actions == len(tokens)
    assert all(r.dropped == "U" for r in env.history if r.dropped)
    assert [r.source for r in env.history].count("agent") == 0
    assert all(r.reason.startswith("thinking: ") for r in env.history if not r.dropped)
    assert game.applied == ["U"] * env.turns and traj.end == "max_steps"


def test_overcooked_keeps_late_actions(tmp_path: Path) -> None:
    env, game, traj = _play(tmp_path, "overcooked", lambda env: token_clock(env, turn_tokens=10))
    agent_turns = [r for r in env.history if r.source == "agent"]
    assert len(agent_turns) == len(traj.steps) and env.dropped_actions == 0
    assert all(r.lag and r.lag > 0 for r in agent_turns)  # each landed late, after lost turns
    assert game.applied.count("D") == len(traj.steps)  # screen-up is Overcooked's D


def test_reasks_are_charged_too(tmp_path: Path) -> None:
    big = 10_000  # no budget is spent by one answer alone: only the re-asks make turns pass
    env, _, traj = _play(
        tmp_path,
        "snake",
        lambda env: token_clock(env, turn_tokens=big),
        faults="malformed=2",
        steps=2,
    )
    first = [r for r in traj.steps if r.step == 0]
    assert [r.reask for r in first] == [0, 1, 2] and first[0].error  # two malformed, re-asked
    spent = sum(r.completion_tokens or 0 for r in first)
    assert spent <= big and env.turns == 2  # still within one turn's budget: nothing lost
    env2, _, traj2 = _play(
        tmp_path / "b",
        "snake",
        lambda env: token_clock(env, turn_tokens=max(1, spent - 1)),
        faults="malformed=2",
        steps=1,
    )
    assert env2.turns == 2 and env2.dropped_actions == 1  # one answer's worth fits; re-asks don't


def test_seconds_pacing_charges_the_models_latency_only(tmp_path: Path) -> None:
    """The endpoint takes 1.5 s per answer at 1 s a turn: one turn lost per step. The harness'
    own work between requests (screenshots, images, HTTP) is not charged, however slow."""
    env, game, traj = _play(
        tmp_path, "freeway", lambda env: seconds_clock(env, 1.0), faults="delay=1.5", steps=3
    )
    latencies = [r.latency_s for r in traj.steps]
    assert all(1.5 <= s for s in latencies), latencies
    expected = sum(lost_turns(s, 1.0) for s in latencies)
    assert env.turns == expected + 3 and env.dropped_actions == 3 and game.turn == env.turns
