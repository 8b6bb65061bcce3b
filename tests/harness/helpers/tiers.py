"""The harness tests' tiers: each test is marked by what it uses, never by hand.

Three tiers (``make test-fast``, ``make test-desktop``, ``make test-e2e``):

- **fast**: neither mark below. Pure logic and in-process parts: no X server, sandbox,
  container, vLLM, Ray cluster or child pytest, no root needed.
- **desktop** (mark ``desktop``): a real local desktop (an X server, the local sandbox) and the
  host-level parts it stands on (root: namespaces, cgroups, a second host user).
- **e2e** (mark ``e2e``): a child pytest (a benchmark run, even one that only collects), a
  Docker daemon, a real vLLM or a Ray cluster (also marked ``docker``, ``vllm`` or ``ray``
  where that is what it needs).

A test is marked at collection (:class:`TierPlugin`, before ``-m`` selects) by what it
reaches: the names and strings of its function and of every fixture it takes (directly or
through other fixtures), followed into the test module's own functions and classes and into
the helpers. A helper or fixture states its tier itself (:func:`needs`); the product's parts are
named in :data:`USES`, programs in :data:`PROGRAMS`. What reading cannot see (a desktop started
by product code a test calls) is caught when it happens: an audit hook sees every process a
test starts (:func:`spawn_needs`) and fails a test that starts an X server, a sandbox, a
container, a vLLM, a Ray node or a child pytest without its tier's mark, naming the mark. So
the tiers cannot drift: such a test fails in every tier until what it uses says its tier.
"""

from __future__ import annotations

import importlib
import os
import sys
import types
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.harness.helpers.polling import time_scale

TESTS_ROOT = Path(__file__).resolve().parents[2]
"""``tests/``: functions and classes defined below it are followed when a test is read."""

DESKTOP, E2E = "desktop", "e2e"
TIER_MARKS = (DESKTOP, E2E)
"""The marks that take a test out of the fast tier."""

USES: dict[str, tuple[str, ...]] = {
    # the product's own parts that start what the fast tier must not (the tests' helpers say
    # their tier themselves with needs(): local_desktop, XDesktop, GuestServer, run_suite,
    # start_suite, audit_run, docker_client, TwoNodeCluster, one_cluster_at_a_time)
    "LocalSandboxProvider": (DESKTOP,),
    "DockerProvider": (E2E, "docker"),
    "VllmServers": (E2E, "vllm"),
    "VLLM_PY": (E2E, "vllm"),
    # a fixture a test takes by name (its function is read too; the name alone suffices)
    "docker_client": (E2E, "docker"),
}
"""Names a test may reach (a product class, a fixture) -> the marks its use implies."""

PROGRAMS: dict[str, tuple[str, ...]] = {
    # an X server of the test's own
    "Xvfb": (DESKTOP,),
    # host-level parts the desktop tier stands on (root): a second host user
    "useradd": (DESKTOP,),
}
"""Programs a test starts by name (a string in its code) -> the marks that implies."""

IMPLY_E2E = {"docker", "vllm", "ray"}
"""Marks (by hand or by use) that put a test in the e2e tier."""

F = TypeVar("F", bound=Callable[..., Any])


def needs(*marks: str) -> Callable[[F], F]:
    """Declare on a helper or fixture function the marks every test that uses it gets."""

    def mark(fn: F) -> F:
        fn.__holo_tier__ = tuple(marks)  # type: ignore[attr-defined]
        return fn

    return mark


STR = "str:"
"""What :func:`reach` puts before a string constant (names stay bare)."""


def _code_words(code: types.CodeType) -> set[str]:
    """The global and attribute names and the string constants (``str:...``) of ``code`` and
    of the code nested in it (functions, lambdas, comprehensions)."""
    words = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            words |= _code_words(const)
        elif isinstance(const, str):
            words.add(STR + const)
        elif isinstance(const, tuple):
            words.update(STR + c for c in const if isinstance(c, str))
    return words


def _module(name: str) -> types.ModuleType | None:
    """The module ``name`` if it is loaded, or one of the harness helpers (loaded here)."""
    if name in sys.modules:
        return sys.modules[name]
    if name.startswith(__name__.rpartition(".")[0] + "."):
        try:
            return importlib.import_module(name)
        except ImportError:
            return None
    return None


def _defined_in_tests(obj: object) -> bool:
    module = sys.modules.get(getattr(obj, "__module__", "") or "")
    path = getattr(module, "__file__", None)
    return bool(path) and Path(str(path)).resolve().is_relative_to(TESTS_ROOT)


def reach(obj: object, seen: set[int] | None = None) -> set[str]:
    """What ``obj`` (a function, a class, a fixture's function) refers to: names and string
    constants, followed into the functions and classes defined under ``tests/`` that it names;
    a declared tier (:func:`needs`) as ``tier:<mark>``."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return set()
    seen.add(id(obj))
    found = {f"tier:{m}" for m in getattr(obj, "__holo_tier__", ())}
    if isinstance(obj, type):
        for base in obj.__mro__:
            found.add(base.__name__)
            if base is not obj and _defined_in_tests(base):
                found |= reach(base, seen)
        for member in vars(obj).values():
            fn = member.fget if isinstance(member, property) else member
            fn = getattr(fn, "__func__", fn)
            if isinstance(fn, types.FunctionType):
                found |= reach(fn, seen)
        return found
    fn = getattr(obj, "__wrapped__", obj)
    if not isinstance(fn, types.FunctionType):
        return found
    words = _code_words(fn.__code__)
    found |= words
    # names imported inside the function: looked up in the modules it imports from (the
    # helpers' own are imported here if the function has not run yet)
    imported = [m for w in sorted(words) if (m := _module(w)) is not None]
    for name in words:
        target = fn.__globals__.get(name)
        if target is None:
            target = next((t for m in imported if (t := getattr(m, name, None)) is not None), None)
        if target is None or id(target) in seen:
            continue
        if hasattr(target, "__holo_tier__"):
            found |= {f"tier:{m}" for m in target.__holo_tier__}
        if isinstance(target, (types.FunctionType, type)) and _defined_in_tests(target):
            found |= reach(target, seen)
        elif isinstance(target, (str, tuple)):  # a module constant: a command line, a path
            found.update(
                [STR + target]
                if isinstance(target, str)
                else [STR + t for t in target if isinstance(t, str)]
            )
    return found


def marks_from(words: set[str]) -> set[str]:
    """The marks implied by what a test reaches: the names in :data:`USES`, the programs in
    :data:`PROGRAMS` named in a string, a child pytest (``"-m", "pytest"``: e2e), a declared
    tier, and ``docker``/``vllm``/``ray`` (e2e)."""
    found: set[str] = set()
    strings = {w[len(STR) :] for w in words if w.startswith(STR)}
    for word in words:
        if word.startswith("tier:"):
            found.add(word[len("tier:") :])
        found.update(USES.get(word, ()))
    for text in strings:
        program = text.split(" ", 1)[0]
        found.update(PROGRAMS.get(program, ()))
    if "pytest" in strings and "-m" in strings:  # a child pytest process: the suite's plugin
        found.add(E2E)
    if found & IMPLY_E2E:
        found.add(E2E)
    return found


def item_marks(item: pytest.Item) -> set[str]:
    """The tier marks of a collected test: those of its function, of every fixture in its
    closure (a fixture that starts a desktop marks every test that takes it) and of its own
    marks (``docker``, ``vllm`` and ``ray`` imply ``e2e``)."""
    words: set[str] = set(getattr(item, "fixturenames", ()))
    words |= {f"tier:{m.name}" for m in item.iter_markers() if m.name in IMPLY_E2E}
    seen: set[int] = set()
    info = getattr(item, "_fixtureinfo", None)
    for defs in info.name2fixturedefs.values() if info is not None else ():
        for fixturedef in defs:
            words |= reach(fixturedef.func, seen)
    function = getattr(item, "function", None)
    if function is not None:
        words |= reach(function, seen)
    return marks_from(words)


TIMEOUTS = {"fast": 60.0, DESKTOP: 300.0, E2E: 1200.0}
"""Each tier's default time limit for one test, in seconds (times the time scale, see
``polling.time_scale``); a test states a longer one itself with ``@pytest.mark.timeout``."""


def apply(items: Iterable[pytest.Item]) -> None:
    """Mark every item by what it uses (see the module's docstring), and give each its tier's
    time limit unless it states its own."""
    scale = time_scale()
    for item in items:
        have = {m.name for m in item.iter_markers()}
        for mark in sorted(item_marks(item) - have):
            item.add_marker(getattr(pytest.mark, mark))
        if item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(TIMEOUTS[tier_of(item)] * scale))


def tier_of(item: pytest.Item) -> str:
    """``fast``, ``desktop`` or ``e2e`` (e2e wins over desktop)."""
    have = {m.name for m in item.iter_markers()}
    return E2E if E2E in have else DESKTOP if DESKTOP in have else "fast"


# -- the runtime check -------------------------------------------------------------------------

_X_AND_SANDBOX = {
    "Xvfb",
    "Xorg",
    "Xephyr",
    "Xvnc",
    "openbox",
    "bwrap",
    "ip",
    "iptables",
    "nsenter",
    "unshare",
    "useradd",
}
_E2E_PROGRAMS = {
    "docker": "docker",
    "dockerd": "docker",
    "containerd": "docker",
    "ray": "ray",
    "raylet": "ray",
    "gcs_server": "ray",
}


def _module_of(args: list[str]) -> str:
    """The module a ``python [options] -m MODULE`` (or ``-mMODULE``) runs, else ``""``."""
    for i, arg in enumerate(args):
        if arg == "-m":
            return args[i + 1] if i + 1 < len(args) else ""
        if arg.startswith("-m") and not arg.startswith("--"):
            return arg[2:]
        if not arg.startswith("-"):
            return ""  # a script or -c's program: what follows is its own
    return ""


def spawn_needs(argv: list[str]) -> tuple[str, str] | None:
    """(the mark a test needs, what it started) for a process that is not fast-tier work, else
    None: an X server, a sandbox or host-level tool (``desktop``); Docker, Ray, a real vLLM or a
    child pytest (``e2e``). ``argv`` is the new process's argument vector."""
    if not argv:
        return None
    prog = os.path.basename(argv[0])
    if prog in _X_AND_SANDBOX:
        return DESKTOP, prog
    if prog in _E2E_PROGRAMS:
        return E2E, prog
    if ".venv-vllm" in argv[0] or "vllm.entrypoints" in " ".join(argv):
        return E2E, "a real vLLM"
    if prog == "pytest":
        return E2E, "a child pytest"
    if prog.startswith("python"):
        module = _module_of(argv[1:])
        if module == "pytest":
            return E2E, "a child pytest"
        if module.startswith("computer_env.desktop") and module != "computer_env.desktop.bench":
            return DESKTOP, f"python -m {module}"
        if module == "ray" or module.startswith("ray."):
            return E2E, "a Ray node"
    return None


_current: list[pytest.Item] = []
_violations: dict[str, list[str]] = {}
_installed = False


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event != "subprocess.Popen" or not _current:
        return
    try:
        raw = args[1] if args[1] is not None else args[0]
        if isinstance(raw, str):
            argv = raw.split()
        elif isinstance(raw, (list, tuple)):
            argv = [os.fsdecode(a) for a in raw]
        else:
            argv = [os.fsdecode(raw)]
    except (TypeError, IndexError):
        return
    need = spawn_needs(argv)
    item = _current[-1]
    if need is None:
        return
    have = {m.name for m in item.iter_markers()}
    mark, what = need
    if mark in have or E2E in have:
        return
    _violations.setdefault(item.nodeid, []).append(
        f"{what} ({' '.join(argv)[:120]}) needs mark {mark!r}"
    )


def install() -> None:
    """Install the audit hook once per process (it cannot be removed; it is idle between
    tests)."""
    global _installed
    if not _installed:
        sys.addaudithook(_audit)
        _installed = True


class TierPlugin:
    """The pytest side: marks at collection (before ``-m`` selects), the check around each
    test's set-up, call and teardown."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        apply(items)

    def pytest_sessionstart(self) -> None:
        install()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Iterator[None]:
        _current.append(item)
        return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Iterator[None]:
        try:
            return (yield)
        finally:
            if _current and _current[-1] is item:
                _current.pop()
            if found := _violations.pop(item.nodeid, []):
                pytest.fail(
                    "this test started what its tier does not allow (name what it uses "
                    "in tests/harness/helpers/tiers.py's USES, or needs() on its "
                    "helper): " + "; ".join(found),
                    pytrace=False,
                )


__all__ = [
    "DESKTOP",
    "E2E",
    "TIER_MARKS",
    "TIMEOUTS",
    "USES",
    "TierPlugin",
    "apply",
    "install",
    "item_marks",
    "marks_from",
    "needs",
    "reach",
    "spawn_needs",
    "tier_of",
]
