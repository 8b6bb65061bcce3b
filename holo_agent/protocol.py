"""What the harness needs from an agent: play one episode on a ``ComputerEnv``, then close."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from computer_env.base import ComputerEnv
from holo_agent.records import Trajectory


@runtime_checkable
class Agent(Protocol):
    """An agent the harness can run (``HoloComputerAgent`` is one)."""

    def run(self, env: ComputerEnv, max_steps: int) -> Trajectory:
        """Play until the agent answers, ``max_steps`` steps are used or the env ends it."""
        ...

    def close(self) -> None:
        """Release what the agent holds (HTTP clients)."""
        ...


__all__ = ["Agent"]
