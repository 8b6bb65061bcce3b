"""The contract between agents and environments: ``ComputerEnv``, ``InputEvent``, ``StepResult``.

Agents (``holo_agent``) see only this module and :mod:`computer_env.errors`. Coordinates here are
always *pixels of the screenshot the env returned* (the agent does any [0,1000] scaling).
"""

from __future__ import annotations

import abc
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Click(_Event):
    """Press and release a mouse button at a pixel (``count`` 2 = double click)."""

    kind: Literal["click"] = "click"
    x: int
    y: int
    button: Literal["left", "right", "middle"] = "left"
    count: int = Field(default=1, ge=1, le=3)


class MoveTo(_Event):
    """Move the pointer to a pixel."""

    kind: Literal["move"] = "move"
    x: int
    y: int


class TypeText(_Event):
    """Type text into the focused element (any Unicode), optionally pressing Enter after."""

    kind: Literal["type"] = "type"
    text: str
    press_enter: bool = False


class KeyPress(_Event):
    """Press and release one key (pyautogui key names: 'enter', 'tab', 'f5', 'a', 'up'...)."""

    kind: Literal["key"] = "key"
    key: str = Field(min_length=1)


class Hotkey(_Event):
    """Press keys together, in order, then release them (e.g. ['ctrl', 's'])."""

    kind: Literal["hotkey"] = "hotkey"
    keys: list[str] = Field(min_length=1, max_length=5)


class Scroll(_Event):
    """Scroll ``amount`` notches in a direction, at a pixel when given."""

    kind: Literal["scroll"] = "scroll"
    direction: Literal["up", "down", "left", "right"]
    amount: int = Field(default=3, ge=1, le=50)
    x: int | None = None
    y: int | None = None


class Drag(_Event):
    """Press the left button at one pixel, move to another, release."""

    kind: Literal["drag"] = "drag"
    x1: int
    y1: int
    x2: int
    y2: int


class Wait(_Event):
    """Do nothing for a while (the world may change)."""

    kind: Literal["wait"] = "wait"
    seconds: float = Field(default=1.0, ge=0, le=60)


InputEvent = Annotated[
    Click | MoveTo | TypeText | KeyPress | Hotkey | Scroll | Drag | Wait,
    Field(discriminator="kind"),
]
"""Any one input an agent can apply to a computer."""


def describe(event: object) -> str:
    """A short human-readable description of an input event (what environments report back)."""
    if isinstance(event, Click):
        what = {1: "click", 2: "double click", 3: "triple click"}[event.count]
        prefix = "" if event.button == "left" else f"{event.button} "
        return f"{prefix}{what} at ({event.x}, {event.y})"
    if isinstance(event, MoveTo):
        return f"moved the pointer to ({event.x}, {event.y})"
    if isinstance(event, TypeText):
        text = event.text if len(event.text) <= 60 else event.text[:57] + "..."
        return f"typed {text!r}" + (" and pressed Enter" if event.press_enter else "")
    if isinstance(event, KeyPress):
        return f"pressed {event.key}"
    if isinstance(event, Hotkey):
        return f"pressed {'+'.join(event.keys)}"
    if isinstance(event, Scroll):
        at = f" at ({event.x}, {event.y})" if event.x is not None and event.y is not None else ""
        return f"scrolled {event.direction} {event.amount}{at}"
    if isinstance(event, Drag):
        return f"dragged from ({event.x1}, {event.y1}) to ({event.x2}, {event.y2})"
    if isinstance(event, Wait):
        return f"waited {event.seconds:g} s"
    return f"{getattr(event, 'kind', type(event).__name__)} input"


class Observation(BaseModel):
    """One screenshot exactly as produced by the env (encoded image bytes and its size)."""

    model_config = ConfigDict(frozen=True)

    image: bytes
    width: int
    height: int
    mime: str = "image/png"
    notice: str | None = None
    """What the env noticed about this screen and did about it (e.g. the screen is not the
    task's size any more); recorded on the step and shown on the replay."""


class StepResult(BaseModel):
    """What applying one ``InputEvent`` did.

    ``output`` is the text the agent is shown as the tool's result; ``done`` is True when the
    environment itself ended the episode (a game over), ``info`` holds env-specific detail.
    """

    output: str = "ok"
    done: bool = False
    info: dict[str, Any] = Field(default_factory=dict)


class ComputerEnv(abc.ABC):
    """A computer an agent operates through screenshots and input events."""

    @property
    @abc.abstractmethod
    def instruction(self) -> str:
        """The task text given to the agent."""

    @property
    def task_key(self) -> str | None:
        """A stable id of the task played (e.g. ``os/os-create-report-file``), or None. The
        agent sends it as the request's ``user`` (OpenAI's end-user id, which model servers
        ignore); the harness's reference endpoint picks the task's solution by it."""
        return None

    @abc.abstractmethod
    def observe(self) -> Observation:
        """Return the current screen."""

    @abc.abstractmethod
    def step(self, event: InputEvent) -> StepResult:
        """Apply one input event. Raises ``InfraError`` subclasses for env failures."""

    @abc.abstractmethod
    def finish(self, answer: str, *, infeasible: bool) -> None:
        """The agent's final answer; ``infeasible`` when it declared the task impossible."""

    def run_code(self, language: str, code: str, *, timeout_s: float) -> StepResult:
        """A code action: run a ``python`` or ``bash`` script inside the computer (never on the
        host) in its own process, at most ``timeout_s`` seconds. ``output`` is what the script
        printed; ``info`` holds ``exit_code`` (None when it timed out) and ``timed_out``.
        Environments without a place to run code raise ``NotImplementedError``."""
        raise NotImplementedError(f"{type(self).__name__} cannot run code actions")

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources held for this episode (default: nothing)."""
