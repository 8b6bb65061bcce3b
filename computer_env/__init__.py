"""Environment side: the agent/env contract, desktops (OSWorld-compatible), OSWorld, RealtimeGym.

The names below load on first use (PEP 562), so the desktop's own processes, which import
modules of this package, do not load pydantic for the agent/env contract.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_WHERE = {
    "Click": "computer_env.base",
    "ComputerEnv": "computer_env.base",
    "Drag": "computer_env.base",
    "Hotkey": "computer_env.base",
    "InputEvent": "computer_env.base",
    "KeyPress": "computer_env.base",
    "MoveTo": "computer_env.base",
    "Observation": "computer_env.base",
    "Scroll": "computer_env.base",
    "StepResult": "computer_env.base",
    "TypeText": "computer_env.base",
    "Wait": "computer_env.base",
    "describe": "computer_env.base",
    "ConfigurationError": "computer_env.errors",
    "EvaluatorInfraError": "computer_env.errors",
    "InfraError": "computer_env.errors",
    "ModelEndpointError": "computer_env.errors",
    "NetworkError": "computer_env.errors",
    "SetupError": "computer_env.errors",
    "VMStartError": "computer_env.errors",
    "VMUnreachable": "computer_env.errors",
    "is_loopback": "computer_env.peers",
    "peer_uid": "computer_env.peers",
    "same_user": "computer_env.peers",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Click", "ComputerEnv", "Drag", "Hotkey", "InputEvent", "KeyPress", "MoveTo", "Observation",
    "Scroll", "StepResult", "TypeText", "Wait", "describe",
    "ConfigurationError", "EvaluatorInfraError", "InfraError", "ModelEndpointError",
    "NetworkError", "SetupError", "VMStartError", "VMUnreachable",
    "is_loopback", "peer_uid", "same_user",
]
