"""Longest first: the order in which the harness tests' modules are handed to xdist's workers.

pytest-xdist hands the tests out in collection order, to whichever worker is free. A module of
long tests collected late (the real offline tasks under ``--check-evaluators``: one test of
about eight minutes) then runs alone at the end while the other workers idle. Handed out
longest first (the longest-processing-time rule), the long modules start at once and the many
short tests fill the gaps.

Modules are ordered, never the tests inside one: a module's tests stay together and in their
order, so module-scoped fixtures (a desktop, a vLLM server, a Ray cluster) are set up once per
worker as before. The seconds come from :data:`DURATIONS`, per tier (a module's e2e tests may be
long where its desktop tests are short), measured in a full ``make test`` (``make
test-durations`` rewrites the file from the JUnit XML each tier leaves); a module the file does
not name yet goes after those it names, in collection order.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Protocol, TypeVar

DURATIONS = Path(__file__).resolve().parents[1] / "durations.json"
"""``tests/harness/durations.json``: tier (``fast``, ``desktop``, ``e2e``) -> test module (path
from the repository root) -> seconds its tests of that tier took in a full ``make test``
(setup, call and teardown, summed)."""

Durations = dict[str, dict[str, float]]


class _Item(Protocol):
    @property
    def nodeid(self) -> str: ...

    def get_closest_marker(self, name: str) -> object | None: ...


T = TypeVar("T", bound=_Item)


def module_of(nodeid: str) -> str:
    """The test module's path in a node id (``tests/harness/x/test_y.py``)."""
    return nodeid.split("::", 1)[0]


def load(path: Path = DURATIONS) -> Durations:
    """The measured seconds per tier and module; empty when the file is absent."""
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not all(
        isinstance(tier, str)
        and isinstance(modules, dict)
        and all(isinstance(m, str) and isinstance(v, int | float) for m, v in modules.items())
        for tier, modules in data.items()
    ):
        raise ValueError(f"{path}: expected {{tier: {{module path: seconds}}}}")
    return {tier: {m: float(v) for m, v in modules.items()} for tier, modules in data.items()}


def tier_of(item: _Item) -> str:
    """The tier whose run the test is in: ``e2e``, ``desktop`` or ``fast`` (by its marks)."""
    for tier in ("e2e", "desktop"):
        if item.get_closest_marker(tier) is not None:
            return tier
    return "fast"


def longest_first(items: Sequence[T], durations: Durations) -> list[T]:
    """``items`` with their modules ordered by measured seconds (of the tiers of the items
    here), longest first; unmeasured modules last, in collection order; the order inside a
    module is kept."""
    first_seen: dict[str, int] = {}
    measured: dict[str, float] = {}
    tiers: set[tuple[str, str]] = set()
    for item in items:
        module = module_of(item.nodeid)
        first_seen.setdefault(module, len(first_seen))
        tier = tier_of(item)
        if (tier, module) not in tiers:
            tiers.add((tier, module))
            if (s := durations.get(tier, {}).get(module)) is not None:
                measured[module] = measured.get(module, 0.0) + s

    def key(module: str) -> tuple[bool, float, int]:
        return (module not in measured, -measured.get(module, 0.0), first_seen[module])

    rank = {m: i for i, m in enumerate(sorted(first_seen, key=key))}
    return sorted(items, key=lambda item: rank[module_of(item.nodeid)])


def from_junit(reports: Iterable[Path], root: Path) -> Durations:
    """Seconds per tier and test module from JUnit XML reports (pytest's ``--junitxml``), each
    named after its tier (``e2e.xml``): each test's ``time`` (setup, call and teardown) summed
    over its module's file under ``root``."""
    totals: Durations = {}
    for report in reports:
        tier = totals.setdefault(report.stem, {})
        for case in ET.parse(report).getroot().iter("testcase"):
            module = _module_path(case.get("classname", ""), root)
            if module is not None:
                tier[module] = tier.get(module, 0.0) + float(case.get("time", "0") or 0)
    return {
        t: {m: round(s, 1) for m, s in sorted(modules.items())}
        for t, modules in sorted(totals.items())
    }


def _module_path(classname: str, root: Path) -> str | None:
    """``tests.harness.x.test_y`` (or ``...test_y.TestZ``) -> ``tests/harness/x/test_y.py``."""
    parts = classname.split(".")
    for end in range(len(parts), 0, -1):
        candidate = "/".join(parts[:end]) + ".py"
        if (root / candidate).is_file():
            return candidate
    return None
