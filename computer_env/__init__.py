"""Environment side: the agent/env contract, desktops (OSWorld-compatible), OSWorld, RealtimeGym."""

from computer_env.base import (
    Click,
    ComputerEnv,
    Drag,
    Hotkey,
    InputEvent,
    KeyPress,
    MoveTo,
    Observation,
    Scroll,
    StepResult,
    TypeText,
    Wait,
    describe,
)
from computer_env.errors import (
    ConfigurationError,
    EvaluatorInfraError,
    InfraError,
    ModelEndpointError,
    NetworkError,
    SetupError,
    VMStartError,
    VMUnreachable,
)

__all__ = [
    "Click", "ComputerEnv", "Drag", "Hotkey", "InputEvent", "KeyPress", "MoveTo", "Observation",
    "Scroll", "StepResult", "TypeText", "Wait", "describe",
    "ConfigurationError", "EvaluatorInfraError", "InfraError", "ModelEndpointError",
    "NetworkError", "SetupError", "VMStartError", "VMUnreachable",
]
