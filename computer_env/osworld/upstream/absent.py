"""OSWorld's optional imports that are not installed here, as *absent modules*.

One import of OSWorld's metrics is left out on purpose: ``easyocr`` (it needs torch; OCR in
``compare_image_text``). OSWorld imports it at the top of ``metrics/docs.py``, so that the rest
of its metrics can be imported it is registered as an *absent module*: nothing in it exists,
and touching it raises :class:`MissingDependency` (a ``BaseException``, so OSWorld's
``except Exception`` blocks cannot turn it into a score of 0). :func:`absent_dependencies`
finds, before a task runs, which absent modules a metric or getter would touch, so the task is
skipped with that reason. ``librosa`` and ``pydrive`` get the same treatment only in an
installation that lacks them. A real installation always wins (the absent-module finder is
the last one asked: :func:`install_finder`).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import logging
import sys
import types
from typing import Any

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


def install_finder() -> None:
    """Put the absent-module finder last on ``sys.meta_path`` (once)."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.append(_FINDER)


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
            elif (
                level > 0
                and isinstance(value, types.FunctionType)
                and str(getattr(value, "__module__", "")).startswith("desktop_env")
            ):
                visit(value, level - 1)

    visit(fn, depth)
    return found


def missing_reason(modules: list[str]) -> str:
    """``"needs OCR (easyocr, ...), not installed here"`` for the first absent module."""
    return str(MissingDependency(modules[0])) if modules else ""


def absent_modules() -> list[str]:
    """The modules of :data:`OPTIONAL` that OSWorld's code imported as absent placeholders."""
    return sorted(
        name
        for name, module in sys.modules.items()
        if "." not in name and isinstance(module, AbsentModule)
    )


__all__ = [
    "AbsentModule",
    "MissingDependency",
    "OPTIONAL",
    "absent_dependencies",
    "absent_modules",
    "install_finder",
    "missing_reason",
]
