"""Importing only the part of OSWorld's metrics and getters a task uses.

``desktop_env.evaluators.metrics/__init__.py`` imports every metric module (pandas, playwright,
pypdf, python-docx...: about 250 MiB in a worker), and OSWorld's setup module imports it just
for one helper of ``metrics/utils.py``. Here such a package is registered *bare* (its
``__init__`` not run, its folder searchable), so ``metrics.utils`` or the one module that
defines a task's metric is imported alone; :func:`full_package` runs the real ``__init__``
when the whole package is wanted (the modules already imported are reused).
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import sys
import types
from pathlib import Path
from typing import Any

METRICS = "desktop_env.evaluators.metrics"
GETTERS = "desktop_env.evaluators.getters"


def is_bare(module: types.ModuleType | None) -> bool:
    return bool(getattr(module, "__bare__", False))


def bare_package(name: str) -> None:
    """Register package ``name`` without running its ``__init__`` (no-op once imported)."""
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)  # imports the parents, not ``name`` itself
    if spec is None or not spec.submodule_search_locations:
        return
    module = types.ModuleType(name, f"{name} (bare: its __init__ not run)")
    module.__path__ = list(spec.submodule_search_locations)
    module.__package__ = name
    module.__spec__ = spec
    module.__bare__ = True  # type: ignore[attr-defined]
    sys.modules[name] = module
    parent, _, short = name.rpartition(".")
    setattr(sys.modules[parent], short, module)


def full_package(name: str) -> types.ModuleType:
    """Package ``name`` with its ``__init__`` run (replacing a bare registration)."""
    current = sys.modules.get(name)
    if current is not None and not is_bare(current):
        return current
    loaded = {m: sys.modules[m] for m in list(sys.modules) if m.startswith(name + ".")}
    sys.modules.pop(name, None)
    module = importlib.import_module(name)
    for full, sub in loaded.items():
        if full.count(".") == name.count(".") + 1:
            setattr(module, full.rsplit(".", 1)[1], sub)
    return module


@functools.cache
def exports(package_dir: str) -> dict[str, str]:
    """Name -> submodule, from the ``from .sub import name`` lines of a package's
    ``__init__.py`` (names it defines itself are not listed)."""
    init = Path(package_dir) / "__init__.py"
    try:
        tree = ast.parse(init.read_text(encoding="utf-8"))
    except (OSError, SyntaxError):
        return {}
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            for alias in node.names:
                out[alias.asname or alias.name] = node.module
    return out


def member(package: str, name: str) -> Any:
    """``package.name`` importing only the submodule that defines it (the whole package when
    its ``__init__`` defines it, or when it is already imported); None when there is none."""
    current = sys.modules.get(package)
    if current is not None and not is_bare(current):
        return getattr(current, name, None)
    bare_package(package)
    pkg = sys.modules.get(package)
    where = exports(str(pkg.__path__[0])).get(name) if pkg is not None else None
    if where is None:
        return getattr(full_package(package), name, None)
    return getattr(importlib.import_module(f"{package}.{where}"), name, None)


__all__ = ["GETTERS", "METRICS", "bare_package", "exports", "full_package", "is_bare", "member"]
