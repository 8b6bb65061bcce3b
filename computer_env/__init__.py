"""Environment side: the agent/env contract, desktops (OSWorld-compatible), OSWorld, RealtimeGym.

The names below load on first use (PEP 562), so the desktop's own processes, which import
modules of this package, do not load pydantic for the agent/env contract.

PYTEST_DONT_REWRITE: see ``fixtures/__init__.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from computer_env.lazy import lazy_names

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

__getattr__ = lazy_names(
    __name__,
    {
        "computer_env.base": (
            "Click",
            "ComputerEnv",
            "Drag",
            "Hotkey",
            "InputEvent",
            "KeyPress",
            "MoveTo",
            "Observation",
            "Scroll",
            "StepResult",
            "TypeText",
            "Wait",
            "describe",
        ),
        "computer_env.errors": (
            "ConfigurationError",
            "EvaluatorInfraError",
            "InfraError",
            "ModelEndpointError",
            "NetworkError",
            "SetupError",
            "VMStartError",
            "VMUnreachable",
        ),
        "computer_env.peers": ("is_loopback", "peer_uid", "same_user"),
    },
)

__all__ = [
    "Click",
    "ComputerEnv",
    "Drag",
    "Hotkey",
    "InputEvent",
    "KeyPress",
    "MoveTo",
    "Observation",
    "Scroll",
    "StepResult",
    "TypeText",
    "Wait",
    "describe",
    "ConfigurationError",
    "EvaluatorInfraError",
    "InfraError",
    "ModelEndpointError",
    "NetworkError",
    "SetupError",
    "VMStartError",
    "VMUnreachable",
    "is_loopback",
    "peer_uid",
    "same_user",
]
