"""``--check-evaluators``: score a task right after setup, before anyone acted."""

from __future__ import annotations

import logging
from collections.abc import Callable

from computer_env.osworld.catalog.tasks import Task
from computer_env.osworld.context import TaskContext
from computer_env.osworld.prepare.settle import wait_until_settled
from computer_env.osworld.scoring.process import evaluate, run_setup
from computer_env.osworld.scoring.result import EvalResult

logger = logging.getLogger(__name__)


def check_task_unplayed(
    task: Task,
    ctx: TaskContext,
    *,
    setup: bool = True,
    backend: str | None = None,
    score: Callable[[Task, TaskContext], EvalResult] = evaluate,
) -> EvalResult:
    """Run setup (unless ``setup=False``: already done), let the screen settle, then evaluate
    with an empty action history (both in the scoring process; with ``score``: another way to
    score). A feasible task scoring > 0 here leaks reward."""
    if setup:
        run_setup(task.config, ctx, strict=not task.evaluator.is_infeasible)
        wait_until_settled(ctx.client)
    ctx.action_history.clear()
    result = score(task, ctx)
    if result.score > 0 and not task.evaluator.is_infeasible:
        logger.warning("%s scores %s before anyone acted (reward leak)", task.case_id, result.score)
    return result


__all__ = ["check_task_unplayed"]
