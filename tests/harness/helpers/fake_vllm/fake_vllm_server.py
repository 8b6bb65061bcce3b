"""TEST DOUBLE of ``vllm serve`` (a real vLLM server needs a GPU, which a test machine lacks).

``vllm serve MODEL --host H --port P [other vLLM flags]``: records its argv, pid and
``CUDA_VISIBLE_DEVICES`` as one JSON file in ``$FAKE_VLLM_RECORD_DIR`` (when set), then serves
an OpenAI-compatible endpoint by running the project's real reference endpoint in-process:
``holo_agent.reference.ReferenceEndpoint`` with ``model_name=MODEL`` (vLLM's default served
model name is the model path), the built-in tasks' reference solutions keyed by instruction, and
the image budget read from ``--limit-mm-per-prompt`` (more images per prompt are rejected, as
vLLM does). It serves until SIGTERM/SIGINT.

Knobs for tests (environment): ``FAKE_VLLM_MODE=exit`` exits at once with code 3 after an
error line (a server that cannot start); ``FAKE_VLLM_FAULTS`` is a reference-endpoint fault
spec (e.g. ``delay=2`` to slow every answer).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any


def parse(argv: list[str]) -> argparse.Namespace:
    """The subset of ``vllm serve``'s command line the harness uses; other flags are kept."""
    ap = argparse.ArgumentParser(prog="vllm")
    sub = ap.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve")
    serve.add_argument("model")
    serve.add_argument("--host", default="0.0.0.0")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--limit-mm-per-prompt", default=None)
    serve.add_argument("--max-model-len", type=int, default=None)
    serve.add_argument("--reasoning-parser", default=None)
    serve.add_argument("--chat-template-content-format", default=None)
    serve.add_argument("--enable-prefix-caching", action="store_true")
    args, rest = ap.parse_known_args(argv)
    args.unparsed = rest
    return args


def record(argv: list[str]) -> None:
    """Write what this launch looked like (one file per process)."""
    folder = os.environ.get("FAKE_VLLM_RECORD_DIR")
    if not folder:
        return
    data = {
        "argv": argv,
        "pid": os.getpid(),
        "pgid": os.getpgid(0),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "time": time.time(),
    }
    path = Path(folder) / f"launch-{os.getpid()}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    tmp.rename(path)


def builtin_solutions() -> dict[str, list[dict[str, Any]]]:
    """The built-in tasks' reference solutions, keyed by instruction."""
    from computer_env.osworld.builtin import load_solutions
    from computer_env.osworld.catalog.tasks import load_builtin_tasks

    by_id = load_solutions()
    return {t.instruction: by_id[t.id] for t in load_builtin_tasks() if t.id in by_id}


def main(argv: list[str]) -> int:
    args = parse(argv)
    record(argv)
    print(f"fake vllm (test double): serve {args.model} on {args.host}:{args.port}", flush=True)
    if os.environ.get("FAKE_VLLM_MODE") == "exit":
        print(
            "fake vllm: simulated start failure (FAKE_VLLM_MODE=exit)", file=sys.stderr, flush=True
        )
        return 3
    budget = json.loads(args.limit_mm_per_prompt or "{}").get("image", 1)
    from holo_agent.reference import ReferenceEndpoint

    endpoint = ReferenceEndpoint(
        builtin_solutions(),
        host=args.host,
        port=args.port,
        model_name=args.model,
        image_budget=int(budget),
        faults=os.environ.get("FAKE_VLLM_FAULTS") or None,
    )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    print(f"fake vllm: serving at {endpoint.start()}", flush=True)
    try:
        stop.wait()
    finally:
        endpoint.stop()
    print("fake vllm: stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
