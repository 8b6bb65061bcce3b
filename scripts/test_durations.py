"""Rewrite ``tests/harness/durations.json`` from the JUnit XML reports the test tiers leave.

Each ``make test-fast``/``test-desktop``/``test-e2e`` writes ``results/.tests/<tier>.xml``;
after a full ``make test`` on a quiet host, ``make test-durations`` runs this script, which sums
each test module's seconds and writes them where ``tests/harness/helpers/order.py`` reads them
(the modules are then handed to xdist's workers longest first). It prints the ten longest.

    .venv/bin/python scripts/test_durations.py results/.tests/*.xml
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.harness.helpers.order import DURATIONS, from_junit, load  # noqa: E402

TIERS = ("fast", "desktop", "e2e")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="*", type=Path, help="JUnit XML files (--junitxml)")
    parser.add_argument("--out", type=Path, default=DURATIONS, help="the file to write")
    args = parser.parse_args(argv)
    if not args.reports:
        parser.error("no report given: `make test` leaves them in results/.tests/<tier>.xml")
    missing = [str(p) for p in args.reports if not p.is_file()]
    if missing:
        parser.error(f"no such report: {', '.join(missing)} (run `make test` first)")
    bad = [str(p) for p in args.reports if p.stem not in TIERS]
    if bad:
        parser.error(f"a report is named after its tier ({', '.join(TIERS)}): {', '.join(bad)}")
    seconds = from_junit(args.reports, ROOT)
    if not any(seconds.values()):
        parser.error("the reports name no test module under tests/")
    kept = {**load(args.out), **seconds}  # a tier not measured now keeps its numbers
    args.out.write_text(json.dumps(kept, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    for tier, modules in seconds.items():
        print(f"{tier}: {len(modules)} modules, {sum(modules.values()):.0f} s; the longest:")
        for module, s in sorted(modules.items(), key=lambda kv: -kv[1])[:5]:
            print(f"{s:8.1f} s  {module}")
    print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
