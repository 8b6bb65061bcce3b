"""The Holo3.1 agent loop, recorder, replay page and reference endpoint.

PYTEST_DONT_REWRITE: see ``fixtures/__init__.py``.
"""

from holo_agent.agent import HoloComputerAgent
from holo_agent.client import ChatClient, ChatResponse
from holo_agent.conversation import Conversation
from holo_agent.errors import HarnessRequestError
from holo_agent.images import SentImage, prepare_image
from holo_agent.prompt import available_prompts, build_system_prompt
from holo_agent.protocol import Agent
from holo_agent.recorder import Recorder, atomic_write, read_traj
from holo_agent.records import EndReason, StepRecord, Totals, Trajectory, TurnTimes
from holo_agent.replay import render_replay
from holo_agent.tools import (
    TOOL_NAMES,
    Step,
    StepParseError,
    ToolCall,
    is_infeasible,
    parse_step,
    step_json_schema,
    to_input_event,
    to_pixel,
)

__all__ = [
    "Agent",
    "ChatClient",
    "ChatResponse",
    "Conversation",
    "EndReason",
    "HarnessRequestError",
    "HoloComputerAgent",
    "Recorder",
    "SentImage",
    "Step",
    "StepParseError",
    "StepRecord",
    "TOOL_NAMES",
    "ToolCall",
    "Totals",
    "Trajectory",
    "TurnTimes",
    "atomic_write",
    "available_prompts",
    "build_system_prompt",
    "is_infeasible",
    "parse_step",
    "prepare_image",
    "read_traj",
    "render_replay",
    "step_json_schema",
    "to_input_event",
    "to_pixel",
]
