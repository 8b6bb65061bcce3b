"""Typed records of an episode: one ``StepRecord`` per model turn, and the ``Trajectory``.

``traj.jsonl`` (one ``StepRecord`` a line) is read back with :func:`read_traj`; a record's
``call``, ``input_event`` and ``code_run`` give its tool call, the input the environment was given
and a code action's run as typed models (the on-disk fields stay plain JSON objects).

What a model sent is kept bounded: a malformed output's text is kept up to
:data:`RAW_OUTPUT_KEEP` bytes with its full size and SHA-256 (:func:`kept_output`), reasoning up
to :data:`REASONING_KEEP` bytes (:func:`kept_reasoning`); both are valid UTF-8 whatever arrived.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from computer_env.base import InputEvent
from holo_agent.tools import CodeToolCall

log = logging.getLogger(__name__)

EndReason = Literal[
    "answered", "infeasible", "max_steps", "malformed", "env_done", "context_overflow"
]
"""How an episode ended (``env_done``: the environment itself ended it, e.g. a game over;
``context_overflow``: the endpoint refused the next turn, the conversation being longer than the
model's context)."""

REFERENCE_POLICY_LABEL = "REFERENCE POLICY — harness check, not a model score"
"""The label on every report of a run played by the built-in reference endpoint."""

RAW_OUTPUT_KEEP = 16 * 1024
"""Bytes of a malformed output's text kept in its record (the first ones)."""
REASONING_KEEP = 1024 * 1024
"""Bytes of a turn's reasoning kept in its record (the first ones)."""


class KeptOutput(BaseModel):
    """A model output as recorded: ``text`` its first :data:`RAW_OUTPUT_KEEP` bytes (UTF-8;
    bytes that are not valid UTF-8, e.g. a lone surrogate's, written ``\\xNN``), ``size`` its
    full size in bytes, ``sha256`` the hash of all of them."""

    text: str
    size: int
    sha256: str


def _utf8(text: str) -> bytes:
    """``text``'s UTF-8 bytes; a lone surrogate is encoded as it is (``surrogatepass``)."""
    return text.encode("utf-8", "surrogatepass")


def _head(data: bytes, limit: int) -> str:
    return data[:limit].decode("utf-8", "backslashreplace")


def kept_output(text: str) -> KeptOutput:
    """What a record keeps of a model output ``text`` (see :class:`KeptOutput`)."""
    data = _utf8(text)
    return KeptOutput(
        text=_head(data, RAW_OUTPUT_KEEP), size=len(data), sha256=hashlib.sha256(data).hexdigest()
    )


def kept_reasoning(reasoning: object) -> str | None:
    """What a record keeps of a turn's reasoning: text only, its first :data:`REASONING_KEEP`
    bytes as valid UTF-8, a last line saying how much was left out."""
    if not isinstance(reasoning, str) or not reasoning:
        return None
    data = _utf8(reasoning)
    if len(data) <= REASONING_KEEP:
        return _head(data, REASONING_KEEP)
    return (
        _head(data, REASONING_KEEP) + f"\n[reasoning cut: {len(data)} bytes in all, the "
        f"first {REASONING_KEEP} kept]"
    )


_CALL: TypeAdapter[CodeToolCall] = TypeAdapter(CodeToolCall)
_EVENT: TypeAdapter[InputEvent] = TypeAdapter(InputEvent)
_T = TypeVar("_T")


class CodeRun(BaseModel):
    """A code action as recorded: the script, what it printed (cut at 64 KB) and how it ended."""

    model_config = ConfigDict(extra="allow")

    language: str | None = None
    code: str = ""
    output: str = ""
    exit_code: int | None = None
    timed_out: bool = False
    duration_s: float | None = None
    truncated: bool = False
    output_chars: int | None = None
    error: str | None = None


_CODE: TypeAdapter[CodeRun] = TypeAdapter(CodeRun)


class TurnTimes(BaseModel):
    """Where a model turn's non-model time went, in seconds: ``observe_s`` the screenshot (and
    its preparation for the model), ``action_s`` applying the action (delivery confirmation and
    typing included), ``settle_s`` waiting for the screen to be still after it, ``record_s``
    saving the step's image and trajectory line (the line's own write is counted in memory and
    in ``result.json``, not in the line itself)."""

    observe_s: float = 0.0
    action_s: float = 0.0
    settle_s: float = 0.0
    record_s: float = 0.0

    @property
    def non_model_s(self) -> float:
        """Everything but the model's own latency."""
        return self.observe_s + self.action_s + self.settle_s + self.record_s


class StepRecord(BaseModel):
    """One model turn: the request's result, the parsed Step (or the error) and what it did.

    A malformed output that was re-asked is its own record with ``error`` set and ``reask`` > 0
    on the records that follow for the same observation. ``pixel`` holds the env-pixel
    coordinates the tool call was converted to; ``image_size`` is the size of the image sent,
    ``env_size`` the size of the env's screenshot.
    """

    index: int
    step: int = Field(description="number of accepted Steps before this turn (the step index)")
    reask: int = 0
    time: float = Field(description="UNIX time the model reply arrived")
    latency_s: float
    attempts: int = 1
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reasoning_tokens: int | None = None
    # the harness's own estimate of the request's image tokens (Qwen-VL arithmetic,
    # holo_agent.images.qwen_image_tokens), beside the server's prompt_tokens that include them
    image_tokens_est: int | None = None
    note: str | None = None
    thought: str | None = None
    tool_call: dict[str, Any] | None = None
    event: dict[str, Any] | None = None
    pixel: dict[str, int | None] | None = None
    tool_output: str | None = None
    screenshot: str | None = None
    image_size: tuple[int, int] | None = None
    env_size: tuple[int, int] | None = None
    reasoning: str | None = None
    raw_output: str | None = Field(
        default=None,
        description=f"a malformed output's text: its first {RAW_OUTPUT_KEEP} "
        "bytes (UTF-8, invalid bytes written \\xNN)",
    )
    raw_output_size: int | None = Field(
        default=None, description="the malformed output's full size in bytes (UTF-8)"
    )
    raw_output_sha256: str | None = Field(
        default=None, description="the SHA-256 of the whole malformed output (UTF-8)"
    )
    usage_flag: str | None = Field(
        default=None,
        description="token counts the server reported that are not believable "
        "(negative, not whole, absurd): left out of this record and of every sum",
    )
    error: str | None = None
    env_notice: str | None = Field(
        default=None,
        description="what the env noticed about this turn's screen (e.g. not "
        "the task's size: shown fitted to it)",
    )
    code: dict[str, Any] | None = Field(
        default=None,
        description="a code action: language, code, output (cut at 64 KB), "
        "exit_code, timed_out, duration_s, truncated",
    )
    harness: TurnTimes | None = Field(
        default=None, description="the harness's own time in this turn (not the model's)"
    )

    def keep_raw_output(self, text: str) -> None:
        """Record a malformed output: its first bytes, its size and hash (:func:`kept_output`)."""
        kept = kept_output(text)
        self.raw_output, self.raw_output_size = kept.text, kept.size
        self.raw_output_sha256 = kept.sha256

    @property
    def call(self) -> CodeToolCall | None:
        """The tool call as its model from :mod:`holo_agent.tools` (``ClickTool``...,
        ``RunCodeTool``); None without one or when it is not a tool this version knows."""
        return _typed(_CALL, self.tool_call)

    @property
    def input_event(self) -> InputEvent | None:
        """The input the environment was given (pixels of its screenshot), if any."""
        return _typed(_EVENT, self.event)

    @property
    def code_run(self) -> CodeRun | None:
        """The code action's run, if this turn was one."""
        return _typed(_CODE, self.code)


def _typed(adapter: TypeAdapter[_T], data: dict[str, Any] | None) -> _T | None:
    """``data`` validated by ``adapter``; None when absent or not valid (a newer or older
    format: the plain field still has it)."""
    if not data:
        return None
    try:
        return adapter.validate_python(data)
    except ValidationError:
        return None


class Totals(BaseModel):
    """Sums over all model turns of an episode."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    latency_s: float = 0.0


class Trajectory(BaseModel):
    """An episode: its steps, how it ended, the answer (if any), the error (if any), totals."""

    instruction: str
    steps: list[StepRecord] = Field(default_factory=list)
    end: EndReason | None = None
    answer: str | None = None
    error: str | None = None
    totals: Totals = Field(default_factory=Totals)

    def add(self, record: StepRecord) -> None:
        """Append a record and update the totals."""
        self.steps.append(record)
        t = self.totals
        t.requests += 1
        t.prompt_tokens += record.prompt_tokens or 0
        t.completion_tokens += record.completion_tokens or 0
        t.reasoning_tokens += record.reasoning_tokens or 0
        t.latency_s += record.latency_s


def _json_lines(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a JSON-lines file; a truncated line (a killed run's) is skipped."""
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def read_reasoning(task_dir: Path | str) -> dict[int, str]:
    """``reasoning.jsonl`` of a task folder: record index -> the reasoning it returned."""
    out: dict[int, str] = {}
    for row in _json_lines(Path(task_dir) / "reasoning.jsonl"):
        try:
            out[int(row["index"])] = str(row["reasoning"])
        except (KeyError, TypeError, ValueError):
            continue
    return out


def read_traj(path_or_dir: Path | str) -> list[StepRecord]:
    """The records of ``traj.jsonl`` (a task folder, or the file itself), with the reasoning
    from ``reasoning.jsonl`` beside it put back. A truncated last line left by a killed run is
    skipped; fields a line lacks take neutral values (index: its position, time 0), so lines of
    older runs still read; a line that still does not validate is skipped with a warning."""
    path = Path(path_or_dir)
    if path.is_dir():
        path = path / "traj.jsonl"
    reasoning = read_reasoning(path.parent)
    records = []
    for i, row in enumerate(_json_lines(path)):
        row = {"time": 0.0, "latency_s": 0.0, **row}
        row.setdefault("index", i)
        row.setdefault("step", row["index"])
        try:
            rec = StepRecord.model_validate(row)
        except ValidationError as exc:
            log.warning("%s line %d is not a step record: %s", path, i + 1, exc)
            continue
        if rec.reasoning is None:
            rec.reasoning = reasoning.get(rec.index)
        records.append(rec)
    return records
