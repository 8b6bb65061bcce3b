"""Hard limits on the model side: a total deadline per request, and token counts checked.

The server is a real OpenAI-compatible HTTP server on loopback (``http.server``, threaded) whose
answers are shaped by each test: a trickle of one byte every 100 ms that never ends (the red
team's server held a case 100 s at ``--request-timeout 10``, each read being in time), trickled
headers, a slow but complete answer, and completions whose ``usage`` is negative, fractional or
absurd (a summary once showed -5 prompt and 1e30 completion tokens).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2
import pytest

from computer_env.errors import ModelEndpointError
from fixtures.cases.attempt import Attempt
from fixtures.cases.outcomes import Unscored, boundary
from holo_agent import HoloComputerAgent
from holo_agent.client import ChatClient
from holo_agent.deadline import RequestDeadline
from holo_agent.recorder import Recorder
from holo_agent.replay import render_replay
from holo_agent.usage import MAX_COMPLETION_TOKENS, MAX_TOKENS, check_usage
from tests.harness.helpers.memenv import MemoryEnv

Answer = Callable[["_Handler", "ChatServer"], None]
ANSWER_STEP = {
    "note": None,
    "thought": "Done.",
    "tool_call": {"tool_name": "answer", "content": "DONE"},
}
TICK_S = 0.1


def completion(content: str, usage: Any = None) -> bytes:
    """A chat completion's JSON body answering ``content`` (with ``usage`` when given)."""
    body: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": content},
            }
        ],
    }
    if usage is not None:
        body["usage"] = usage
    return json.dumps(body).encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        owner = self.server.owner
        with owner.lock:
            owner.requests += 1
        try:
            owner.answer(self, owner)
        except OSError:  # the client gave up (its deadline): nothing left to answer
            pass

    def send_body(self, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: ChatServer


class ChatServer:
    """``POST /v1/chat/completions`` answered by ``answer(handler, server)``; ``requests`` counts
    them; ``stopped`` ends every trickle when the test is done."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.requests = 0
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.server = _Server(("127.0.0.1", 0), _Handler)
        self.server.owner = self
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.stopped.set()
        self.server.shutdown()
        self.server.server_close()

    def trickle(self, handler: _Handler, data: bytes | None = None) -> None:
        """Write ``data`` one byte a tick (spaces until stopped when None)."""
        for byte in data if data is not None else iter(lambda: 32, None):
            if self.stopped.wait(TICK_S):
                return
            handler.wfile.write(bytes([byte]))
            handler.wfile.flush()


@pytest.fixture
def serve() -> Iterator[Callable[[Answer], ChatServer]]:
    servers: list[ChatServer] = []

    def start(answer: Answer) -> ChatServer:
        servers.append(ChatServer(answer))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def trickled_body(handler: _Handler, server: ChatServer) -> None:
    """Headers at once, then the body one space every tick, never the completion."""
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", "100000")
    handler.end_headers()
    handler.wfile.flush()
    server.trickle(handler)


def trickled_headers(handler: _Handler, server: ChatServer) -> None:
    """The status line, then one byte of a header every tick, never the end of the headers."""
    handler.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
    handler.wfile.flush()
    server.trickle(handler, b"a" * 100000)


def ask(client: ChatClient) -> Any:
    return client.complete({"model": "m", "messages": [{"role": "user", "content": "hi"}]})


@pytest.mark.parametrize("answer", [trickled_body, trickled_headers], ids=["body", "headers"])
def test_a_trickled_answer_ends_at_the_total_deadline(
    serve: Callable[[Answer], ChatServer], answer: Answer
) -> None:
    """Every read is answered within a tick, so only a total deadline can end it."""
    server = serve(answer)
    client = ChatClient(server.url, timeout=2.0, max_retries=0)
    t0 = time.monotonic()
    with pytest.raises(ModelEndpointError, match="deadline of 2 s") as info:
        ask(client)
    took = time.monotonic() - t0
    client.close()
    assert 1.9 <= took < 3.5, took
    outcome = boundary(info.value)  # the endpoint's failure, as every endpoint timeout
    assert isinstance(outcome, Unscored) and outcome.category == "model_endpoint", outcome


def test_each_retry_has_a_deadline_of_its_own(serve: Callable[[Answer], ChatServer]) -> None:
    server = serve(trickled_body)
    client = ChatClient(server.url, timeout=1.0, max_retries=2, backoff_base=0.01, backoff_max=0.01)
    t0 = time.monotonic()
    with pytest.raises(ModelEndpointError, match="after 3 attempts: timeout"):
        ask(client)
    took = time.monotonic() - t0
    client.close()
    assert server.requests == 3 and 2.9 <= took < 5.0, (server.requests, took)


def test_an_answer_within_the_deadline_is_whole(serve: Callable[[Answer], ChatServer]) -> None:
    """A slow but complete answer (1 s of trickle) and three answers on one kept-alive
    connection whose sum is past the deadline: the clock starts with each request."""
    body = completion(json.dumps(ANSWER_STEP))

    def slow(handler: _Handler, server: ChatServer) -> None:
        head = body[:10]
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        server.trickle(handler, head)  # 10 ticks: 1 s
        handler.wfile.write(body[10:])

    server = serve(slow)
    client = ChatClient(server.url, timeout=2.5, max_retries=0)
    t0 = time.monotonic()
    answers = [ask(client) for _ in range(3)]
    took = time.monotonic() - t0
    client.close()
    assert all(json.loads(a.content) == ANSWER_STEP for a in answers)
    assert server.requests == 3 and took > 2.5, took


def test_the_agent_ends_unscored_on_a_trickling_server(
    serve: Callable[[Answer], ChatServer],
) -> None:
    """The agent's ``request_timeout`` (``--request-timeout``) is the request's deadline."""
    server = serve(trickled_body)
    agent = HoloComputerAgent(server.url, "m", request_timeout=1.5, max_retries=0)
    t0 = time.monotonic()
    with pytest.raises(ModelEndpointError, match="timeout"):
        agent.run(MemoryEnv("Say done."), max_steps=3)
    agent.close()
    assert time.monotonic() - t0 < 3.5


def test_a_client_whose_transport_has_no_pool_is_refused() -> None:
    """The deadline bounds the client's connection pools; a transport without one (httpx2's
    MockTransport stands in for a future httpx2 that keeps them elsewhere) fails loudly instead
    of leaving requests unbounded."""
    client = httpx2.Client(transport=httpx2.MockTransport(lambda r: httpx2.Response(200)))
    with pytest.raises(RuntimeError, match="cannot bound"):
        RequestDeadline(1.0).install(client)
    client.close()
    with pytest.raises(ValueError):
        RequestDeadline(0)


# -- token counts ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "usage, expected, flagged",
    [
        (
            {
                "prompt_tokens": 120,
                "completion_tokens": 30,
                "completion_tokens_details": {"reasoning_tokens": 10},
            },
            (120, 30, 10),
            (),
        ),
        ({"prompt_tokens": 12.0, "completion_tokens": 0}, (12, 0, None), ()),
        (
            {"prompt_tokens": -5, "completion_tokens": 1e30},
            (None, None, None),
            ("prompt_tokens -5 negative", "completion_tokens 1e+30 absurd"),
        ),
        (
            {"prompt_tokens": 1.5, "completion_tokens": "7", "reasoning_tokens": True},
            (None, None, None),
            (
                "prompt_tokens 1.5 not a whole",
                "completion_tokens '7' not a number",
                "reasoning_tokens True not a number",
            ),
        ),
        (
            {"prompt_tokens": MAX_TOKENS + 1, "completion_tokens": MAX_COMPLETION_TOKENS + 1},
            (None, None, None),
            ("absurd",),
        ),
        (
            {"prompt_tokens": MAX_TOKENS, "completion_tokens": MAX_COMPLETION_TOKENS},
            (MAX_TOKENS, MAX_COMPLETION_TOKENS, None),
            (),
        ),
        (
            {"prompt_tokens": float("nan"), "completion_tokens": float("inf")},
            (None, None, None),
            ("not a whole",),
        ),
        ({"prompt_tokens": 3, "completion_tokens_details": [1]}, (3, None, None), ()),
        ("lots", (None, None, None), ("usage is not an object",)),
        (None, (None, None, None), ()),
    ],
)
def test_token_counts_are_checked(
    usage: Any, expected: tuple[Any, ...], flagged: tuple[str, ...]
) -> None:
    checked = check_usage(usage)
    assert (checked.prompt, checked.completion, checked.reasoning) == expected
    if flagged:
        assert checked.flag is not None and all(f in checked.flag for f in flagged), checked.flag
    else:
        assert checked.flag is None


def test_unbelievable_counts_are_flagged_in_the_record_and_replay_and_left_out_of_sums(
    serve: Callable[[Answer], ChatServer], tmp_path: Path
) -> None:
    wait = {"note": None, "thought": "Wait.", "tool_call": {"tool_name": "wait", "seconds": 0}}
    answers = [
        completion(json.dumps(wait), {"prompt_tokens": -5, "completion_tokens": 1e30}),
        completion(json.dumps(ANSWER_STEP), {"prompt_tokens": 100, "completion_tokens": 20}),
    ]

    def scripted(handler: _Handler, server: ChatServer) -> None:
        handler.send_body(answers[min(server.requests, len(answers)) - 1])

    server = serve(scripted)
    attempt = Attempt(number=1)
    agent = HoloComputerAgent(
        server.url, "m", recorder=Recorder(tmp_path), on_step=attempt.observe_step, max_retries=0
    )
    traj = agent.run(MemoryEnv("Wait, then say done."), max_steps=3)
    agent.close()
    assert traj.end == "answered"
    bad, good = traj.steps
    assert (bad.prompt_tokens, bad.completion_tokens) == (None, None)
    assert bad.usage_flag and "-5" in bad.usage_flag and "1e+30" in bad.usage_flag
    assert (good.prompt_tokens, good.completion_tokens, good.usage_flag) == (100, 20, None)
    assert (traj.totals.prompt_tokens, traj.totals.completion_tokens) == (100, 20)
    assert (attempt.tokens.prompt, attempt.tokens.completion) == (100, 20)
    attempt.observe_trajectory(traj)
    assert (attempt.tokens.prompt, attempt.tokens.completion) == (100, 20)
    lines = [json.loads(x) for x in (tmp_path / "traj.jsonl").read_text().splitlines()]
    assert lines[0]["usage_flag"] == bad.usage_flag and lines[0]["prompt_tokens"] is None
    html = render_replay(tmp_path).read_text()
    assert "token usage" in html and "left out of the sums" in html
