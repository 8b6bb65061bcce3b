"""OSWorld's own code (``desktop_env``): where it comes from, and importing it without its heavy
optional dependencies.

``make setup`` installs OSWorld's published package (``desktop-env``) without its pinned
dependencies, plus what its controllers, setup, getters and metrics import (the ``osworld``
extra). A user's checkout (``--osworld-root`` with a ``desktop_env/`` folder) is put first on
``sys.path`` by the plugin and wins over the package.

Three imports of OSWorld's evaluation code are left out on purpose because they are heavy and
serve few tasks: ``easyocr`` (torch; OCR in ``compare_image_text``), ``librosa`` (numba; audio
in ``compare_audios``) and ``pydrive`` (Google Drive tasks). OSWorld imports them at the top of
its metric/getter modules, so that the rest of its metrics can be imported, each is registered as
an *absent module*: nothing in it exists, and touching it raises :class:`MissingDependency` (a
``BaseException``, so OSWorld's ``except Exception`` blocks cannot turn it into a score of 0).
:func:`absent_dependencies` finds, before a task runs, which absent modules a metric or getter
would touch, so the task is skipped with that reason. A real installation of any of them always
wins (the absent-module finder is the last one asked).
"""

from __future__ import annotations

import functools
import importlib
import importlib.abc
import importlib.machinery
import importlib.metadata
import importlib.util
import logging
import sys
import types
from typing import Any

from computer_env.errors import ConfigurationError

logger = logging.getLogger(__name__)

OPTIONAL: dict[str, str] = {
    "easyocr": "OCR (easyocr, which needs torch)",
    "librosa": "audio analysis (librosa)",
    "pydrive": "Google Drive (pydrive)",
}
"""Top-level modules OSWorld's evaluation code imports that are not installed here, and what
they are for (shown in the skip reason)."""


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


def _import(name: str) -> types.ModuleType:
    if not upstream_available():
        raise ConfigurationError(
            "OSWorld's code (desktop_env) is not installed: run `make setup` (it installs the "
            "desktop-env package) or pass --osworld-root with an OSWorld checkout")
    _install_finder()
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise ConfigurationError(
            f"OSWorld's {name} ({osworld_source()}) cannot be imported: {exc}; `make setup` "
            "installs what it needs (the osworld extra)") from exc


def upstream_getters() -> types.ModuleType:
    """``desktop_env.evaluators.getters`` (imported on first use)."""
    return _import("desktop_env.evaluators.getters")


def upstream_metrics() -> types.ModuleType:
    """``desktop_env.evaluators.metrics`` (imported on first use)."""
    return _import("desktop_env.evaluators.metrics")


def upstream_setup_module() -> types.ModuleType:
    """``desktop_env.controllers.setup`` (imported on first use)."""
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


__all__ = [
    "AbsentModule", "MissingDependency", "OPTIONAL", "absent_dependencies", "missing_reason",
    "osworld_source", "upstream_available", "upstream_getters", "upstream_metrics",
    "upstream_python_controller", "upstream_setup_module",
]
