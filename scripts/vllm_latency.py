"""Per-request latency of a vLLM server on the agent loop's own requests, by concurrency.

    python scripts/vllm_latency.py --serve results/.tiny-model            # start one (CPU here)
    python scripts/vllm_latency.py --base-url http://gpu1:8000/v1 --concurrency 1,2,4,8,16

Each request is the Holo loop's real body (system prompt with the Step schema, the task,
``--images`` 1920x1080 screenshots with tool outputs between, structured outputs, thinking on)
with ``--max-tokens`` output tokens at most, so the figure is the prompt (vision encoder and
prefill; every request has screenshots of its own, so only the system prompt comes from vLLM's
prefix cache, as in a real run) plus a bounded decode. For each image count and concurrency
level, ``--requests`` requests run with that many in flight; the table gives median and p90 latency per request and
the requests per second the server sustained: the saturation figure ``docs/scale.md`` asks for
(workers per endpoint ~ the concurrency past which latency grows faster than throughput).
Before each level, ``--warmup`` untimed rounds run at that level's image count and concurrency,
so that one-time costs of the server's first requests of a kind are not in the figures.
With ``--serve`` it also prints the server's start time (launch until /v1/models answers).
"""

from __future__ import annotations

import argparse
import io
import itertools
import random
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from PIL import Image, ImageDraw

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fixtures.cases.models.endpoints import Endpoint, list_models  # noqa: E402
from fixtures.cases.models.vllm_serve import VllmServers  # noqa: E402
from holo_agent import HoloComputerAgent, parse_step  # noqa: E402
from holo_agent.client import ChatClient  # noqa: E402
from holo_agent.conversation import Conversation  # noqa: E402

_SEEDS = itertools.count(1)
CLICK = (
    '{"note": null, "thought": "Open it.", "tool_call": {"tool_name": "click", '
    '"element": "file", "x": 500, "y": 500}}'
)


def screenshot(seed: int) -> bytes:
    """A 1920x1080 desktop-like picture of its own per seed: windows placed by a generator of
    the seed, all on the screen, each naming the seed (so vLLM's multimodal and prefix caches
    never answer one request with another's image)."""
    rng = random.Random(seed)
    img = Image.new("RGB", (1920, 1080), (40, 60, 90))
    draw = ImageDraw.Draw(img)
    for i in range(4):
        x, y = rng.randrange(0, 1920 - 640), rng.randrange(0, 1080 - 360)
        shade = rng.randrange(180, 250)
        draw.rectangle([x, y, x + 640, y + 360], fill=(shade, shade, shade), outline=(0, 0, 0))
        draw.text((x + 10, y + 10), f"window {i} seed {seed}", fill=(0, 0, 0))
    out = io.BytesIO()
    img.save(out, "PNG")
    return out.getvalue()


def body(endpoint: Endpoint, images: int, max_tokens: int, seed: int) -> dict[str, object]:
    agent = HoloComputerAgent(endpoint.url, endpoint.model)
    conv = Conversation(agent.system_prompt, "Create report.txt in the home folder.", 3)
    for i in range(images):
        if i:
            conv.add_step(parse_step(CLICK))
            conv.add_tool_output("click", "clicked")
        conv.add_observation(screenshot(seed * 7 + i), "image/png")
    out = agent.request_body(conv) | {"max_tokens": max_tokens}
    agent.close()
    return out


def measure(
    endpoint: Endpoint, images: int, concurrency: int, requests: int, max_tokens: int
) -> tuple[list[float], float, list[int]]:
    """Latencies of ``requests`` requests, ``concurrency`` in flight; wall time; prompt sizes."""
    # each request its own screenshots: vLLM's prefix and encoder caches would answer a
    # repeated one without prefill (the system prompt, the same for every turn, stays cached)
    payloads = [body(endpoint, images, max_tokens, next(_SEEDS)) for _ in range(requests)]
    clients = [ChatClient(endpoint.url, max_retries=0, timeout=1800) for _ in range(concurrency)]

    def one(i: int) -> tuple[float, int]:
        t0 = time.perf_counter()
        resp = clients[i % concurrency].complete(payloads[i])
        return time.perf_counter() - t0, int(resp.usage.get("prompt_tokens") or 0)

    t0 = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        done = list(pool.map(one, range(requests)))
    wall = time.perf_counter() - t0
    for c in clients:
        c.close()
    return [d[0] for d in done], wall, [d[1] for d in done]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--base-url", help="a running OpenAI-compatible vLLM server (.../v1)")
    where.add_argument("--serve", metavar="MODEL_PATH", help="start one vllm serve of this model")
    ap.add_argument("--serve-device", default="auto", choices=["auto", "gpu", "cpu"])
    ap.add_argument("--vllm", default=None, help="the vLLM to run (see --vllm of the suite)")
    ap.add_argument("--concurrency", default="1,2,4,8")
    ap.add_argument("--images", default="1,3")
    ap.add_argument(
        "--requests",
        type=int,
        default=0,
        help="requests per level (default: 2 x the concurrency, at least 4)",
    )
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument(
        "--warmup",
        type=int,
        default=1,
        help="untimed rounds (concurrency requests each) before each level",
    )
    args = ap.parse_args(argv)
    servers = None
    try:
        if args.serve:
            servers = VllmServers(
                args.serve,
                ["0"],
                image_budget=3,
                serve_args=[],
                log_dir=Path(tempfile.mkdtemp(prefix="vllm-latency-")),
                device=args.serve_device,
                vllm=args.vllm,
                project_root=ROOT,
            )
            t0 = time.perf_counter()
            (endpoint,) = servers.start()
            print(
                f"server start: {time.perf_counter() - t0:.1f} s ({servers.device}; log in "
                f"{servers.log_dir})"
            )
        else:
            endpoint = Endpoint(
                url=args.base_url, model=list_models(args.base_url)[0], kind="attach"
            )
        print(
            f"{'images':>6} {'conc':>5} {'reqs':>5} {'prompt tok':>10} {'p50 s':>8} "
            f"{'p90 s':>8} {'req/s':>7}"
        )
        for images in (int(x) for x in args.images.split(",")):
            for conc in (int(x) for x in args.concurrency.split(",")):
                n = args.requests or max(4, 2 * conc)
                for _ in range(args.warmup):
                    measure(endpoint, images, conc, conc, args.max_tokens)
                lat, wall, prompts = measure(endpoint, images, conc, n, args.max_tokens)
                lat.sort()
                p90 = lat[min(len(lat) - 1, int(0.9 * len(lat)))]
                print(
                    f"{images:>6} {conc:>5} {n:>5} {max(prompts):>10} "
                    f"{statistics.median(lat):>8.2f} {p90:>8.2f} {n / wall:>7.2f}",
                    flush=True,
                )
    finally:
        if servers is not None:
            servers.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
