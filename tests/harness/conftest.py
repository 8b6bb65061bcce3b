"""What every harness test process needs.

- **Tiers.** Every test is marked by what it uses (``helpers/tiers.py``): ``desktop`` (a real
  local desktop), ``e2e`` (a child benchmark run, Docker, a real vLLM, Ray), or neither (the
  fast tier: ``make test-fast``). The marks are applied here at collection, from the fixtures
  and helpers each test reaches; a test that starts what its tier does not allow fails.

- The shared helpers are one package, imported one way:
  ``from tests.harness.helpers.polling import wait_for``. A bare ``from polling import ...``
  (the old way, which made a second module object of the same file) fails with that advice.

- **Bytecode is cached.** A host whose environment sets ``PYTHONDONTWRITEBYTECODE`` (many
  container images do) makes every Python process compile the project's 400 modules from
  source, and pytest rewrite their asserts anew: seconds of CPU for each child suite's
  controller and worker, each scoring process and each helper, a third of a one-task
  child run. The variable is dropped here, before any child starts, so the harness and
  everything it starts reuse the ``__pycache__`` folders (git-ignored).
- ``scipy.stats`` (and so numpy) is imported once, up front: several tests run a suite
  in-process with ``pytester``, which unloads the modules a run imported, and numpy cannot be
  imported a second time in one process (``fixtures.report.tables.stats`` imports scipy only where it
  computes, so that the suite's workers do not carry it).
- ``--dist loadgroup`` (``make test``) keeps the tests marked ``xdist_group(NAME)`` on one
  worker (e.g. the real-vLLM tests, which share one server). pytest-xdist does that by
  suffixing the item's node id with ``@NAME``, but it writes ``item._nodeid``, which pytest 9.2
  no longer reads (the id lives in ``item._id``): the group was split over the workers. The
  hook below gives the suffix to the id pytest does read, once, the way xdist means it.
- Under ``--dist loadgroup`` the modules are also handed out longest first, measured per tier in
  ``durations.json`` (``helpers/order.py``): a long module collected late no longer runs alone
  at the end of a tier while the other workers idle.

Also: a test that imports a ``desktop_env`` of its own (a test double of OSWorld) must not leave
it behind: in one worker process every later test would score with it. ``_osworld_unchanged``
fails the test that did.
"""

from __future__ import annotations

import importlib.abc
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import scipy.stats  # noqa: F401

from tests.harness.helpers import order, tiers

os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

HELPERS = Path(__file__).resolve().parent / "helpers"


class _BareHelperImport(importlib.abc.MetaPathFinder):
    """Refuses ``import polling`` and the like for a module of ``tests/harness/helpers`` (the
    helpers are imported one way: ``tests.harness.helpers.<name>``)."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if "." not in name and (HELPERS / f"{name}.py").is_file():
            raise ImportError(
                f"import the harness helper {name!r} as "
                f"tests.harness.helpers.{name} (one module object per file)",
                name=name,
            )
        return None


if not any(isinstance(f, _BareHelperImport) for f in sys.meta_path):
    sys.meta_path.insert(0, _BareHelperImport())


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(tiers.TierPlugin(), "holo-test-tiers")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # xdist's workers see the controller's choice as option ``loadgroup`` (their ``dist`` is no)
    if not (
        getattr(config.option, "loadgroup", False)
        or getattr(config.option, "dist", None) == "loadgroup"
    ):
        return
    items[:] = order.longest_first(items, order.load())
    try:
        from _pytest.nodeid import NodeId
    except ImportError:  # an older pytest: xdist's own suffix works there
        return
    for item in items:
        groups = sorted(
            {
                m.args[0] if m.args else m.kwargs.get("name", "default")
                for m in item.iter_markers("xdist_group")
            }
        )
        if groups and "@" not in item.nodeid and hasattr(item, "_id"):
            item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(groups)}")


def _desktop_env_origin() -> str | None:
    module = sys.modules.get("desktop_env")
    return None if module is None else str(getattr(module, "__file__", None))


@pytest.fixture(autouse=True)
def _osworld_unchanged() -> Iterator[None]:
    """After each test, ``desktop_env`` is absent or the module it was before (or, when the test
    imported it first, the installed package's)."""
    before = _desktop_env_origin()
    yield
    after = _desktop_env_origin()
    if after is not None and after != before and "site-packages" not in after:
        raise AssertionError(
            f"this test left desktop_env from {after} in sys.modules "
            f"(before: {before}); later tests in this process would use it"
        )
