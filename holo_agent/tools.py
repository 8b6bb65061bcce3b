"""The Holo Step format: one pydantic model per tool, the ``Step`` and its JSON schema.

Coordinates are integers in [0, 1000] normalised to the image that was sent. Conversion to
pixels (:func:`to_pixel`) uses round-half-up on ``v * size / 1000`` computed in integers and is
clamped to ``[0, size - 1]``, so 1000 maps to the last pixel, never one past it. Because the
coordinates are normalised, converting against the env's screenshot size gives the same point as
converting against a proportionally resized image that was sent, without a second rounding.

Validation is strict: a coordinate must be a JSON integer (not a float, string, list or range)
inside [0, 1000]; anything else is rejected, never guessed.

:func:`parse_step` turns *any* model output into a ``Step`` or a :class:`StepParseError` (the
model's malformed output), never another exception: output longer than
:data:`MAX_OUTPUT_CHARS`, text that is not valid Unicode (lone surrogates), a number past
Python's digit limit, nesting past the recursion limit, ``NaN``/``Infinity``, JSON that is not an
object, a schema mismatch, and whatever else fails on the way are all malformed.
"""

from __future__ import annotations

import copy
import json
from typing import Annotated, Any, Literal, NoReturn

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from computer_env.base import (
    Click,
    Drag,
    Hotkey,
    InputEvent,
    KeyPress,
    MoveTo,
    Scroll,
    TypeText,
    Wait,
)

Coord = Annotated[int, Field(strict=True, ge=0, le=1000)]
"""A normalised coordinate: a JSON integer in [0, 1000]."""


class _Tool(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ClickTool(_Tool):
    """Left click on an element."""

    tool_name: Literal["click"]
    element: str
    x: Coord
    y: Coord


class DoubleClickTool(_Tool):
    """Double left click on an element."""

    tool_name: Literal["double_click"]
    element: str
    x: Coord
    y: Coord


class RightClickTool(_Tool):
    """Right click on an element."""

    tool_name: Literal["right_click"]
    element: str
    x: Coord
    y: Coord


class MoveToTool(_Tool):
    """Move the pointer over an element (hover)."""

    tool_name: Literal["move_to"]
    element: str
    x: Coord
    y: Coord


class WriteTool(_Tool):
    """Type text into the focused element (no click first), optionally pressing Enter."""

    tool_name: Literal["write"]
    content: str
    press_enter: bool = False


class PressKeyTool(_Tool):
    """Press one key (pyautogui key names)."""

    tool_name: Literal["press_key"]
    key: str = Field(min_length=1)


class HotkeyTool(_Tool):
    """Press 1-5 keys together, e.g. ["ctrl", "s"]."""

    tool_name: Literal["hotkey"]
    keys: list[str] = Field(min_length=1, max_length=5)


class ScrollTool(_Tool):
    """Scroll ``amount`` notches, at a point when x/y are given."""

    tool_name: Literal["scroll"]
    direction: Literal["up", "down", "left", "right"]
    amount: int = Field(default=3, strict=True, ge=1, le=50)
    x: Coord | None = None
    y: Coord | None = None


class DragTool(_Tool):
    """Press at one point, move to another, release."""

    tool_name: Literal["drag"]
    from_x: Coord
    from_y: Coord
    to_x: Coord
    to_y: Coord


class WaitTool(_Tool):
    """Wait a number of seconds."""

    tool_name: Literal["wait"]
    seconds: float = Field(ge=0, le=60)


class AnswerTool(_Tool):
    """Final answer; ends the episode. Content starting with INFEASIBLE declares infeasibility."""

    tool_name: Literal["answer"]
    content: str


ToolCall = Annotated[
    ClickTool
    | DoubleClickTool
    | RightClickTool
    | MoveToTool
    | WriteTool
    | PressKeyTool
    | HotkeyTool
    | ScrollTool
    | DragTool
    | WaitTool
    | AnswerTool,
    Field(discriminator="tool_name"),
]
"""Any one tool call; ``tool_name`` is the discriminator."""

TOOL_NAMES: tuple[str, ...] = (
    "click",
    "double_click",
    "right_click",
    "move_to",
    "write",
    "press_key",
    "hotkey",
    "scroll",
    "drag",
    "wait",
    "answer",
)


class RunCodeTool(_Tool):
    """A code action (``--code-actions``): run a Python or Bash script in the desktop, in its own
    process; its output is the tool's result. Only in the schema when code actions are on."""

    tool_name: Literal["run_code"]
    language: Literal["python", "bash"]
    code: str = Field(min_length=1, max_length=20000)


CodeToolCall = Annotated[
    ClickTool
    | DoubleClickTool
    | RightClickTool
    | MoveToTool
    | WriteTool
    | PressKeyTool
    | HotkeyTool
    | ScrollTool
    | DragTool
    | WaitTool
    | AnswerTool
    | RunCodeTool,
    Field(discriminator="tool_name"),
]
"""Any one tool call when code actions are on (GUI tools plus ``run_code``)."""

CODE_TOOL_NAMES: tuple[str, ...] = (*TOOL_NAMES, "run_code")


class Step(BaseModel):
    """One model turn: durable ``note`` (or null), a one-line ``thought``, one ``tool_call``."""

    model_config = ConfigDict(extra="forbid")

    note: str | None
    thought: str
    tool_call: ToolCall


class CodeStep(BaseModel):
    """A Step whose ``tool_call`` may also be ``run_code`` (the hybrid GUI + code protocol)."""

    model_config = ConfigDict(extra="forbid")

    note: str | None
    thought: str
    tool_call: CodeToolCall


_STEP_ADAPTER = TypeAdapter(Step)
_CODE_STEP_ADAPTER = TypeAdapter(CodeStep)


def _to_any_of(node: Any) -> Any:
    """Write ``oneOf`` as ``anyOf``, drop ``discriminator`` and titles (portable, shorter)."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == "discriminator" or (key == "title" and isinstance(value, str)):
                continue
            out["anyOf" if key == "oneOf" else key] = _to_any_of(value)
        return out
    if isinstance(node, list):
        return [_to_any_of(v) for v in node]
    return node


_SCHEMA: dict[str, Any] = _to_any_of(Step.model_json_schema())
_CODE_SCHEMA: dict[str, Any] = _to_any_of(CodeStep.model_json_schema())


def step_json_schema(code_actions: bool = False) -> dict[str, Any]:
    """The JSON schema of one Step (a fresh copy; ``oneOf`` written as ``anyOf``, no titles);
    with ``code_actions`` the ``run_code`` tool is one more member of the union."""
    return copy.deepcopy(_CODE_SCHEMA if code_actions else _SCHEMA)


def step_json_schema_text(code_actions: bool = False) -> str:
    """The schema serialised exactly as it appears in the prompt's ``<output_format>`` block."""
    return json.dumps(_CODE_SCHEMA if code_actions else _SCHEMA, indent=2, ensure_ascii=False)


MAX_OUTPUT_CHARS = 200_000
"""The longest model output parsed as a Step (characters). A Step is a note, a one-line thought
and one tool call; a longer output is malformed before it is parsed (a 30 MB answer is never
decoded, typed or sent back to the model)."""


MAX_REASON_CHARS = 500
"""The longest reason a malformed output is given (it is recorded and sent back to the model)."""


def printable(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, valid UTF-8 (a lone surrogate written ``\\udXXX``)."""
    return text[:limit].encode("utf-8", "backslashreplace").decode("utf-8")


class StepParseError(ValueError):
    """The model output is not a valid Step; ``reason`` is one line naming the problem (at most
    :data:`MAX_REASON_CHARS`, valid UTF-8, whatever part of the output it quotes)."""

    def __init__(self, reason: str) -> None:
        reason = printable(" ".join(reason.split()), MAX_REASON_CHARS)
        super().__init__(reason)
        self.reason = reason


def _describe(err: ValidationError) -> str:
    parts = []
    for e in err.errors()[:4]:
        loc = printable(".".join(str(p) for p in e["loc"]), 60)
        got = json.dumps(e.get("input"), default=str)[:80]
        parts.append(f"{loc}: {printable(e['msg'], 120)} (got {got})")
    return "schema mismatch: " + "; ".join(parts)


def _no_constant(name: str) -> NoReturn:
    raise StepParseError(f"invalid JSON: {name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise StepParseError(f"invalid JSON: the number {printable(text, 40)} is out of range")
    return value


def _parse(text: str, code_actions: bool) -> Step | CodeStep:
    """The checks of :func:`parse_step`, which may raise anything (it turns all into
    :class:`StepParseError`)."""
    if len(text) > MAX_OUTPUT_CHARS:
        raise StepParseError(
            f"output too long: {len(text)} characters (a Step is at most {MAX_OUTPUT_CHARS})"
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise StepParseError(f"invalid Unicode: {exc.reason} at character {exc.start}") from None
    try:
        data = json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except json.JSONDecodeError as exc:
        raise StepParseError(
            f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except RecursionError:
        raise StepParseError("invalid JSON: nested too deeply") from None
    except ValueError as exc:
        if isinstance(exc, StepParseError):
            raise
        raise StepParseError(f"invalid JSON: {printable(str(exc), 120)}") from None
    if not isinstance(data, dict):
        raise StepParseError(f"invalid JSON: expected an object, got {type(data).__name__}")
    try:
        step = (_CODE_STEP_ADAPTER if code_actions else _STEP_ADAPTER).validate_python(data)
    except ValidationError as exc:
        raise StepParseError(_describe(exc)) from None
    try:  # what is kept, recorded and sent back: a string holding a lone surrogate is not
        step.model_dump_json()
    except ValueError as exc:
        raise StepParseError(
            f"invalid Unicode in a string of the Step ({printable(str(exc), 120)})"
        ) from None
    return step


def parse_step(text: object, code_actions: bool = False) -> Step | CodeStep:
    """Parse the model's message content into a ``Step`` or raise :class:`StepParseError`
    (a ``run_code`` call is malformed unless ``code_actions``). Nothing else escapes: any
    failure on the way is the output's (see the module docstring)."""
    if text is None or (isinstance(text, str) and not text.strip()):
        raise StepParseError("empty output: expected one Step JSON object")
    if not isinstance(text, str):
        raise StepParseError(f"expected text, got {type(text).__name__}")
    try:
        return _parse(text, code_actions)
    except StepParseError:
        raise
    except Exception as exc:  # noqa: BLE001 - every failure (RecursionError too) is the output's
        raise StepParseError(
            f"unparseable output ({type(exc).__name__}: {printable(str(exc), 120)})"
        ) from None


def to_pixel(value: int, size: int) -> int:
    """Map a [0, 1000] coordinate to a pixel of an image ``size`` pixels long (round half up)."""
    px = (2 * value * size + 1000) // 2000
    return max(0, min(size - 1, px))


def is_infeasible(content: str) -> bool:
    """True when an answer declares the task infeasible (starts with INFEASIBLE, any case)."""
    return content.strip().upper().startswith("INFEASIBLE")


def to_input_event(call: Any, width: int, height: int) -> InputEvent:
    """Convert a non-answer tool call into a ``computer_env`` event in pixels of a w x h image."""

    def px(x: int, y: int) -> tuple[int, int]:
        return to_pixel(x, width), to_pixel(y, height)

    if isinstance(call, (ClickTool, DoubleClickTool, RightClickTool)):
        x, y = px(call.x, call.y)
        if isinstance(call, DoubleClickTool):
            return Click(x=x, y=y, count=2)
        if isinstance(call, RightClickTool):
            return Click(x=x, y=y, button="right")
        return Click(x=x, y=y)
    if isinstance(call, MoveToTool):
        x, y = px(call.x, call.y)
        return MoveTo(x=x, y=y)
    if isinstance(call, WriteTool):
        return TypeText(text=call.content, press_enter=call.press_enter)
    if isinstance(call, PressKeyTool):
        return KeyPress(key=call.key)
    if isinstance(call, HotkeyTool):
        return Hotkey(keys=list(call.keys))
    if isinstance(call, ScrollTool):
        sx = to_pixel(call.x, width) if call.x is not None else None
        sy = to_pixel(call.y, height) if call.y is not None else None
        return Scroll(direction=call.direction, amount=call.amount, x=sx, y=sy)
    if isinstance(call, DragTool):
        x1, y1 = px(call.from_x, call.from_y)
        x2, y2 = px(call.to_x, call.to_y)
        return Drag(x1=x1, y1=y1, x2=x2, y2=y2)
    if isinstance(call, WaitTool):
        return Wait(seconds=call.seconds)
    raise TypeError(f"no input event for tool {getattr(call, 'tool_name', call)!r}")
