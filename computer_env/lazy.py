"""Package names that load on first use (PEP 562), so a process importing one small module of
a package does not import everything the package's ``__init__`` re-exports."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_names(package: str, where: dict[str, tuple[str, ...]]) -> Callable[[str], Any]:
    """A module-level ``__getattr__`` for ``package``: each name of ``where[module]`` is
    imported from ``module`` when first asked for."""
    home = {name: module for module, names in where.items() for name in names}

    def __getattr__(name: str) -> Any:
        if name in home:
            return getattr(importlib.import_module(home[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
