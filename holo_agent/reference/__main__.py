"""``python -m holo_agent.reference --port P [--host H] [--solutions FILE] [--faults SPEC]``.

``--solutions`` is a JSON object ``{instruction: [Step, ...]}``. Prints the base URL on the first
line of stdout, then serves until SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
from pathlib import Path

from holo_agent.reference.server import ReferenceEndpoint


def main(argv: list[str] | None = None) -> int:
    """Run the reference endpoint until interrupted."""
    ap = argparse.ArgumentParser(prog="python -m holo_agent.reference", description=__doc__)
    ap.add_argument("--port", type=int, default=0, help="port (0: pick a free one)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--solutions", type=Path, help="JSON file {instruction: [Step, ...]}")
    ap.add_argument("--faults", default=None, help="fault spec, e.g. status=503:2,drop=1")
    ap.add_argument("--image-budget", type=int, default=3)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    solutions = json.loads(args.solutions.read_text(encoding="utf-8")) if args.solutions else {}
    endpoint = ReferenceEndpoint(solutions, host=args.host, port=args.port, faults=args.faults,
                                 image_budget=args.image_budget)
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
