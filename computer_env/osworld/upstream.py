"""OSWorld's own code (``desktop_env``): where it comes from, and importing it without its heavy
optional dependencies.

``make setup`` installs OSWorld's published package (``desktop-env``) without its pinned
dependencies, plus what its controllers, setup, getters and metrics import at top level (the
``osworld`` extra, Google Drive's ``pydrive`` and audio's ``librosa`` included). A user's
checkout (``--osworld-root`` with a ``desktop_env/`` folder) is put first on ``sys.path``
(:func:`use_checkout`: by the plugin for a run, by ``plan``) and wins over the package.

One import of OSWorld's metrics is left out on purpose: ``easyocr`` (it needs torch; OCR in
``compare_image_text``). OSWorld imports it at the top of ``metrics/docs.py``, so that the rest
of its metrics can be imported it is registered as an *absent module*: nothing in it exists,
and touching it raises :class:`MissingDependency` (a ``BaseException``, so OSWorld's
``except Exception`` blocks cannot turn it into a score of 0). :func:`absent_dependencies`
finds, before a task runs, which absent modules a metric or getter would touch, so the task is
skipped with that reason. ``librosa`` and ``pydrive`` get the same treatment only in an
installation that lacks them. A real installation always wins (the absent-module finder is
the last one asked).

Importing OSWorld's setup module also loads its proxy pool from
``evaluation_examples/settings/proxy/dataimpulse.json`` (a file of OSWorld's maintainers, not in
its repository), logging an ERROR when it is not there, in every process; that one message is
kept out of the log (the harness routes ``"proxy": true`` tasks through its own ``--proxy``).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.abc
import importlib.machinery
import importlib.metadata
import importlib.util
import logging
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from computer_env.errors import ConfigurationError
from computer_env.osworld import upstream_parts

logger = logging.getLogger(__name__)

OPTIONAL: dict[str, str] = {
    "easyocr": "OCR (easyocr, which needs torch)",
    "librosa": "audio analysis (librosa)",
    "pydrive": "Google Drive (pydrive)",
}
"""Top-level modules OSWorld's evaluation code imports that may be missing here (easyocr always:
it needs torch), and what they are for (shown in the skip reason)."""


class MissingDependency(BaseException):
    """OSWorld code touched a module that is not installed here (see :data:`OPTIONAL`).

    A ``BaseException`` on purpose: OSWorld's metrics wrap their work in ``except Exception``
    and would otherwise score the task 0."""

    def __init__(self, module: str) -> None:
        top = module.split(".")[0]
        super().__init__(f"needs {OPTIONAL.get(top, top)}, not installed here")
        self.module = top


class _AbsentAttr:
    """Anything taken from an absent module: using it raises :class:`MissingDependency`."""

    def __init__(self, module: str, name: str) -> None:
        self._absent_module = module
        self._absent_name = name

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise MissingDependency(self._absent_module)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise MissingDependency(self._absent_module)

    def __iter__(self) -> Any:
        raise MissingDependency(self._absent_module)

    def __repr__(self) -> str:
        return f"<absent {self._absent_module}.{self._absent_name}>"


class AbsentModule(types.ModuleType):
    """A module that is not installed: every attribute is an :class:`_AbsentAttr`."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.__path__: list[str] = []  # a package, so `from pydrive.auth import X` imports
        self.__absent__ = True

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _AbsentAttr(self.__name__, name)


class _AbsentFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Last on ``sys.meta_path``: answers only for :data:`OPTIONAL` modules nobody else found."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname.split(".")[0] not in OPTIONAL:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: Any) -> types.ModuleType:
        logger.info("OSWorld imports %s, which is not installed: its uses will skip", spec.name)
        return AbsentModule(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        return None


_FINDER = _AbsentFinder()


def _install_finder() -> None:
    if _FINDER not in sys.meta_path:
        sys.meta_path.append(_FINDER)


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
            "desktop-env package) or pass --osworld-root with an OSWorld checkout")
    _install_finder()
    try:
        with _quiet_import():
            return importlib.import_module(name)
    except ImportError as exc:
        raise ConfigurationError(
            f"OSWorld's {name} ({osworld_source()}) cannot be imported: {exc}; `make setup` "
            "installs what it needs (the osworld extra)") from exc


def _import_part(fn: Any, *args: str) -> Any:
    """``fn(*args)`` (see :mod:`.upstream_parts`) under the same checks as :func:`_import`."""
    _import("desktop_env.evaluators")
    try:
        with _quiet_import():
            return fn(*args)
    except ImportError as exc:
        raise ConfigurationError(
            f"OSWorld's {args[0]} ({osworld_source()}) cannot be imported: {exc}; `make setup` "
            "installs what it needs (the osworld extra)") from exc


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


def _absent_in(value: Any) -> str | None:
    if isinstance(value, AbsentModule):
        return value.__name__.split(".")[0]
    if isinstance(value, _AbsentAttr):
        return value._absent_module.split(".")[0]
    return None


def absent_dependencies(fn: Any, *, depth: int = 3) -> list[str]:
    """The absent modules (see :data:`OPTIONAL`) that ``fn`` uses, directly or through the
    OSWorld functions it calls (``depth`` levels); empty when it can run here."""
    found: list[str] = []
    seen: set[int] = set()

    def code_names(code: types.CodeType) -> set[str]:
        names = set(code.co_names)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                names |= code_names(const)
        return names

    def visit(func: Any, level: int) -> None:
        func = getattr(func, "__wrapped__", func)
        code = getattr(func, "__code__", None)
        if code is None or id(func) in seen:
            return
        seen.add(id(func))
        module_globals = getattr(func, "__globals__", {})
        for name in sorted(code_names(code)):
            value = module_globals.get(name)
            if value is None:
                continue
            absent = _absent_in(value)
            if absent is not None:
                if absent not in found:
                    found.append(absent)
            elif (level > 0 and isinstance(value, types.FunctionType)
                  and str(getattr(value, "__module__", "")).startswith("desktop_env")):
                visit(value, level - 1)

    visit(fn, depth)
    return found


def missing_reason(modules: list[str]) -> str:
    """``"needs OCR (easyocr, ...), not installed here"`` for the first absent module."""
    return str(MissingDependency(modules[0])) if modules else ""


def absent_modules() -> list[str]:
    """The modules of :data:`OPTIONAL` that OSWorld's code imported as absent placeholders."""
    return sorted(name for name, module in sys.modules.items()
                  if "." not in name and isinstance(module, AbsentModule))


__all__ = [
    "AbsentModule", "MissingDependency", "OPTIONAL", "absent_dependencies", "absent_modules",
    "checkout_folder", "missing_reason", "osworld_source", "upstream_available",
    "upstream_getter", "upstream_getters", "upstream_metric", "upstream_metrics",
    "upstream_python_controller",
    "upstream_setup_module", "use_checkout",
]
