"""``GameComputerEnv``: a RealtimeGym game played through screenshots, keys and panel clicks.

Pacing
------
``turn``
    The game waits for the agent: each ``step`` plays exactly one turn. Time pressure in
    RealtimeGym's sense is charged by the harness (:mod:`computer_env.realtimegym.budget`): after
    the model answered, :meth:`GameComputerEnv.elapse` lets the turns its thinking cost pass
    with the default action (``ceil(cost / budget) - 1`` turns for decoded tokens or model
    seconds). An action that comes after such lost turns was meant for a turn that has passed:
    games whose ``drops_late_actions`` is set (Freeway, Snake: RealtimeGym's ``skip_action``)
    drop it and play the default action, recorded as ``dropped``; Overcooked plays it late.
``wallclock``
    The game advances on its own every ``turn_seconds`` of wall-clock time (a background
    :class:`TurnClock`; all game access is under one lock), whatever the time is spent on,
    the harness' own work included. The clock starts when the agent first calls ``observe()``.
    A turn with no input takes the game's default action. An input lands on the turn current
    when it arrives: ``step`` queues it for the next tick and returns once that tick played it.

The episode ends (``done``) when the game is terminal or ``max_turns`` turns were played.
``finish()`` ends it early: the remaining turns are played with the default action, as the
reference harness does for an agent that stops answering, so ``score`` is always the score of a
whole episode once ``finish()`` returned.

What the agent sees (frame + control panel) is composed by :mod:`~.screen`; the turn records and
the text a step returns live in :mod:`~.turns`. This module is the stepping and the pacing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from computer_env.base import ComputerEnv, InputEvent, Observation, StepResult, Wait
from computer_env.realtimegym.backend import GameBackend, GameFactory, make_realtimegym_backend
from computer_env.realtimegym.clock import TurnClock
from computer_env.realtimegym.games import MAX_TURNS, check_load, game_spec
from computer_env.realtimegym.inputs import describe, input_to_action
from computer_env.realtimegym.screen import GameScreen, status_line, to_observation
from computer_env.realtimegym.turns import Pacing, PendingTurn, TurnRecord, explain

log = logging.getLogger(__name__)
T = TypeVar("T")


class GameComputerEnv(ComputerEnv):
    """A game frame above a control panel; keys and button clicks pick the game's actions."""

    def __init__(
        self,
        game: str,
        load: str,
        seed: int,
        *,
        pacing: Pacing = "turn",
        turn_seconds: float = 1.0,
        frame_scale: float = 1.0,
        max_turns: int | None = None,
        game_factory: GameFactory | None = None,
    ) -> None:
        self.spec = game_spec(game)
        self.game, self.load, self.seed = self.spec.name, check_load(load), seed
        if pacing not in ("turn", "wallclock"):
            raise ValueError(f"pacing must be 'turn' or 'wallclock', got {pacing!r}")
        if turn_seconds <= 0 or frame_scale <= 0:
            raise ValueError("turn_seconds and frame_scale must be > 0")
        self.pacing: Pacing = pacing
        self.turn_seconds = turn_seconds
        self.frame_scale = frame_scale
        self.max_turns = max_turns or MAX_TURNS
        self._cond = threading.Condition(threading.RLock())
        self._backend: GameBackend = (game_factory or make_realtimegym_backend)(
            self.game, load, seed
        )
        self._backend.reset()
        self._screen = GameScreen(self._backend, self.game, frame_scale)
        self.panel = self._screen.panel
        self._history: list[TurnRecord] = []
        self._pending: PendingTurn | None = None
        self._seen_turn: int | None = None
        self._lost_since_seen = 0
        self._finished = False
        self.answer: str | None = None
        self._t0 = time.monotonic()
        self._clock = TurnClock(self._tick, turn_seconds, name=f"clock-{self.game}")

    # ----- contract -------------------------------------------------------------------------

    @property
    def instruction(self) -> str:
        """The goal of the game (no hints about its internals)."""
        return self.spec.instruction

    def observe(self) -> Observation:
        """The current frame with the control panel (starts the realtime clock on first call)."""
        with self._cond:
            self._raise_clock_error()
            image = self._screen.compose(
                status_line(self._backend.turn, self.max_turns, self._backend.score)
            )
            self._seen_turn = self._backend.turn
            self._lost_since_seen = 0
            if self.pacing == "wallclock" and self._clock.started_at is None and not self.done:
                self._t0 = time.monotonic()
                self._clock.start()
        return to_observation(image)

    def step(self, event: InputEvent) -> StepResult:
        """Apply one input: a key or a button click plays an action, anything else the default."""
        with self._cond:
            self._raise_clock_error()
            if self.done:
                return StepResult(output="The game is over.", done=True, info=self._info())
            if isinstance(event, Wait) and self.pacing == "wallclock":
                return self._wait(event.seconds)
            action = input_to_action(event, self.game, self.panel)
            what = describe(event)
            if action is None:
                pending = PendingTurn(
                    self.spec.default_action, "default", f"unmapped input ({what})", self._seen_turn
                )
            else:
                pending = PendingTurn(action, "agent", what, self._seen_turn)
            if self.pacing == "turn":
                record = self._play(self._drop_if_late(pending))
            else:
                record = self._queue_and_wait(pending)
            over = self._backend.score if self.done else None
            return StepResult(
                output=explain(record, what, action is None, over),
                done=self.done,
                info=self._info(),
            )

    def finish(self, answer: str, *, infeasible: bool = False) -> None:
        """End the episode: stop the clock and play the remaining turns with the default action."""
        self._clock.stop()
        with self._cond:
            self.answer = answer
            while not self.done:
                self._play(PendingTurn(self.spec.default_action, "default", "after finish", None))
            self._finished = True
            self._cond.notify_all()

    def close(self) -> None:
        """Stop the clock and release the game (the score stays readable)."""
        self._clock.stop()
        with self._cond:
            self._finished = self._finished or self.done
            closer = getattr(self._backend, "close", None)
            if callable(closer):
                closer()

    # ----- public state ---------------------------------------------------------------------

    @property
    def done(self) -> bool:
        """The game is terminal, the turn limit was reached, or the episode was finished."""
        with self._cond:
            return self._finished or self._backend.terminal or self._backend.turn >= self.max_turns

    @property
    def score(self) -> float:
        """The game's own reward so far."""
        with self._cond:
            return self._backend.score

    @property
    def turns(self) -> int:
        """Turns played."""
        with self._cond:
            return self._backend.turn

    @property
    def default_turns(self) -> int:
        """Turns that took the default action (no input in time, unmapped input, after finish)."""
        with self._cond:
            return sum(1 for r in self._history if r.source == "default")

    @property
    def dropped_actions(self) -> int:
        """Agent actions dropped because they came after turns their thinking lost."""
        with self._cond:
            return sum(1 for r in self._history if r.dropped is not None)

    @property
    def seen_turn(self) -> int | None:
        """Turns played when the agent last called ``observe()`` (None before the first call)."""
        with self._cond:
            return self._seen_turn

    @property
    def history(self) -> list[TurnRecord]:
        """Every turn played, in order."""
        with self._cond:
            return list(self._history)

    def read_state(self, reader: Callable[[Any], T]) -> T:
        """Call ``reader(game_object)`` under the game lock (the clock cannot tick meanwhile)."""
        with self._cond:
            return reader(self._backend.raw)

    def elapse(self, turns: int, reason: str = "time budget spent") -> int:
        """Let ``turns`` turns pass with the default action (budget pacing); returns how many.

        The agent's next action then comes after turns it lost (see :meth:`step`)."""
        played = 0
        with self._cond:
            while played < turns and not self.done:
                self._play(
                    PendingTurn(self.spec.default_action, "default", reason, self._seen_turn)
                )
                played += 1
            self._lost_since_seen += played
        return played

    # ----- internals ------------------------------------------------------------------------

    def _drop_if_late(self, pending: PendingTurn) -> PendingTurn:
        """RealtimeGym's rule for an action that comes after lost turns (see the docstring)."""
        if (
            pending.source != "agent"
            or not self._lost_since_seen
            or not self.spec.drops_late_actions
        ):
            return pending
        meant = (self._seen_turn or 0) + 1
        return PendingTurn(
            self.spec.default_action,
            "default",
            f"dropped {pending.action} ({pending.reason}): meant for turn {meant}, "
            f"{self._lost_since_seen} turn(s) passed while the model thought",
            pending.seen_turn,
            dropped=pending.action,
        )

    def _play(self, pending: PendingTurn) -> TurnRecord:
        """Play one turn now (caller holds the lock)."""
        self._backend.advance(pending.action)
        record = TurnRecord(
            turn=self._backend.turn,
            action=pending.action,
            source=pending.source,
            reason=pending.reason,
            seen_turn=pending.seen_turn,
            score=self._backend.score,
            elapsed_s=time.monotonic() - self._t0,
            dropped=pending.dropped,
        )
        self._history.append(record)
        self._cond.notify_all()
        return record

    def _tick(self) -> bool:
        """One clock tick: play the queued input or the default action."""
        with self._cond:
            if self.done:
                return False
            pending, self._pending = self._pending, None
            if pending is None:
                pending = PendingTurn(
                    self.spec.default_action, "default", "no input in time", self._seen_turn
                )
            self._play(pending)
            return not self.done

    def _queue_and_wait(self, pending: PendingTurn) -> TurnRecord:
        """Queue an input for the next tick and wait (lock held) until that tick played it."""
        if self._pending is not None:
            log.info(
                "input %r replaced by %r before its turn", self._pending.reason, pending.reason
            )
        self._pending = pending
        target = self._backend.turn + 1
        if self._clock.started_at is None:  # the agent acted before its first observe()
            self._t0 = time.monotonic()
            self._clock.start()
        deadline = time.monotonic() + 2 * self.turn_seconds + 5.0
        while self._backend.turn < target and not self.done:
            self._raise_clock_error()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(
                    f"the game clock did not play turn {target} within "
                    f"{2 * self.turn_seconds + 5.0:.1f}s"
                )
            self._cond.wait(remaining)
        for record in reversed(self._history):
            if record.turn == target:
                return record
        # The game ended before the queued input's turn.
        self._pending = None
        return self._history[-1]

    def _wait(self, seconds: float) -> StepResult:
        """Realtime ``Wait``: let the clock run (lock released while waiting)."""
        start_turn = self._backend.turn
        deadline = time.monotonic() + seconds
        while not self.done and (remaining := deadline - time.monotonic()) > 0:
            self._cond.wait(remaining)
        passed = self._backend.turn - start_turn
        return StepResult(
            output=f"Waited {seconds:g}s; {passed} turn(s) passed with the default "
            f"action {self.spec.default_action}.",
            done=self.done,
            info=self._info(),
        )

    def _info(self) -> dict[str, Any]:
        return {
            "turn": self._backend.turn,
            "score": self._backend.score,
            "default_turns": self.default_turns,
            "dropped_actions": self.dropped_actions,
            "pacing": self.pacing,
        }

    def _raise_clock_error(self) -> None:
        if self._clock.error is not None:
            raise RuntimeError("the game clock failed") from self._clock.error
