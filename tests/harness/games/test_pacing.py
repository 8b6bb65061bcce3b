"""Pacing of GameComputerEnv on the toy scripted game (no RealtimeGym needed).

The toy game (``computer_env.realtimegym.toy``) is played as "snake" so its actions are
U/D/L/R/S and its default action is S: U raises the marker, D lowers it, others keep it.
Wall-clock tests never assert exact timings: they wait (with a timeout) for turns to pass, and
their period is long enough for a loaded 2-core machine (no assertion needs a tick to be late
or early).
"""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from PIL import Image

from computer_env.base import Click, KeyPress, MoveTo, Wait
from computer_env.realtimegym import GameComputerEnv, ScriptedGame, toy_factory
from tests.harness.helpers.polling import wait_for

PERIOD = 0.2


POLL = 0.005
"""How often the wall-clock tests look at the game (a fraction of a turn)."""


def _game(env: GameComputerEnv) -> ScriptedGame:
    return env.read_state(lambda raw: raw)


@pytest.fixture
def make_env() -> Iterator[Callable[..., GameComputerEnv]]:
    made: list[GameComputerEnv] = []

    def make(pacing: str = "turn", **kwargs: int) -> GameComputerEnv:
        env = GameComputerEnv(
            "snake",
            "E",
            0,
            pacing=pacing,  # type: ignore[arg-type]
            turn_seconds=PERIOD,
            game_factory=toy_factory(**kwargs),
        )
        made.append(env)
        return env

    yield make
    for env in made:
        env.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("clock-")]


def test_turn_mode_plays_one_turn_per_step(make_env: Callable[..., GameComputerEnv]) -> None:
    env = make_env("turn", goal=50)
    env.observe()
    time.sleep(3 * PERIOD)  # nothing moves while the agent thinks
    assert env.turns == 0
    for i, key in enumerate(["w", "w", "s", "space", "left"], start=1):
        result = env.step(KeyPress(key=key))
        assert env.turns == i and not result.done
    assert _game(env).applied == ["U", "U", "D", "S", "L"]
    assert env.score == 1 and env.default_turns == 0
    assert [r.source for r in env.history] == ["agent"] * 5
    assert "played on turn 5" in result.output


def test_turn_mode_unmapped_input_plays_the_default(
    make_env: Callable[..., GameComputerEnv],
) -> None:
    env = make_env("turn")
    result = env.step(KeyPress(key="enter"))
    assert "not a game control" in result.output and "default action S" in result.output
    env.step(MoveTo(x=3, y=3))
    env.step(Click(x=5, y=5))  # on the game frame, not on a button
    assert _game(env).applied == ["S", "S", "S"] and env.default_turns == 3
    assert all(r.reason.startswith("unmapped input") for r in env.history)


def test_clicks_on_panel_buttons_play_their_action(
    make_env: Callable[..., GameComputerEnv],
) -> None:
    env = make_env("turn", goal=50)
    obs = env.observe()
    image = Image.open(io.BytesIO(obs.image))
    assert image.size == (obs.width, obs.height) == (env.panel.width, 240 + 90)
    for button in env.panel.buttons:
        env.step(Click(x=button.center[0], y=button.center[1]))
    assert _game(env).applied == ["U", "D", "L", "R", "S"]
    assert env.default_turns == 0


def test_done_at_goal_and_after(make_env: Callable[..., GameComputerEnv]) -> None:
    env = make_env("turn", goal=2)
    assert not env.step(KeyPress(key="w")).done
    result = env.step(KeyPress(key="up"))
    assert result.done and env.done and "game is over" in result.output
    again = env.step(KeyPress(key="w"))
    assert again.done and env.turns == 2


def test_done_at_turn_limit(make_env: Callable[..., GameComputerEnv]) -> None:
    env = make_env("turn", goal=50, max_turns=3)
    results = [env.step(KeyPress(key="space")) for _ in range(3)]
    assert [r.done for r in results] == [False, False, True] and env.turns == 3


def test_finish_plays_the_rest_with_the_default(make_env: Callable[..., GameComputerEnv]) -> None:
    env = make_env("turn", goal=50, max_turns=10)
    env.step(KeyPress(key="w"))
    env.finish("done", infeasible=False)
    assert env.done and env.turns == 10 and env.default_turns == 9
    assert _game(env).applied == ["U"] + ["S"] * 9
    assert env.history[-1].reason == "after finish" and env.score == 1


def test_elapse_spends_turns_then_drops_the_late_action(
    make_env: Callable[..., GameComputerEnv],
) -> None:
    """Snake (like Freeway) drops an action meant for a turn that passed (RealtimeGym's
    skip_action): the turn it arrives on takes the default, recorded as dropped."""
    env = make_env("turn", goal=50)
    env.observe()
    assert env.elapse(3) == 3
    result = env.step(KeyPress(key="w"))
    assert _game(env).applied == ["S", "S", "S", "S"] and env.default_turns == 4
    assert env.dropped_actions == 1 and env.history[-1].dropped == "U"
    assert "meant for turn 1" in env.history[-1].reason and "Too late" in result.output
    env.observe()  # a fresh look: the next action is on time again
    env.step(KeyPress(key="w"))
    assert _game(env).applied[-1] == "U" and env.dropped_actions == 1


def test_no_lost_turns_no_drop(make_env: Callable[..., GameComputerEnv]) -> None:
    env = make_env("turn", goal=50)
    env.observe()
    assert env.elapse(0) == 0
    env.step(KeyPress(key="w"))
    assert _game(env).applied == ["U"] and env.dropped_actions == 0


def test_overcooked_plays_late_actions_late() -> None:
    """Overcooked keeps late plan entries in RealtimeGym (skip_action False): played late."""
    env = GameComputerEnv("overcooked", "E", 0, game_factory=toy_factory(goal=50))
    try:
        env.observe()
        env.elapse(2)
        env.step(KeyPress(key="a"))
        game = env.read_state(lambda raw: raw)
        assert game.applied == ["S", "S", "L"] and env.dropped_actions == 0
        assert env.history[-1].lag == 2
    finally:
        env.close()


def test_snake_stay_button_reads_keep_going(make_env: Callable[..., GameComputerEnv]) -> None:
    env = make_env("turn")
    panel = env.panel
    assert [b.label for b in panel.buttons if panel.action_at(*b.center) == "S"] == ["Keep going"]


def test_wallclock_clock_advances_on_its_own(make_env: Callable[..., GameComputerEnv]) -> None:
    env = make_env("wallclock", goal=50)
    time.sleep(3 * PERIOD)
    assert env.turns == 0  # the clock starts when the agent first looks
    env.observe()
    wait_for(lambda: env.turns >= 3, "3 turns to pass", 10, interval=POLL)
    assert env.default_turns >= 3
    assert all(r.source == "default" and r.reason == "no input in time" for r in env.history)


def test_wallclock_slow_agent_lands_late(make_env: Callable[..., GameComputerEnv]) -> None:
    env = make_env("wallclock", goal=50)
    env.observe()
    seen = env.seen_turn
    assert seen is not None
    wait_for(
        lambda: env.turns >= seen + 2, "2 turns to pass while the agent thinks", 10, interval=POLL
    )
    arrived = env.turns
    result = env.step(KeyPress(key="w"))
    record = next(r for r in env.history if r.source == "agent")
    assert record.turn >= arrived + 1 >= seen + 3  # landed on a later turn than the one seen
    assert record.seen_turn == seen and record.lag is not None and record.lag >= 2
    assert _game(env).applied[record.turn - 1] == "U"
    assert all(a == "S" for a in _game(env).applied[: record.turn - 1])
    assert env.default_turns >= 2
    assert f"played on turn {record.turn}" in result.output and "after the frame" in result.output


def test_wallclock_fast_agent_acts_every_turn(make_env: Callable[..., GameComputerEnv]) -> None:
    env = make_env("wallclock", goal=4)
    while not env.done:
        env.observe()
        env.step(KeyPress(key="w"))
    assert env.score == 4 and _game(env).applied.count("U") == 4
    agent = [r for r in env.history if r.source == "agent"]
    assert len(agent) == 4 and [r.turn for r in agent] == sorted(r.turn for r in agent)


def test_wallclock_wait_lets_the_game_run(make_env: Callable[..., GameComputerEnv]) -> None:
    env = make_env("wallclock", goal=50)
    env.observe()
    before = env.turns
    result = env.step(Wait(seconds=4 * PERIOD))
    assert "turn(s) passed" in result.output
    wait_for(lambda: env.turns > before, "a turn to pass", 10, interval=POLL)
    assert env.default_turns == env.turns


def test_wallclock_game_ends_and_clock_stops(make_env: Callable[..., GameComputerEnv]) -> None:
    env = make_env("wallclock", goal=50, max_turns=4)
    env.observe()
    wait_for(lambda: env.done, "the game to end", 10, interval=POLL)
    wait_for(
        lambda: not any(t.name.startswith("clock-") for t in threading.enumerate()),
        "the clock to stop",
        10,
        interval=POLL,
    )
    assert env.turns == 4 and env.step(KeyPress(key="w")).done


def test_wallclock_finish_stops_the_clock(make_env: Callable[..., GameComputerEnv]) -> None:
    env = make_env("wallclock", goal=50, max_turns=30)
    env.observe()
    env.step(KeyPress(key="w"))
    env.finish("")
    assert env.done and env.turns == 30
    assert not any(t.name.startswith("clock-") for t in threading.enumerate())
