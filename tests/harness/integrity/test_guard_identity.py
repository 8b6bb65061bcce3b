"""The case guard names an impersonated server as the agent's 0 (no desktop: the guard asks a
client; a real HTTP stand-in answers, see ``test_server_identity``)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from computer_env.errors import VMUnreachable
from fixtures.cases.attempt import Attempt
from fixtures.cases.integrity.integrity import (
    FAILURE_CATEGORIES,
    IMPERSONATED,
    AgentTurnGuard,
    task_text,
)


class _Client:
    """What the guard asks of a desktop client: whether the server proves its identity."""

    def __init__(self, answer: bool | None | Exception) -> None:
        self.answer = answer

    def proves_identity(self) -> bool | None:
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def _guard(answer: bool | None | Exception) -> tuple[AgentTurnGuard, Attempt]:
    attempt = Attempt(number=1)
    ctx: Any = SimpleNamespace(client=_Client(answer))
    pool: Any = SimpleNamespace(provider=None)
    return AgentTurnGuard(ctx, pool, attempt, task_text("Do it.")), attempt


def test_an_unproven_server_is_the_agents_zero_with_its_cause() -> None:
    guard, attempt = _guard(False)
    attempt.score = 1.0  # what the answers of an impersonator may have given
    assert guard.impersonated()
    assert (attempt.score, attempt.failure_category) == (0.0, IMPERSONATED)
    assert IMPERSONATED in FAILURE_CATEGORIES
    assert attempt.evaluator[-1]["proven"] is False


def test_a_proven_server_or_none_to_prove_changes_nothing() -> None:
    for answer in (True, None):
        guard, attempt = _guard(answer)
        attempt.score = 1.0
        assert not guard.impersonated()
        assert (attempt.score, attempt.failure_category) == (1.0, None)


def test_a_silent_desktop_is_left_to_the_error_boundary() -> None:
    guard, attempt = _guard(VMUnreachable("no answer"))
    assert not guard.impersonated()
    assert attempt.failure_category is None
