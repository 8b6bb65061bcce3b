"""OSWorld's own code (``desktop_env``): where it comes from, and importing it without its heavy
optional dependencies.

``make setup`` installs OSWorld's published package (``desktop-env``) without its pinned
dependencies, plus what its controllers, setup, getters and metrics import at top level (the
``osworld`` extra, Google Drive's ``pydrive`` and audio's ``librosa`` included). A user's
checkout (``--osworld-root`` with a ``desktop_env/`` folder) is put first on ``sys.path``
(:func:`use_checkout`: by the plugin for a run, by ``plan``) and wins over the package.

What OSWorld imports but is not installed here (``easyocr`` always) is an *absent module*
(:mod:`.absent`, whose names are re-exported here): a task that would touch one is skipped.

Importing OSWorld's setup module also loads its proxy pool from
``evaluation_examples/settings/proxy/dataimpulse.json`` (a file of OSWorld's maintainers, not in
its repository), logging an ERROR when it is not there, in every process; that one message is
kept out of the log (the harness routes ``"proxy": true`` tasks through its own ``--proxy``).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.metadata
import importlib.util
import logging
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from computer_env.errors import ConfigurationError
from computer_env.osworld.upstream import parts as upstream_parts
from computer_env.osworld.upstream.absent import (
    OPTIONAL,
    AbsentModule,
    MissingDependency,
    absent_dependencies,
    absent_modules,
    install_finder,
    missing_reason,
)


@functools.cache
def upstream_available() -> bool:
    """Is OSWorld's ``desktop_env`` importable (without importing it)?"""
    try:
        return importlib.util.find_spec("desktop_env") is not None
    except (ImportError, ValueError):
        return False


def osworld_source() -> str:
    """Where ``desktop_env`` comes from: ``"desktop-env <version> (package)"`` or
    ``"checkout <folder>"``; ``"missing"`` when it is not importable."""
    if not upstream_available():
        return "missing"
    spec = importlib.util.find_spec("desktop_env")
    origin = str(spec.origin or "") if spec is not None else ""
    try:
        dist = importlib.metadata.distribution("desktop-env")
        installed = str(dist.locate_file("desktop_env/__init__.py"))
        if origin and installed == origin:
            return f"desktop-env {dist.version} (package)"
    except importlib.metadata.PackageNotFoundError:
        pass
    folder = origin.rsplit("/desktop_env/", 1)[0] if origin else "?"
    return f"checkout {folder}"


def checkout_folder(root: Path | None) -> Path | None:
    """The OSWorld checkout ``--osworld-root`` names (``root`` or its parent, whichever holds
    ``desktop_env/``); None when it has no code (its task files are then judged by the
    installed package)."""
    if root is None:
        return None
    for candidate in (root, root.parent):
        if (candidate / "desktop_env").is_dir():
            return candidate
    return None


def use_checkout(root: Path | None) -> Path | None:
    """Make the checkout under ``root`` (see :func:`checkout_folder`) the ``desktop_env`` this
    process imports, ahead of the installed package; the folder used, or None."""
    folder = checkout_folder(root)
    if folder is None:
        return None
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    for loaded in [m for m in sys.modules if m == "desktop_env" or m.startswith("desktop_env.")]:
        del sys.modules[loaded]  # imported from the package before: import again from here
    importlib.invalidate_caches()
    upstream_available.cache_clear()
    return folder


class _DropProxyPoolError(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.getMessage()).startswith("Failed to load proxies from")


@contextlib.contextmanager
def _quiet_import() -> Iterator[None]:
    """Keep OSWorld's import-time proxy-pool ERROR (see the module docstring) out of the log."""
    pool_logger = logging.getLogger("desktopenv.providers.aws.ProxyPool")
    drop = _DropProxyPoolError()
    pool_logger.addFilter(drop)
    try:
        yield
    finally:
        pool_logger.removeFilter(drop)


def _import(name: str) -> types.ModuleType:
    if not upstream_available():
        raise ConfigurationError(
            "OSWorld's code (desktop_env) is not installed: run `make setup` (it installs the "
            "desktop-env package) or pass --osworld-root with an OSWorld checkout"
        )
    install_finder()
    try:
        with _quiet_import():
            return importlib.import_module(name)
    except ImportError as exc:
        raise ConfigurationError(
            f"OSWorld's {name} ({osworld_source()}) cannot be imported: {exc}; `make setup` "
            "installs what it needs (the osworld extra)"
        ) from exc


def _import_part(fn: Any, *args: str) -> Any:
    """``fn(*args)`` (see :mod:`.upstream_parts`) under the same checks as :func:`_import`."""
    _import("desktop_env.evaluators")
    try:
        with _quiet_import():
            return fn(*args)
    except ImportError as exc:
        raise ConfigurationError(
            f"OSWorld's {args[0]} ({osworld_source()}) cannot be imported: {exc}; `make setup` "
            "installs what it needs (the osworld extra)"
        ) from exc


def upstream_getters() -> types.ModuleType:
    """``desktop_env.evaluators.getters``, every getter (imported on first use)."""
    return _import_part(upstream_parts.full_package, upstream_parts.GETTERS)


def upstream_metrics() -> types.ModuleType:
    """``desktop_env.evaluators.metrics``, every metric (imported on first use)."""
    return _import_part(upstream_parts.full_package, upstream_parts.METRICS)


def upstream_getter(name: str) -> Any:
    """OSWorld's getter ``name`` (``get_...``), importing only the module that defines it;
    None when there is none."""
    return _import_part(upstream_parts.member, upstream_parts.GETTERS, name)


def upstream_metric(name: str) -> Any:
    """OSWorld's metric ``name``, importing only the module that defines it; None when there
    is none."""
    return _import_part(upstream_parts.member, upstream_parts.METRICS, name)


def upstream_setup_module() -> types.ModuleType:
    """``desktop_env.controllers.setup`` (imported on first use; of the metrics only the
    ``utils`` module it needs)."""
    _import_part(upstream_parts.bare_package, upstream_parts.METRICS)
    return _import("desktop_env.controllers.setup")


def upstream_python_controller() -> type:
    """OSWorld's ``PythonController`` class."""
    return _import("desktop_env.controllers.python").PythonController


__all__ = [
    "AbsentModule",
    "MissingDependency",
    "OPTIONAL",
    "absent_dependencies",
    "absent_modules",
    "checkout_folder",
    "missing_reason",
    "osworld_source",
    "upstream_available",
    "upstream_getter",
    "upstream_getters",
    "upstream_metric",
    "upstream_metrics",
    "upstream_python_controller",
    "upstream_setup_module",
    "use_checkout",
]
