"""What crosses between a worker and its scoring process: the task context without its HTTP
client, exceptions with their type, message and attributes, log records, and the functions the
child runs, named (``"module:function"``) so that the worker never imports them.

Only plain data crosses (str, numbers, lists, dicts, the project's own pydantic models and
dataclasses), so that the worker never imports a module of OSWorld's metrics (pandas, openpyxl...)
to read an answer: an exception of a class the worker has not loaded comes back as a stand-in
class of the same name and module, derived from the nearest base class the worker has.
"""

from __future__ import annotations

import builtins
import importlib
import logging
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from computer_env.desktop.client import DesktopClient
from computer_env.desktop.providers.base import DesktopHandle
from computer_env.osworld.context import TaskContext

MAX_CHAIN = 8
"""How many exceptions of a ``__cause__``/``__context__`` chain cross."""


@dataclass(frozen=True)
class ContextSpec:
    """What rebuilds a :class:`TaskContext` in the scoring process (its client is not sent)."""

    handle: DesktopHandle
    cache_dir: Path
    vars: dict[str, str]
    proxy: str | None
    screen: tuple[int, int]
    action_history: list[Any]
    task_id: str | None
    work_id: str
    client_timeout: float = 30.0
    client_retries: int = 3
    client_backoff: float = 0.5

    @classmethod
    def of(cls, ctx: TaskContext) -> ContextSpec:
        client = ctx.client
        retry = getattr(client, "retry", None)
        return cls(
            handle=ctx.handle,
            cache_dir=Path(ctx.cache_dir),
            vars=dict(ctx.vars),
            proxy=ctx.proxy,
            screen=tuple(ctx.screen),  # type: ignore[arg-type]
            action_history=list(ctx.action_history),
            task_id=ctx.task_id,
            work_id=ctx._work_id,
            client_timeout=float(getattr(client, "timeout", 30.0)),
            client_retries=max(0, int(getattr(retry, "attempts", 4)) - 1),
            client_backoff=float(getattr(retry, "backoff", 0.5)),
        )

    def client(self) -> DesktopClient:
        """A new client for the desktop, with the worker's client's settings."""
        return DesktopClient.from_handle(
            self.handle,
            timeout=self.client_timeout,
            retries=self.client_retries,
            backoff=self.client_backoff,
        )

    def rebuild(
        self, handle: DesktopHandle | None = None, client: DesktopClient | None = None
    ) -> TaskContext:
        """The context, on ``client`` (default: a new one) and ``handle`` (default: the
        worker's; e.g. the same desktop seen through this process's own gateway)."""
        handle = handle or self.handle
        client = client or self.client()
        return TaskContext(
            client=client,
            handle=handle,
            cache_dir=self.cache_dir,
            vars=dict(self.vars),
            proxy=self.proxy,
            screen=self.screen,
            action_history=list(self.action_history),
            task_id=self.task_id,
            _work_id=self.work_id,
        )


# -- exceptions -------------------------------------------------------------------------------


def _plain(value: Any, depth: int = 0) -> Any:
    """``value`` when it is plain data (crosses without importing anything), else its repr."""
    if value is None or isinstance(value, (str, bytes, bool, int, float)):
        return value
    if depth < 4 and isinstance(value, (list, tuple)):
        items = [_plain(v, depth + 1) for v in value]
        return tuple(items) if isinstance(value, tuple) else items
    if depth < 4 and isinstance(value, dict):
        return {str(k): _plain(v, depth + 1) for k, v in value.items()}
    return repr(value)


@dataclass(frozen=True)
class ExcRecord:
    """One exception of a chain, as plain data; ``link``: how the next one is attached."""

    module: str
    qualname: str
    bases: list[tuple[str, str]]
    args: tuple[Any, ...]
    state: dict[str, Any]
    text: str
    link: str | None = None
    suppress_context: bool = False


@dataclass(frozen=True)
class RemoteError:
    """An exception raised in the scoring process: its chain (outermost first) and traceback."""

    chain: list[ExcRecord]
    traceback: str = ""
    pid: int = 0


def describe(exc: BaseException, pid: int = 0) -> RemoteError:
    """``exc`` and its ``__cause__``/``__context__`` chain as plain data."""
    chain: list[ExcRecord] = []
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen and len(chain) < MAX_CHAIN:
        seen.add(id(cur))
        nxt, link = (
            (cur.__cause__, "cause")
            if cur.__cause__ is not None
            else ((None, None) if cur.__suppress_context__ else (cur.__context__, "context"))
        )
        state = {k: _plain(v) for k, v in vars(cur).items()} if hasattr(cur, "__dict__") else {}
        chain.append(
            ExcRecord(
                module=type(cur).__module__,
                qualname=type(cur).__qualname__,
                bases=[(c.__module__, c.__qualname__) for c in type(cur).__mro__[1:]],
                args=tuple(_plain(a) for a in cur.args),
                state=state,
                text=str(cur),
                link=link if nxt is not None else None,
                suppress_context=cur.__suppress_context__,
            )
        )
        cur = nxt
    text = "".join(traceback.format_exception(exc))
    return RemoteError(chain=chain, traceback=text, pid=pid)


def _loaded_class(module: str, qualname: str) -> type[BaseException] | None:
    """The class if this process has its module (or it is the project's own, cheap to import);
    never imports a module of OSWorld or its dependencies."""
    mod = sys.modules.get(module)
    if mod is None and module.split(".")[0] == "computer_env":
        try:
            mod = importlib.import_module(module)
        except ImportError:
            return None
    if mod is None and module == "builtins":
        mod = builtins
    obj: Any = mod
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    return obj if isinstance(obj, type) and issubclass(obj, BaseException) else None


_STAND_INS: dict[tuple[str, str, type], type[BaseException]] = {}


def _class_for(rec: ExcRecord) -> type[BaseException]:
    exact = _loaded_class(rec.module, rec.qualname)
    if exact is not None:
        return exact
    base: type[BaseException] = Exception
    for module, qualname in rec.bases:
        if (found := _loaded_class(module, qualname)) is not None:
            base = found
            break
    key = (rec.module, rec.qualname, base)
    if key not in _STAND_INS:
        name = rec.qualname.rsplit(".", 1)[-1]
        _STAND_INS[key] = type(
            name,
            (base,),
            {
                "__module__": rec.module,
                "__qualname__": rec.qualname,
                "__doc__": f"Stand-in for {rec.module}.{rec.qualname}, raised in the scoring "
                "process (its module is not loaded here).",
            },
        )
    return _STAND_INS[key]


def _rebuild_one(rec: ExcRecord) -> BaseException:
    cls = _class_for(rec)
    try:
        exc = cls.__new__(cls, *rec.args)
    except Exception:  # noqa: BLE001 - a __new__ with its own signature
        exc = cls.__new__(cls)
    exc.args = rec.args
    if hasattr(exc, "__dict__"):
        exc.__dict__.update(rec.state)
    exc.__suppress_context__ = rec.suppress_context
    return exc


def rebuild(err: RemoteError) -> BaseException:
    """The exception (with its chain) as the scoring process raised it, its traceback there
    added as a note."""
    built = [_rebuild_one(rec) for rec in err.chain]
    for rec, exc, nxt in zip(err.chain, built, built[1:], strict=False):
        if rec.link == "cause":
            exc.__cause__ = nxt
        elif rec.link == "context":
            exc.__context__ = nxt
    if built and err.traceback:
        built[0].add_note(f"(raised in the scoring process {err.pid}:)\n{err.traceback.rstrip()}")
    return built[0] if built else RuntimeError("the scoring process raised nothing it could send")


# -- log records ------------------------------------------------------------------------------


class LogCapture(logging.Handler):
    """Collects this process's log records as plain data (to be logged again in the worker)."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        data = dict(vars(record))
        data["msg"], data["args"] = record.getMessage(), None
        if record.exc_info:
            data["exc_text"] = "".join(traceback.format_exception(*record.exc_info))
        data["exc_info"] = None
        self.records.append({k: _plain(v) for k, v in data.items()})


def replay_logs(records: list[dict[str, Any]]) -> None:
    """Log ``records`` (from :class:`LogCapture`) here, through their own loggers."""
    for data in records:
        record = logging.makeLogRecord(data)
        logger = logging.getLogger(record.name)
        if logger.isEnabledFor(record.levelno):
            logger.handle(record)


# -- functions by name ------------------------------------------------------------------------


def resolve(target: str) -> Any:
    """``"module:function"`` imported here."""
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def run_named(target: str, *args: Any) -> None:
    """The child's entry point: ``target(*args)``, imported in the child only (the worker starts
    the process with this function, so it never imports the child's side)."""
    resolve(target)(*args)


__all__ = [
    "ContextSpec",
    "ExcRecord",
    "LogCapture",
    "RemoteError",
    "describe",
    "rebuild",
    "replay_logs",
    "resolve",
    "run_named",
]
