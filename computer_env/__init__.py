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
from computer_env.peers import is_loopback, peer_uid, same_user

__all__ = [
    "Click", "ComputerEnv", "Drag", "Hotkey", "InputEvent", "KeyPress", "MoveTo", "Observation",
    "Scroll", "StepResult", "TypeText", "Wait", "describe",
    "ConfigurationError", "EvaluatorInfraError", "InfraError", "ModelEndpointError",
    "NetworkError", "SetupError", "VMStartError", "VMUnreachable",
    "is_loopback", "peer_uid", "same_user",
]
