"""``OSWorldComputerEnv``: the ``ComputerEnv`` an agent plays an OSWorld task through."""

from __future__ import annotations

import io
import logging
import time

from PIL import Image

from computer_env.base import ComputerEnv, InputEvent, Observation, StepResult, TypeText, Wait
from computer_env.desktop.grabs import XServerGrabbed, released
from computer_env.osworld.actions import describe, to_pyautogui
from computer_env.osworld.catalog.tasks import Task
from computer_env.osworld.code_action import run_code
from computer_env.osworld.context import TaskContext
from computer_env.osworld.prepare.settle import wait_until_settled

logger = logging.getLogger(__name__)


class OSWorldComputerEnv(ComputerEnv):
    """Screenshots from the desktop server; input as pyautogui code run in the desktop (the
    server's fast path when offered, else OSWorld's ``/execute``); text typed Unicode-safe.
    Every action is appended to ``ctx.action_history`` as OSWorld-style code.

    ``settle`` = ``(quiet_s, cap_s)``: after each action wait until the screen is quiet that
    long (at most ``cap_s``) so the next screenshot shows the action's effect; None disables it.
    """

    def __init__(
        self, task: Task, ctx: TaskContext, *, settle: tuple[float, float] | None = (0.3, 3.0)
    ) -> None:
        self.task = task
        self.ctx = ctx
        self._settle = settle
        self._shot_size: tuple[int, int] | None = None
        self._grabs_before: int | None = None  # the guest server's grab count at the first look
        self.screen_changes: list[str] = []  # one notice per screenshot not of the task's size
        self.keymap_changes: list[str] = []  # one notice per screenshot with another keymap
        self._keymap_before: str | None = None  # the keymap's digest at the first look
        self.finished = False
        self.answer: str | None = None

    @property
    def instruction(self) -> str:
        return self.task.instruction

    @property
    def task_key(self) -> str:
        return self.task.case_id

    def observe(self) -> Observation:
        """The screen; raises :class:`XServerGrabbed` once the guest server found a grab of
        its X server since the first observation (the agent's side took it)."""
        client = self.ctx.client
        data = client.screenshot(fmt="png")
        seen = client.x_grabs_seen
        if self._grabs_before is None:
            self._grabs_before = seen or 0
        elif seen is not None and seen > self._grabs_before:
            raise XServerGrabbed(released(client.x_grabs().grabs)[self._grabs_before :])
        keymap_notice = None
        if self._keymap_before is None:
            self._keymap_before = client.keymap_seen or ""
        elif client.keymap_seen and client.keymap_seen != self._keymap_before:
            keymap_notice = (
                "the keyboard map is not the one of the first screenshot (changed "
                "inside the desktop): keys may type other characters"
            )
            self.keymap_changes.append(keymap_notice)
        with Image.open(io.BytesIO(data)) as img:
            width, height = img.size
            notice = None
            if (width, height) != tuple(self.ctx.screen):
                data, notice = fit_to_screen(img, self.ctx.screen)
                self.screen_changes.append(notice)
                logger.warning("%s", notice)
                width, height = self.ctx.screen
        self._shot_size = (width, height)
        notices = [n for n in (notice, keymap_notice) if n]
        return Observation(
            image=data,
            width=width,
            height=height,
            mime="image/png",
            notice="; ".join(notices) or None,
        )

    def _scale(self) -> tuple[float, float]:
        if self._shot_size is None:
            return 1.0, 1.0
        sw, sh = self.ctx.screen
        return sw / self._shot_size[0], sh / self._shot_size[1]

    def step(self, event: InputEvent) -> StepResult:
        code = to_pyautogui(event, self._scale())
        text = describe(event)
        error: str | None = None
        if isinstance(event, Wait):
            time.sleep(event.seconds)
        elif isinstance(event, TypeText):
            self.ctx.client.type_text(event.text)
            if event.press_enter:
                res = self.ctx.client.run_pyautogui("pyautogui.press('enter')")
                error = _error_of(res)
        else:
            error = _error_of(self.ctx.client.run_pyautogui(code))
        self.ctx.action_history.append(code)
        settled = 0.0  # reported as info["settle_s"]: where the step's time went
        if self._settle is not None and not isinstance(event, Wait):
            settled = wait_until_settled(
                self.ctx.client, quiet_s=self._settle[0], cap_s=self._settle[1]
            )
        if error:
            logger.info("action %s failed in the desktop: %s", code, error)
            return StepResult(
                output=f"{text}; the action failed: {error}",
                info={"code": code, "error": error, "settle_s": settled},
            )
        return StepResult(output=text, info={"code": code, "settle_s": settled})

    def run_code(self, language: str, code: str, *, timeout_s: float) -> StepResult:
        """A code action through the desktop's /run_python or /run_bash_script (inside the
        desktop); recorded in the action history as OSWorld-style code."""
        result = run_code(self.ctx.client, language, code, timeout_s=timeout_s)
        self.ctx.action_history.append(f"# run_code {language}\n{code}")
        if self._settle is not None:
            wait_until_settled(self.ctx.client, quiet_s=self._settle[0], cap_s=self._settle[1])
        return result

    def finish(self, answer: str, *, infeasible: bool) -> None:
        """Record the end: ``FAIL`` when declared infeasible, else ``DONE`` (as upstream)."""
        self.finished = True
        self.answer = answer
        self.ctx.action_history.append("FAIL" if infeasible else "DONE")


def fit_to_screen(img: Image.Image, screen: tuple[int, int]) -> tuple[bytes, str]:
    """A screenshot whose size is not the task's ``screen`` (changed inside the desktop, e.g.
    by xrandr) put on a black canvas of the task's size at the top left (cut where larger), so
    the action mapping stays the task's: a point of the image is that pixel of the screen.
    Returns the PNG and the notice that says so."""
    canvas = Image.new("RGB", screen)
    canvas.paste(img.convert("RGB"), (0, 0))
    out = io.BytesIO()
    canvas.save(out, format="PNG")
    return out.getvalue(), (
        f"the screen is {img.width}x{img.height}, not the task's "
        f"{screen[0]}x{screen[1]} (changed inside the desktop): shown at the "
        "top left of a black screen of the task's size"
    )


def _error_of(res: object) -> str | None:
    rc = getattr(res, "returncode", 0)
    status = getattr(res, "status", "success")
    if rc not in (0, None) or status not in ("success", "ok", None):
        err = (getattr(res, "error", "") or getattr(res, "output", "") or "").strip()
        return err.splitlines()[-1][:300] if err else f"exit status {rc}"
    return None


__all__ = ["OSWorldComputerEnv"]
