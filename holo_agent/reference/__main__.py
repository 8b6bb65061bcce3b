"""Serve the reference endpoint: an OpenAI-compatible server that plays scripted Holo solutions
and checks every request against the Holo agent-loop conventions (a harness check, not a model).

Solutions (pick one):
  --builtin         the reference solutions of the built-in tasks, matched by task instruction
  --solutions FILE  a JSON object {instruction: [Step, ...]}
A request for a task without a solution is answered 404 (no_solution).

Prints the base URL on the first line of stdout, then serves until SIGINT or SIGTERM. Every
request is logged on stderr with its conformance verdict (conforms, or the rule it breaks).

Example:
  python -m holo_agent.reference --builtin --port 8001
  pytest tests/osworld --base-url http://127.0.0.1:8001/v1
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from holo_agent.reference.server import ReferenceEndpoint


def builtin_solutions() -> dict[str, list[dict[str, Any]]]:
    """The built-in tasks' reference solutions keyed by instruction. Imported here, in the
    command, not by the endpoint itself: the task files belong to ``computer_env.osworld``."""
    from computer_env.osworld.builtin import load_solutions
    from computer_env.osworld.catalog.tasks import load_builtin_tasks

    by_id = load_solutions()
    return {t.instruction: by_id[t.id] for t in load_builtin_tasks() if t.id in by_id}


def _load(path: Path) -> dict[str, list[dict[str, Any]]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SystemExit(f"--solutions {path}: cannot read it: {exc}") from None
    if not isinstance(data, dict):
        raise SystemExit(f"--solutions {path}: expected a JSON object {{instruction: [Step, ...]}}")
    return data


def main(argv: list[str] | None = None) -> int:
    """Run the reference endpoint until interrupted."""
    ap = argparse.ArgumentParser(
        prog="python -m holo_agent.reference",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--port", type=int, default=0, help="port (default 0: a free one)")
    ap.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    source = ap.add_mutually_exclusive_group()
    source.add_argument(
        "--builtin", action="store_true", help="serve the built-in tasks' reference solutions"
    )
    source.add_argument(
        "--solutions", type=Path, metavar="FILE", help="JSON file {instruction: [Step, ...]}"
    )
    ap.add_argument(
        "--faults",
        default=None,
        metavar="SPEC",
        help="fault injection, e.g. status=503:2,drop=1 (default none)",
    )
    ap.add_argument(
        "--image-budget",
        type=int,
        default=3,
        help="screenshots a conforming request may carry (default 3)",
    )
    args = ap.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if args.builtin:
        solutions = builtin_solutions()
    elif args.solutions:
        solutions = _load(args.solutions)
    else:
        solutions = {}
        logging.getLogger(__name__).warning(
            "no --builtin or --solutions: every chat request will be answered 404 no_solution"
        )
    try:
        endpoint = ReferenceEndpoint(
            solutions,
            host=args.host,
            port=args.port,
            faults=args.faults,
            image_budget=args.image_budget,
        )
    except ValueError as exc:
        raise SystemExit(f"bad solutions or faults: {exc}") from None
    logging.getLogger(__name__).info("serving %d task solution(s)", len(solutions))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    print(endpoint.start(), flush=True)
    try:
        stop.wait()
    finally:
        endpoint.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
