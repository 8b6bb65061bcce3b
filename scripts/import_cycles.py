"""Import circles between modules of computer_env, holo_agent and fixtures.

Builds the import graph with grimp (the library import-linter runs on; imports inside functions
and under ``TYPE_CHECKING`` count) and prints every strongly connected set of two or more
modules. Exit status 1 when there is a circle that is not in :data:`KNOWN`, or when a known one
is gone (then drop it from the list). ``make check`` runs it:

    .venv/bin/python scripts/import_cycles.py
"""

from __future__ import annotations

import sys

import grimp

PACKAGES = ("computer_env", "holo_agent", "fixtures")

#: Circles that exist today and are left for a change of their own (none: nothing may make one).
KNOWN: frozenset[frozenset[str]] = frozenset()


def module_circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected sets of two or more modules (Tarjan's algorithm, iterative).
    A package's ``__init__`` importing its own modules is not a circle: imports of a package
    by its own descendants are left out (a module imported as ``pkg.mod`` runs ``pkg`` first
    anyway)."""
    nodes = sorted(graph.modules)
    edges: dict[str, list[str]] = {}
    for m in nodes:
        edges[m] = sorted(
            d
            for d in graph.find_modules_directly_imported_by(m)
            if d in graph.modules and not m.startswith(d + ".")
        )
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    circles: list[list[str]] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges[child])))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        m = stack.pop()
                        on_stack.discard(m)
                        group.append(m)
                        if m == node:
                            break
                    if len(group) > 1:
                        circles.append(sorted(group))
    return sorted(circles)


def main() -> int:
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    circles = module_circles(graph)
    new = [c for c in circles if frozenset(c) not in KNOWN]
    gone = sorted(sorted(k) for k in KNOWN - {frozenset(c) for c in circles})
    for group in circles:
        print("import circle:" if group in new else "known import circle:", " <-> ".join(group))
    for group in gone:
        print("known import circle gone (drop it from KNOWN):", " <-> ".join(group))
    if new or gone:
        print(
            f"{len(new)} new import circle(s) between modules, {len(gone)} known one(s) gone",
            file=sys.stderr,
        )
        return 1
    print(
        f"no import circle between the modules of {', '.join(PACKAGES)}"
        + (f" but the {len(circles)} known" if circles else "")
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
