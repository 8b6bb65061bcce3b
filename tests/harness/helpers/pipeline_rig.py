"""The worker pipeline (``fixtures.cases.pipeline``) without a benchmark, and, for the fast tier,
without a desktop.

- :class:`FakeDesktop`: a ``DesktopProvider`` that keeps a desktop's state (the files a set-up
  or an agent left) in memory, counts its starts, resets and closes, and can be made to fail to
  start, die or stop drawing; :func:`fake_health_check` makes the pool's health check
  (``desktop_draws``: a screenshot over HTTP) ask it instead.
- :class:`FakeSteps`: an ``AheadSteps`` whose cases are named by their items (the key is the
  item's name), whose set-up leaves a :class:`SetUp` (what it does on the desktop is the test's:
  :attr:`FakeSteps.set_up_with`) and whose agent plays turns in its thread until the test lets
  it finish (:meth:`FakeSteps.finish`), taking its desktop from the pipeline as a benchmark does.
- :class:`PipelineRig`: a pool with a spare over fake desktops, the worker's items in order, the
  pipeline over both and its fake steps.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from computer_env.desktop.providers.base import DesktopHandle, DesktopProvider
from computer_env.errors import VMStartError
from fixtures.cases.attempt import Attempt
from fixtures.cases.desktops import pool as pool_module
from fixtures.cases.desktops import spare as spare_module
from fixtures.cases.desktops.pool import VMPool
from fixtures.cases.pipeline import AgentAhead, NextCase, WorkerPipeline

__all__ = [
    "PIPELINE_THREADS",
    "FakeDesktop",
    "FakeSteps",
    "PipelineRig",
    "Played",
    "SetUp",
    "fake_health_check",
    "pipeline_threads",
    "stand_in_item",
]

PIPELINE_THREADS = ("setup-ahead", "agent-ahead", "spare-desktop")
"""The names of the threads the pipeline and the pool start: none may outlive their close."""


def pipeline_threads() -> list[str]:
    """The pipeline's and the pool's threads alive now."""
    return [t.name for t in threading.enumerate() if t.name in PIPELINE_THREADS and t.is_alive()]


def stand_in_item(name: str) -> pytest.Item:
    """A stand-in for a collected test item, named ``name``. The pipeline never looks into an
    item (it hands it to its ``AheadSteps``, :class:`FakeSteps` here, which reads its name), so
    a namespace with a name is all it needs; typed as the item it stands for, here only."""
    return cast(pytest.Item, SimpleNamespace(name=name, nodeid=f"stand-in::{name}"))


# -- desktops -------------------------------------------------------------------------------------

_numbers = itertools.count(1)
_desktops: dict[str, FakeDesktop] = {}
"""Every fake desktop by the url of its latest handle."""


class FakeDesktop(DesktopProvider):
    """A desktop in memory: ``files`` is what is on it (a reset empties it);
    ``fail_start``/``alive``/``draws`` make it fail to start, die or stop drawing."""

    name = "fake"

    def __init__(self) -> None:
        self.number = next(_numbers)
        self.files: set[str] = set()
        self.starts = self.resets = self.closes = 0
        self.alive = True
        self.draws = True
        self.fail_start = False
        self.handle: DesktopHandle | None = None
        self.ports: set[int] = set()

    @staticmethod
    def of(handle: DesktopHandle | None) -> FakeDesktop:
        """The fake desktop behind ``handle``."""
        assert handle is not None, "no desktop handle"
        return _desktops[handle.url]

    def _boot(self) -> DesktopHandle:
        self.files.clear()
        url = f"http://fake-{self.number}.invalid:{self.starts + self.resets}"
        self.handle = DesktopHandle(url=url, token="t", provider=self.name)
        _desktops[url] = self
        return self.handle

    def start(self) -> DesktopHandle:
        self.starts += 1
        if self.fail_start:
            raise VMStartError(f"fake desktop {self.number} does not start")
        return self._boot()

    def reset(self) -> DesktopHandle:
        self.resets += 1
        return self._boot()

    def is_alive(self) -> bool:
        return self.alive and self.closes == 0

    def close(self) -> None:
        self.closes += 1
        self.handle = None

    def allow_host_port(self, port: int) -> None:
        self.ports.add(port)


def _draws(handle: DesktopHandle) -> bool:
    """The health check, asked of the fake desktop behind ``handle`` (its latest handle only:
    a handle from before a reset no longer draws, as a real one no longer answers)."""
    desk = _desktops.get(handle.url)
    return bool(desk is not None and desk.handle == handle and desk.is_alive() and desk.draws)


def fake_health_check(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The pool's and the spare's health check asks the fake desktops (a fixture's body:
    ``yield from fake_health_check(monkeypatch)``)."""
    monkeypatch.setattr(pool_module, "desktop_draws", _draws)
    monkeypatch.setattr(spare_module, "desktop_draws", _draws)
    yield
    _desktops.clear()


# -- the benchmark's part -------------------------------------------------------------------------


@dataclass
class SetUp:
    """What a fake set-up leaves for its case (a ``Releasable``)."""

    key: str
    handle: DesktopHandle
    thread: str
    """the thread the set-up ran in"""
    released: int = 0

    def release(self) -> None:
        self.released += 1


@dataclass(frozen=True)
class Played:
    """What a fake agent turn returns for its case's scoring."""

    key: str
    handle: DesktopHandle
    """the desktop it played on"""
    set_up_ahead: bool
    """it was handed the desktop set up ahead (False: the turn set its case up itself)"""
    thread: str
    turns: int


SetUpFn = Callable[[NextCase, DesktopHandle, Attempt], None]
"""What a set-up does on its desktop (raises to fail)."""


class FakeSteps:
    """An ``AheadSteps`` over items named by their case's key (see the module docstring).

    ``root`` holds each case's results folder (``results/<key>``, made when its agent begins)
    and work folder (``work/<key>``, made by its set-up)."""

    TURN_S = 0.02
    """how long one of the agent's "model turns" takes"""

    def __init__(self, pipeline: WorkerPipeline, root: Path) -> None:
        self.pipeline = pipeline
        self.root = root
        self.set_up_with: SetUpFn = lambda case, handle, attempt: None
        self.skipped: set[str] = set()
        """keys whose case is not this worker's to set up ahead (reused by ``--resume``,
        skipped before a desktop): :meth:`next_case` answers None"""
        self.interrupt_next_case = False
        """:meth:`next_case` raises ``KeyboardInterrupt`` (an interrupt in the runner)"""
        self.set_ups: list[SetUp] = []
        self.set_up_ended: list[str] = []
        """the keys whose set-up ended (done or failed)"""
        self.begun: list[str] = []
        self.closed: list[str] = []
        """the keys whose agent turn's closers ran"""
        self.turn_errors: dict[str, BaseException] = {}
        """a key's agent turn raises this at its first turn"""
        self._lock = threading.Lock()
        self._events: dict[tuple[str, str], threading.Event] = {}
        self._end_all = threading.Event()

    def end_all(self) -> None:
        """Every agent turn ends (a test's teardown: one its failure left playing)."""
        self._end_all.set()

    def event(self, what: str, key: str) -> threading.Event:
        """The event ``what`` (``started``, ``turned``, ``finish``) of ``key``'s agent turn."""
        with self._lock:
            return self._events.setdefault((what, key), threading.Event())

    def finish(self, key: str) -> None:
        """Let ``key``'s agent end its turn (now, or as soon as it starts)."""
        self.event("finish", key).set()

    def case(self, key: str) -> NextCase:
        return NextCase(
            key, stand_in_item(key), self.root / "results" / key, self.root / "work" / key
        )

    # -- AheadSteps ---------------------------------------------------------------------------
    def next_case(self, item: pytest.Item) -> NextCase | None:
        if self.interrupt_next_case:
            raise KeyboardInterrupt("an interrupt while the runner sets the next case up")
        return None if item.name in self.skipped else self.case(item.name)

    def set_up(self, case: NextCase, handle: DesktopHandle, attempt: Attempt) -> SetUp:
        assert case.work_folder is not None
        try:
            case.work_folder.mkdir(parents=True, exist_ok=True)
            (case.work_folder / "download").write_text(case.key)
            self.set_up_with(case, handle, attempt)
            done = SetUp(case.key, handle, threading.current_thread().name)
            self.set_ups.append(done)
            return done
        finally:
            self.set_up_ended.append(case.key)

    def begin(self, case: NextCase) -> None:
        case.case_dir.mkdir(parents=True, exist_ok=True)
        (case.case_dir / "trajectory.jsonl").write_text("{}\n")
        self.begun.append(case.key)

    def play(self, run: AgentAhead) -> Played:
        """As a benchmark's turn: the desktop set up ahead (or its failure, raised), else one
        set up here from the pool; then model turns, each checked, until :meth:`finish`."""
        key = run.key
        got = self.pipeline.prepared(key)
        if got is not None and got.error is not None:
            raise got.error
        ahead = got is not None
        handle = got.value_as(SetUp).handle if got is not None else self.pipeline.pool.acquire()
        run.closers.append(lambda: self.closed.append(key))
        run.agent_started.set()
        self.event("started", key).set()
        turns = 0
        while True:
            run.check()  # as the agent's on_step does after each model turn
            if key in self.turn_errors:
                raise self.turn_errors[key]
            self.event("turned", key).set()
            if self.event("finish", key).wait(self.TURN_S) or self._end_all.is_set():
                break
            turns += 1
            run.attempt.steps = turns
        return Played(key, handle, ahead, threading.current_thread().name, turns)


# -- a pool, a pipeline, the worker's items -------------------------------------------------------


class PipelineRig:
    """A pool (with a spare, unless ``spare=False``) over fake desktops, the worker's items
    (``cases``, in order; :attr:`current` is the index of the one that runs), the pipeline and
    its fake steps. :func:`fake_health_check` must be in place."""

    def __init__(
        self,
        root: Path,
        *,
        spare: bool = True,
        setup_ahead: bool = True,
        score_behind: bool = True,
        cases: Sequence[str] = ("case-1", "case-2", "case-3"),
    ) -> None:
        self.made: list[FakeDesktop] = []
        self.failing: set[int] = set()
        """which desktops (by the order they are made, from 0) fail to start"""
        self.pool = VMPool(self.factory, spare=spare)
        self.items = [stand_in_item(key) for key in cases]
        self.current = 0
        self.pipeline = WorkerPipeline(
            self.pool, self.upcoming, setup_ahead=setup_ahead, score_behind=score_behind
        )
        self.steps = FakeSteps(self.pipeline, root)

    def factory(self) -> DesktopProvider:
        desk = FakeDesktop()
        desk.fail_start = len(self.made) in self.failing
        self.made.append(desk)
        return desk

    def upcoming(self) -> pytest.Item | None:
        """The item after the current one (None: the current one is the last)."""
        after = self.current + 1
        return self.items[after] if after < len(self.items) else None

    def now(self, key: str) -> None:
        """``key``'s case is the one that runs now."""
        self.current = [item.name for item in self.items].index(key)

    @staticmethod
    def desk(handle: DesktopHandle | None) -> FakeDesktop:
        return FakeDesktop.of(handle)

    def in_use(self) -> FakeDesktop:
        """The desktop in use (the last one handed out)."""
        assert isinstance(self.pool.provider, FakeDesktop)
        return self.pool.provider

    def close(self) -> None:
        """The session ends: the pipeline first, then the pool (as the worker closes them)."""
        self.pipeline.close()
        self.pool.close()

    def teardown(self) -> list[str]:
        """:meth:`close`; then the threads of the pipeline and the pool still alive (which
        must be none), after which any agent turn a failed test left playing is ended, so that
        the next test does not find its thread."""
        try:
            self.close()
        finally:
            left = pipeline_threads()
            self.steps.end_all()
        for thread in threading.enumerate():
            if thread.name == "agent-ahead":
                thread.join(10)
        return left
