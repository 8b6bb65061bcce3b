"""Lazy access to OSWorld's own ``desktop_env`` (from ``--osworld-root`` or an installation).

Importing ``desktop_env``'s evaluators loads heavy dependencies (torch via easyocr, librosa,
cv2...), so nothing here imports it until a task actually needs it.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import logging
from types import ModuleType
from typing import Literal

from computer_env.errors import ConfigurationError

logger = logging.getLogger(__name__)

Backend = Literal["auto", "upstream", "builtin"]
"""Which implementation of setup steps / getters / metrics to use (``auto``: upstream when
``desktop_env`` is importable and the desktop is an OSWorld VM)."""


@functools.cache
def upstream_available() -> bool:
    """Is OSWorld's ``desktop_env`` package importable (without importing it)?"""
    try:
        return importlib.util.find_spec("desktop_env") is not None
    except (ImportError, ValueError):
        return False


def _import(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise ConfigurationError(
            f"OSWorld's {name} is on the path but cannot be imported ({exc}); install the "
            "requirements of your OSWorld checkout (its requirements.txt) into this environment"
        ) from exc


def upstream_getters() -> ModuleType:
    """``desktop_env.evaluators.getters`` (imported on first use)."""
    return _import("desktop_env.evaluators.getters")


def upstream_metrics() -> ModuleType:
    """``desktop_env.evaluators.metrics`` (imported on first use)."""
    return _import("desktop_env.evaluators.metrics")


def upstream_setup_module() -> ModuleType:
    """``desktop_env.controllers.setup`` (imported on first use)."""
    return _import("desktop_env.controllers.setup")


def use_upstream(backend: Backend, *, upstream_vm: bool) -> bool:
    """Resolve a backend choice: ``auto`` means upstream iff importable and on an OSWorld VM."""
    if backend == "upstream":
        if not upstream_available():
            raise ConfigurationError("backend 'upstream' needs OSWorld's desktop_env "
                                     "(pass --osworld-root or install it)")
        return True
    if backend == "builtin":
        return False
    return upstream_vm and upstream_available()


__all__ = [
    "Backend", "upstream_available", "upstream_getters", "upstream_metrics",
    "upstream_setup_module", "use_upstream",
]
