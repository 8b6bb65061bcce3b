"""The reference endpoint: plays scripted Holo Steps and checks the agent-loop conventions."""

from holo_agent.reference.conformance import Violation, check_request, extract_instruction
from holo_agent.reference.faults import CONTENT_FAULTS, FaultPlan
from holo_agent.reference.script import DONE_STEP, NoSolution, is_raw, raw, solution_key
from holo_agent.reference.server import ReferenceEndpoint

__all__ = [
    "CONTENT_FAULTS",
    "DONE_STEP",
    "FaultPlan",
    "NoSolution",
    "ReferenceEndpoint",
    "Violation",
    "check_request",
    "extract_instruction",
    "is_raw",
    "raw",
    "solution_key",
]
