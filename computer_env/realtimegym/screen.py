"""What the agent sees of a game: its frame, scaled, above the control panel, as a PNG."""

from __future__ import annotations

import io

from PIL import Image

from computer_env.base import Observation
from computer_env.realtimegym.backend import GameBackend
from computer_env.realtimegym.panel import PANEL_HEIGHT, ControlPanel


class GameScreen:
    """The composed screenshot of one game: the backend's frame (times ``frame_scale``) with the
    :class:`ControlPanel` laid out below it (its buttons are hit-tested in screenshot pixels)."""

    def __init__(self, backend: GameBackend, game: str, frame_scale: float = 1.0) -> None:
        self._backend = backend
        self.frame_scale = frame_scale
        frame = self.frame()
        self.panel = ControlPanel(game, frame.width, top=frame.height, height=PANEL_HEIGHT)

    def frame(self) -> Image.Image:
        """The game's current frame, scaled."""
        frame = self._backend.render()
        if self.frame_scale != 1.0:
            size = (round(frame.width * self.frame_scale), round(frame.height * self.frame_scale))
            frame = frame.resize(size, Image.Resampling.LANCZOS)
        return frame

    def compose(self, status: str) -> Image.Image:
        """The current frame above the panel, ``status`` on the panel's top strip."""
        return self.panel.compose(self.frame(), status=status)


def status_line(turn: int, max_turns: int, score: float) -> str:
    """The panel's status strip: turn and score."""
    return f"Turn {turn}/{max_turns}   Score {score:g}"


def to_observation(image: Image.Image) -> Observation:
    """A composed screenshot as the contract's PNG observation."""
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return Observation(image=buf.getvalue(), width=image.width, height=image.height)


__all__ = ["GameScreen", "status_line", "to_observation"]
