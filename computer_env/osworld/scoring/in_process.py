"""Scoring a task with OSWorld's semantics (``DesktopEnv.evaluate``), but infra-aware, in this
process: the scoring process's child runs it (a worker calls
:func:`computer_env.osworld.scoring.process.evaluate`, which never imports it).

1. postconfig runs; 2. ``infeasible`` scores 1 iff the last action is ``FAIL``; any other task
whose last action is ``FAIL`` scores 0; 3. one metric is
``metric(result_getter(env, result), expected_getter(env, expected), **options)``, a
``FileNotFoundError`` in the result getter scores 0; 4. lists combine with ``conj``: ``and`` (any
0 gives 0, else the mean) or ``or`` (any 1 gives 1, else the max).

The getters and metrics are OSWorld's own (``desktop_env.evaluators``), on every provider.
Unlike a plain OSWorld run, a getter that fails because of the environment (desktop or Chrome
unreachable, a download failed) raises ``EvaluatorInfraError`` instead of scoring 0, and a getter
or metric that is missing here or needs a module not installed here (OCR, audio, Google Drive)
raises ``EvaluatorUnsupported`` before setup (a skip). A metric on a result far larger than
the expected file runs under the ``metric_limit`` its caller gives (the scoring process: a CPU
budget).
"""

from __future__ import annotations

import logging
import platform
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from computer_env.errors import EvaluatorCrash, EvaluatorInfraError, InfraError
from computer_env.osworld.catalog.tasks import Task
from computer_env.osworld.context import TaskContext, substitute
from computer_env.osworld.errors import EvaluatorUnsupported, Unsupported
from computer_env.osworld.prepare.setup import check_steps, run_setup_in_process
from computer_env.osworld.scoring.result import EvalResult, MetricDetail
from computer_env.osworld.scoring.shim import EvalEnv, check_cdp, seed_cloud_files, stopped_apps
from computer_env.osworld.upstream.loader import (
    MissingDependency,
    absent_dependencies,
    missing_reason,
    upstream_getter,
    upstream_metric,
)

logger = logging.getLogger(__name__)

PREVIEW_CHARS = 300
"""How much of each metric input is kept in the detail (for the replay)."""


MetricLimit = Callable[[Any, Any], AbstractContextManager[Any]]
"""What a metric runs under, given the result's and the expected value (e.g. a CPU budget)."""


def unlimited(result: Any, expected: Any) -> AbstractContextManager[Any]:
    """No limit (outside the scoring process)."""
    del result, expected
    return nullcontext()


def preview(value: Any, limit: int = PREVIEW_CHARS) -> str:
    """``repr(value)`` cut to ``limit`` characters."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass
class _Resolved:
    metrics: list[Any]
    getters: dict[str, Any]


def _lookup_metric(name: str) -> Any:
    fn = upstream_metric(name)
    if fn is None:
        raise EvaluatorUnsupported(f"metric {name!r}", "not in OSWorld's metrics")
    if absent := absent_dependencies(fn):
        raise EvaluatorUnsupported(f"metric {name!r}", missing_reason(absent))
    return fn


def _lookup_getter(kind: str) -> Any:
    fn = upstream_getter(f"get_{kind}")
    if fn is None:
        raise EvaluatorUnsupported(f"getter {kind!r}", "not in OSWorld's getters")
    if absent := absent_dependencies(fn):
        raise EvaluatorUnsupported(f"getter {kind!r}", missing_reason(absent))
    return fn


CHROME_A11Y_GETTERS: frozenset[str] = frozenset(
    {
        "active_tab_info",
        "active_url_from_accessTree",
        "active_tab_html_parse",
        "active_tab_url_parse",
        "url_dashPart",
        "macys_product_url_parse",
    }
)
"""OSWorld getters that read the active tab's URL from the accessibility tree: from the
application "Google Chrome", or "Chromium" where the evaluating machine's ``platform.machine()``
contains "arm" (OSWorld's arm image runs Chromium). The embedded desktop's ``google-chrome`` is
Chromium, which its guest server names "Google Chrome" in the tree (see
computer_env/desktop/server/a11y/atspi_dump.py), so these getters work there except on such a
machine."""


EMBEDDED_TIMING_DEFECTS: dict[str, str] = {
    "13584542-872b-42d8-b299-866967b5c3ef": "OSWorld's postconfig presses ctrl+alt+t and types `stty size` 0.5 s later; the "
    "embedded desktop's gnome-terminal takes 0.4-0.8 s to open under load (measured), so "
    "the keys can land before the terminal and the task would score 0 for the desktop",
}
"""Tasks whose OSWorld evaluation races the embedded desktop (task id -> why): skipped there,
before any model time, rather than risking a zero that is the environment's."""


def _check_embedded(task: Task, ctx: TaskContext | None) -> None:
    if ctx is None or not ctx.embedded:
        return
    if reason := EMBEDDED_TIMING_DEFECTS.get(task.id):
        raise EvaluatorUnsupported("evaluation on the embedded desktop", reason)
    if "arm" not in platform.machine():
        return
    for spec in task.evaluator.getter_specs():
        if spec.get("type") in CHROME_A11Y_GETTERS:
            raise EvaluatorUnsupported(
                f"getter {spec['type']!r}",
                "on an arm machine OSWorld looks for the active tab "
                "in the accessibility tree of 'Chromium'; the embedded desktop names its "
                "google-chrome 'Google Chrome' there",
            )


def ensure_supported_in_process(
    task: Task, ctx: TaskContext | None = None, *, backend: str | None = None
) -> None:
    """Raise ``SetupUnsupported``/``EvaluatorUnsupported`` now if a step, getter or metric of the
    task cannot run here (call before setup to skip early); with ``ctx``, also what cannot work
    on its desktop. ``backend`` is ignored (kept for callers)."""
    check_steps(task.all_steps())
    _resolve(task)
    _check_embedded(task, ctx)


def _resolve(task: Task) -> _Resolved:
    ev = task.evaluator
    if ev.is_infeasible:
        return _Resolved([], {})
    metrics = [_lookup_metric(name) for name in ev.funcs]
    getters = {s["type"]: _lookup_getter(s["type"]) for s in ev.getter_specs() if "type" in s}
    return _Resolved(metrics, getters)


def _aligned(value: Any, n: int, listed: bool) -> list[Any]:
    if not listed:
        return [value]
    if isinstance(value, list):
        return list(value) + [None] * (n - len(value))
    return [value] * n


def _env_failure(name: str, exc: BaseException, *, agent_side: bool = False) -> EvaluatorInfraError:
    """The error for a getter or metric that raised: the environment's (unreachable desktop,
    Chrome, network) or a crash; a crash on what the agent left (the result getter, a metric)
    is an :class:`EvaluatorCrash`, which the harness scores once the agent has acted."""
    kind = (
        "environment"
        if isinstance(exc, (InfraError, ConnectionError, TimeoutError))
        or type(exc).__module__.startswith(("requests", "urllib3", "httpx", "playwright"))
        else "crash"
    )
    cls = EvaluatorCrash if kind == "crash" and agent_side else EvaluatorInfraError
    return cls(f"{name} failed ({kind}): {type(exc).__name__}: {exc}")


def _get(resolved: _Resolved, env: EvalEnv, spec: dict[str, Any], role: str) -> Any:
    """Run one OSWorld getter. FileNotFoundError and Unsupported pass through; a module not
    installed here is a skip; a None from a dead desktop, an unreachable Chrome or a failed
    download is an evaluator infra error (never the model's 0)."""
    kind = spec.get("type")
    name = f"{role} getter {kind!r}"
    try:
        if kind == "cloud_file":
            seed_cloud_files(env, spec)
        getter = resolved.getters[spec["type"]]
        check_cdp(env, getter)
        value = getter(env, spec)
    except MissingDependency as exc:
        raise EvaluatorUnsupported(name, str(exc)) from exc
    except (FileNotFoundError, Unsupported, EvaluatorInfraError):
        raise
    except Exception as exc:  # noqa: BLE001
        err = _env_failure(name, exc, agent_side=role == "result")
        if (
            role == "result"
            and not isinstance(err, EvaluatorCrash)
            and (stopped := stopped_apps(env))
        ):  # an app the agent hung cannot answer
            err = EvaluatorCrash(
                f"{name} failed with processes stopped (SIGSTOP) in the "
                f"desktop ({'; '.join(stopped)[:300]}): {err}"
            )
        raise err from exc
    if value is None:
        env.controller.confirm_alive(f"run the {name}")
    return value


def _score_one(
    resolved: _Resolved,
    env: EvalEnv,
    idx: int,
    func: str,
    result_spec: Any,
    expected_spec: Any,
    options: dict[str, Any],
    limit: MetricLimit,
) -> MetricDetail:
    detail = MetricDetail(
        func=func,
        options=options,
        result_type=(result_spec or {}).get("type"),
        expected_type=(expected_spec or {}).get("type"),
    )
    try:
        result_state = _get(resolved, env, result_spec, "result") if result_spec else None
    except FileNotFoundError as exc:
        detail.score, detail.error = 0.0, f"FileNotFoundError: {exc}"
        return detail
    detail.result = preview(result_state)
    metric = resolved.metrics[idx]
    try:
        if expected_spec:
            try:
                expected_state = _get(resolved, env, expected_spec, "expected")
            except FileNotFoundError as exc:
                raise EvaluatorInfraError(
                    f"expected getter {expected_spec.get('type')!r}: file not found: {exc}"
                ) from exc
            detail.expected = preview(expected_state)
            with limit(result_state, expected_state):  # a far larger result: limited
                value = metric(result_state, expected_state, **options)
        else:
            value = metric(result_state, **options)
    except (Unsupported, EvaluatorInfraError):
        raise
    except Exception as exc:  # noqa: BLE001
        raise _env_failure(f"metric {func!r}", exc, agent_side=True) from exc
    detail.score = float(value)
    return detail


def _last_is_fail(history: list[Any]) -> bool:
    if not history:
        return False
    last = history[-1]
    return last == "FAIL" or (isinstance(last, dict) and last.get("action_type") == "FAIL")


def evaluate_in_process(
    task: Task,
    ctx: TaskContext,
    *,
    backend: str | None = None,
    metric_limit: MetricLimit = unlimited,
) -> EvalResult:
    """Score ``task`` on the desktop in ``ctx``, here (see the module docstring for the
    semantics); ``backend`` is accepted for compatibility and ignored (OSWorld's code always
    scores)."""
    del backend
    t0 = time.monotonic()
    if ctx.task_id is None:
        ctx.task_id = task.id
    resolved = _resolve(task)
    name = "osworld"
    ev = task.evaluator
    post = run_setup_in_process(ev.postconfig, ctx, phase="postconfig") if ev.postconfig else None

    def done(score: float, reason: str, detail: list[MetricDetail] | None = None) -> EvalResult:
        return EvalResult(
            score=float(score),
            detail=detail or [],
            reason=reason,
            backend=name,
            postconfig=post,
            seconds=round(time.monotonic() - t0, 3),
        )

    if ev.is_infeasible:
        ok = _last_is_fail(ctx.action_history)
        return done(
            1.0 if ok else 0.0,
            "infeasible task: "
            + (
                "the agent declared it infeasible (FAIL)" if ok else "the agent did not answer FAIL"
            ),
            [
                MetricDetail(
                    func="infeasible",
                    score=1.0 if ok else 0.0,
                    result=preview(ctx.action_history[-1:]),
                )
            ],
        )
    if _last_is_fail(ctx.action_history):
        return done(0.0, "the agent declared a feasible task infeasible (last action FAIL)")

    env = EvalEnv(task, ctx)
    data = substitute(ev.model_dump(include={"result", "expected", "options"}), ctx.vars)
    funcs = ev.funcs
    listed = isinstance(ev.func, list)
    n = len(funcs)
    results = _aligned(data.get("result"), n, listed)
    expecteds = _aligned(data.get("expected"), n, listed)
    options = [o or {} for o in _aligned(data.get("options"), n, listed)]

    details: list[MetricDetail] = []
    for i, func in enumerate(funcs):
        d = _score_one(resolved, env, i, func, results[i], expecteds[i], options[i], metric_limit)
        details.append(d)
        if not listed:
            return done(d.score or 0.0, d.error or f"{func} = {d.score}", details)
        if ev.conj == "and" and d.score == 0.0:
            details += [MetricDetail(func=f, skipped=True) for f in funcs[i + 1 :]]
            return done(0.0, f"conj and: metric {i} ({func}) scored 0", details)
        if ev.conj == "or" and d.score == 1.0:
            details += [MetricDetail(func=f, skipped=True) for f in funcs[i + 1 :]]
            return done(1.0, f"conj or: metric {i} ({func}) scored 1", details)
    scores = [d.score or 0.0 for d in details]
    score = sum(scores) / len(scores) if ev.conj == "and" else max(scores)
    return done(
        score, f"conj {ev.conj}: {'mean' if ev.conj == 'and' else 'max'} of {scores}", details
    )


__all__ = [
    "CHROME_A11Y_GETTERS",
    "EMBEDDED_TIMING_DEFECTS",
    "MetricLimit",
    "PREVIEW_CHARS",
    "ensure_supported_in_process",
    "evaluate_in_process",
    "preview",
    "unlimited",
]
