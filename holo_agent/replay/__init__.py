"""The step-by-step replay page of a task folder."""

from holo_agent.replay.page import REFERENCE_LABEL, render_replay

__all__ = ["REFERENCE_LABEL", "render_replay"]
