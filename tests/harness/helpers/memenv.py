"""A small in-memory ``ComputerEnv`` for the agent-loop tests.

It renders a synthetic screen with PIL (a title bar, a button, the step count and a dot where the
last click landed) and records every event it receives and the final answer. Not a desktop: the
tests that need real input use the local desktop; these tests exercise the agent loop.
"""

from __future__ import annotations

import io

from PIL import Image, ImageDraw

from computer_env.base import Click, ComputerEnv, InputEvent, Observation, StepResult


class MemoryEnv(ComputerEnv):
    """Synthetic screen of ``width`` x ``height``; ``events`` lists what the agent sent."""

    def __init__(
        self,
        instruction: str,
        width: int = 1280,
        height: int = 800,
        *,
        mime: str = "image/png",
        done_after: int | None = None,
    ) -> None:
        self._instruction = instruction
        self.width, self.height = width, height
        self.mime = mime
        self.done_after = done_after
        self.events: list[InputEvent] = []
        self.observations: list[Observation] = []
        self.finished: tuple[str, bool] | None = None
        self.closed = False

    @property
    def instruction(self) -> str:
        return self._instruction

    def _render(self) -> bytes:
        img = Image.new("RGB", (self.width, self.height), (236, 239, 244))
        d = ImageDraw.Draw(img)
        d.rectangle([0, 0, self.width, 28], fill=(46, 52, 64))
        d.text((10, 8), f"memenv - step {len(self.events)}", fill=(236, 239, 244))
        bw, bh = self.width // 6, self.height // 12
        x0, y0 = self.width // 2 - bw // 2, self.height // 2 - bh // 2
        d.rectangle([x0, y0, x0 + bw, y0 + bh], fill=(94, 129, 172), outline=(59, 66, 82))
        d.text((x0 + 10, y0 + bh // 3), "OK", fill=(255, 255, 255))
        last = next((e for e in reversed(self.events) if isinstance(e, Click)), None)
        if last is not None:
            d.ellipse([last.x - 4, last.y - 4, last.x + 4, last.y + 4], fill=(191, 97, 106))
        buf = io.BytesIO()
        img.save(buf, format="JPEG" if self.mime == "image/jpeg" else "PNG")
        return buf.getvalue()

    def observe(self) -> Observation:
        obs = Observation(
            image=self._render(), width=self.width, height=self.height, mime=self.mime
        )
        self.observations.append(obs)
        return obs

    def step(self, event: InputEvent) -> StepResult:
        self.events.append(event)
        done = self.done_after is not None and len(self.events) >= self.done_after
        return StepResult(output=f"applied {event.kind}", done=done)

    def finish(self, answer: str, *, infeasible: bool) -> None:
        self.finished = (answer, infeasible)

    def close(self) -> None:
        self.closed = True
