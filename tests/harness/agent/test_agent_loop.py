"""The Holo agent loop against the real reference endpoint (HTTP on loopback) and an in-memory env.

The endpoint stands in for a GPU vLLM server, which cannot run here; it checks every request
against the agent-loop conventions, so any convention the loop breaks fails these tests (HTTP 400
-> ``HarnessRequestError``).
"""

from __future__ import annotations

import base64
import io
import socket
import time
from typing import Any

import pytest
from PIL import Image

from computer_env.base import Click, Drag, Hotkey, Scroll, TypeText
from computer_env.errors import ConfigurationError, ModelEndpointError
from holo_agent import (
    Agent,
    HarnessRequestError,
    HoloComputerAgent,
    StepRecord,
    Trajectory,
    step_json_schema,
)
from holo_agent.conversation import EVICTED
from holo_agent.reference import CONTENT_FAULTS, ReferenceEndpoint
from tests.harness.helpers.memenv import MemoryEnv
from tests.harness.helpers.polling import scaled

TASK = "Click OK, type hello and save."


def s(tool_name: str, thought: str = "next", note: str | None = None, **args: Any) -> dict:
    """A Step dict."""
    return {"note": note, "thought": thought, "tool_call": {"tool_name": tool_name, **args}}


SOLUTION = [
    s("click", element="OK button", x=500, y=500, note="opened the dialog"),
    s("write", content="hello", press_enter=True),
    s("hotkey", keys=["ctrl", "s"]),
    s("answer", content="saved"),
]


def agent(url: str, **kw: Any) -> HoloComputerAgent:
    """An agent with short retry backoff for tests."""
    kw.setdefault("backoff_base", 0.01)
    kw.setdefault("backoff_max", 0.05)
    return HoloComputerAgent(url, "reference-policy", **kw)


def images_in(body: dict) -> list[str]:
    """Data URLs of the images in a request, in order."""
    return [
        p["image_url"]["url"]
        for m in body["messages"]
        if isinstance(m["content"], list)
        for p in m["content"]
        if p.get("type") == "image_url"
    ]


def test_full_episode_ends_in_answer() -> None:
    env = MemoryEnv(TASK, 1280, 800)
    with ReferenceEndpoint({TASK: SOLUTION}) as ep:
        traj = agent(ep.url).run(env, max_steps=10)
    assert traj.end == "answered" and traj.answer == "saved" and traj.error is None
    assert env.finished == ("saved", False)
    assert env.events == [
        Click(x=640, y=400),
        TypeText(text="hello", press_enter=True),
        Hotkey(keys=["ctrl", "s"]),
    ]
    assert [r.tool_call["tool_name"] for r in traj.steps] == ["click", "write", "hotkey", "answer"]
    assert traj.steps[0].note == "opened the dialog" and traj.steps[0].pixel == {"x": 640, "y": 400}
    assert traj.steps[0].tool_output == "applied click"
    assert all(r.prompt_tokens and r.completion_tokens and r.reasoning_tokens for r in traj.steps)
    assert all(r.reasoning and "Reference policy" in r.reasoning for r in traj.steps)
    assert traj.totals.requests == 4 and traj.totals.prompt_tokens == sum(
        r.prompt_tokens for r in traj.steps
    )
    body = ep.requests_seen[-1]
    assert body["structured_outputs"]["json"] == step_json_schema()
    assert body["chat_template_kwargs"] == {"enable_thinking": True}
    assert body["temperature"] == 0.8 and body["reasoning_effort"] == "medium"
    assert "tools" not in body
    # Reasoning is never fed back; assistant turns are the parsed Step JSON.
    assistant = [m for m in body["messages"] if m["role"] == "assistant"]
    assert len(assistant) == 3 and all("reasoning" not in m["content"] for m in assistant)
    Trajectory.model_validate_json(traj.model_dump_json())


def test_image_eviction_after_many_steps() -> None:
    steps = [s("click", element="OK", x=100 * i, y=100) for i in range(1, 6)] + [
        s("answer", content="done")
    ]
    env = MemoryEnv(TASK, 640, 480)
    with ReferenceEndpoint({TASK: steps}) as ep:
        traj = agent(ep.url, image_budget=3).run(env, max_steps=10)
    assert traj.end == "answered"
    counts = [len(images_in(b)) for b in ep.requests_seen]
    assert counts == [1, 2, 3, 3, 3, 3]
    last = ep.requests_seen[-1]["messages"]
    obs = [m for m in last if m["role"] == "user" and isinstance(m["content"], list)]
    assert len(obs) == 6
    for m in obs[:3]:
        texts = [p.get("text") for p in m["content"]]
        assert texts[-3:] == ["<observation>", EVICTED, "</observation>"]
    sent = [base64.b64decode(u.split(",", 1)[1]) for u in images_in(ep.requests_seen[-1])]
    assert sent == [o.image for o in env.observations[-3:]]


def test_coordinates_scale_on_non_square_screen() -> None:
    steps = [
        s("click", element="a", x=333, y=999),
        s("double_click", element="b", x=0, y=1000),
        s("right_click", element="c", x=500, y=250),
        s("drag", from_x=100, from_y=200, to_x=900, to_y=800),
        s("scroll", direction="down", amount=5, x=250, y=750),
        s("answer", content="ok"),
    ]
    env = MemoryEnv(TASK, 1366, 768)
    with ReferenceEndpoint({TASK: steps}) as ep:
        agent(ep.url).run(env, max_steps=10)
    # round half up of v * size / 1000, clamped to the last pixel
    assert env.events == [
        Click(x=455, y=767),
        Click(x=0, y=767, count=2),
        Click(x=683, y=192, button="right"),
        Drag(x1=137, y1=154, x2=1229, y2=614),
        Scroll(direction="down", amount=5, x=342, y=576),
    ]


def test_coordinates_after_resize_to_max_image_width() -> None:
    steps = [
        s("click", element="a", x=500, y=250),
        s("click", element="b", x=1000, y=1000),
        s("answer", content="ok"),
    ]
    env = MemoryEnv(TASK, 2560, 1440)
    with ReferenceEndpoint({TASK: steps}) as ep:
        traj = agent(ep.url, max_image_width=1280).run(env, max_steps=5)
    img = Image.open(io.BytesIO(base64.b64decode(images_in(ep.requests_seen[0])[0].split(",")[1])))
    assert img.size == (1280, 720)
    assert traj.steps[0].image_size == (1280, 720) and traj.steps[0].env_size == (2560, 1440)
    # the same normalised point on the env's full-size screenshot
    assert env.events == [Click(x=1280, y=360), Click(x=2559, y=1439)]


@pytest.mark.parametrize("fault", CONTENT_FAULTS)
def test_malformed_output_is_reasked_then_recovers(fault: str) -> None:
    env = MemoryEnv(TASK)
    with ReferenceEndpoint({TASK: SOLUTION}, faults=f"{fault}=1") as ep:
        traj = agent(ep.url).run(env, max_steps=10)
    assert traj.end == "answered"
    bad = traj.steps[0]
    assert bad.error and bad.error.startswith("malformed output") and bad.tool_call is None
    assert traj.steps[1].reask == 1 and traj.steps[1].tool_call["tool_name"] == "click"
    assert len(env.events) == 3  # nothing applied for the bad output, never a guessed click
    reask = ep.requests_seen[1]["messages"][-1]
    assert reask["role"] == "user"
    assert reask["content"].startswith('<tool_output tool="invalid_output">')


@pytest.mark.parametrize("fault", CONTENT_FAULTS)
def test_malformed_output_beyond_reasks_is_a_model_failure(fault: str) -> None:
    env = MemoryEnv(TASK)
    with ReferenceEndpoint({TASK: SOLUTION}, faults=f"{fault}=3") as ep:
        traj = agent(ep.url, max_reasks=2).run(env, max_steps=10)
        assert len(ep.requests_seen) == 3
    assert traj.end == "malformed" and "after 2 re-asks" in (traj.error or "")
    assert [r.reask for r in traj.steps] == [0, 1, 2] and all(r.error for r in traj.steps)
    assert env.events == [] and env.finished is None


def test_malformed_reasons_name_the_problem() -> None:
    reasons = {}
    for fault in ("malformed", "list_coords", "range_coords", "out_of_range", "empty", "schema"):
        with ReferenceEndpoint({TASK: SOLUTION}, faults=f"{fault}=1") as ep:
            traj = agent(ep.url).run(MemoryEnv(TASK), max_steps=1)
        reasons[fault] = traj.steps[0].error or ""
    assert "invalid JSON" in reasons["malformed"]
    assert "empty output" in reasons["empty"]
    for fault in ("list_coords", "range_coords", "out_of_range"):
        assert "tool_call.click.x" in reasons[fault], reasons[fault]
    assert "schema mismatch" in reasons["schema"]


def test_infeasible_answer_calls_finish_infeasible() -> None:
    env = MemoryEnv(TASK)
    steps = [s("answer", content="INFEASIBLE: the app has no such feature")]
    with ReferenceEndpoint({TASK: steps}) as ep:
        traj = agent(ep.url).run(env, max_steps=5)
    assert traj.end == "infeasible"
    assert env.finished == ("INFEASIBLE: the app has no such feature", True)


def test_max_steps_ends_the_loop() -> None:
    env = MemoryEnv(TASK)
    steps = [s("wait", seconds=0)] * 10
    with ReferenceEndpoint({TASK: steps}) as ep:
        traj = agent(ep.url).run(env, max_steps=3)
    assert traj.end == "max_steps" and len(traj.steps) == 3 and len(env.events) == 3
    assert env.finished is None


def test_env_done_ends_the_loop() -> None:
    env = MemoryEnv(TASK, done_after=2)
    with ReferenceEndpoint({TASK: [s("wait", seconds=0)] * 5}) as ep:
        traj = agent(ep.url).run(env, max_steps=5)
    assert traj.end == "env_done" and len(env.events) == 2


def test_endpoint_5xx_then_recovery() -> None:
    env = MemoryEnv(TASK)
    with ReferenceEndpoint({TASK: SOLUTION}, faults="status=503:2,drop=1") as ep:
        traj = agent(ep.url, max_retries=4).run(env, max_steps=10)
        assert len(ep.requests_seen) == 4 + 3
    assert traj.end == "answered" and traj.steps[0].attempts == 4


def test_backoff_options_set_the_delays() -> None:
    """``backoff_base``/``backoff_max`` are the retry delays (openai's own backoff waits at least
    1.1 s for two retries): 0.01 s doubling is quick, 0.4 s doubling waits 0.4 + 0.8 s."""
    spent = {}
    for base in (0.01, 0.4):
        with ReferenceEndpoint({TASK: SOLUTION}, faults="status=503:2") as ep:
            t0 = time.monotonic()
            traj = agent(ep.url, backoff_base=base, backoff_max=5).run(MemoryEnv(TASK), 1)
            spent[base] = time.monotonic() - t0
        assert traj.steps[0].attempts == 3
    assert spent[0.01] < scaled(1.0), spent
    assert spent[0.4] >= 1.2, spent
    with ReferenceEndpoint({TASK: SOLUTION}, faults="status=503:2") as ep:
        t0 = time.monotonic()
        agent(ep.url, backoff_base=0.4, backoff_max=0.05).run(MemoryEnv(TASK), 1)
        assert time.monotonic() - t0 < scaled(1.0)  # capped at backoff_max


def test_a_200_that_is_not_a_chat_completion_is_retried() -> None:
    env = MemoryEnv(TASK)
    with ReferenceEndpoint({TASK: SOLUTION}, faults="bad_body=2") as ep:
        traj = agent(ep.url, max_retries=2).run(env, max_steps=10)
        assert len(ep.requests_seen) == 2 + 4
    assert traj.end == "answered" and traj.steps[0].attempts == 3
    with ReferenceEndpoint({TASK: SOLUTION}, faults="bad_body=100") as ep:
        with pytest.raises(
            ModelEndpointError,
            match="3 attempts: HTTP 200 with a body that is not a chat completion",
        ):
            agent(ep.url, max_retries=2).run(MemoryEnv(TASK), max_steps=5)
        assert len(ep.requests_seen) == 3


def test_endpoint_keeps_failing_raises_model_endpoint_error() -> None:
    with ReferenceEndpoint({TASK: SOLUTION}, faults="status=500:100") as ep:
        with pytest.raises(ModelEndpointError, match="3 attempts.*HTTP 500"):
            agent(ep.url, max_retries=2).run(MemoryEnv(TASK), max_steps=5)
        assert len(ep.requests_seen) == 3


def test_endpoint_down_raises_model_endpoint_error() -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(ModelEndpointError, match="connection failed") as info:
        agent(f"http://127.0.0.1:{port}/v1", max_retries=2).run(MemoryEnv(TASK), max_steps=5)
    assert info.value.category == "model_endpoint"


def test_endpoint_timeout_raises_after_retries() -> None:
    with ReferenceEndpoint({TASK: SOLUTION}, faults="delay=1.0") as ep:
        with pytest.raises(ModelEndpointError, match="timeout"):
            agent(ep.url, request_timeout=0.2, max_retries=1).run(MemoryEnv(TASK), max_steps=2)
        assert len(ep.requests_seen) == 2


def test_429_retry_after_is_honoured() -> None:
    env = MemoryEnv(TASK)
    with ReferenceEndpoint({TASK: SOLUTION}, faults="status=429:1,retry_after=1") as ep:
        t0 = time.monotonic()
        traj = agent(ep.url).run(env, max_steps=1)
        waited = time.monotonic() - t0
    assert traj.steps[0].attempts == 2
    assert waited >= 0.95, f"Retry-After: 1 not honoured (backoff 0.01s), took {waited:.2f}s"


def test_more_images_than_the_endpoint_takes_is_a_configuration_error() -> None:
    """An agent configured beyond the endpoint's image budget: the endpoint refuses with vLLM's
    own words ("At most N image(s) may be provided in one prompt"), which the client reads as
    the configuration's fault, naming --image-budget (vLLM's real answer: test_vllm_real.py)."""
    steps = [s("wait", seconds=0)] * 5
    with ReferenceEndpoint({TASK: steps}, image_budget=3) as ep:
        with pytest.raises(ConfigurationError, match="--image-budget") as info:
            agent(ep.url, image_budget=4).run(MemoryEnv(TASK), max_steps=5)
    assert "takes at most 3 image(s) per prompt" in str(info.value)
    assert "4 images sent" in str(info.value)


def test_request_breaking_a_convention_raises_harness_request_error() -> None:
    """A request that breaks a loop convention the endpoint checks (here: the reasoning fed
    back in an assistant turn) is the harness's bug: HarnessRequestError, HTTP 400."""
    steps = [s("wait", seconds=0)] * 3
    with ReferenceEndpoint({TASK: steps}) as ep:
        a = agent(ep.url)
        plain = a.request_body

        def with_reasoning(conv):  # type: ignore[no-untyped-def]
            body = plain(conv)
            for m in body["messages"]:
                if m["role"] == "assistant":
                    m["reasoning_content"] = "thinking"
            return body

        a.request_body = with_reasoning  # type: ignore[method-assign]
        with pytest.raises(HarnessRequestError, match="assistant-step-json") as info:
            a.run(MemoryEnv(TASK), max_steps=3)
    assert info.value.status == 400 and "reasoning fed back" in info.value.server_message


def test_api_key_is_sent_as_bearer_and_not_leaked() -> None:
    key = "sk-test-9f8e7d6c5b4a"
    with ReferenceEndpoint({TASK: SOLUTION}, require_api_key=key) as ep:
        a = agent(ep.url, api_key=key)
        assert a.run(MemoryEnv(TASK), max_steps=5).end == "answered"
        assert key not in repr(a) and key not in str(a.settings())
        assert {h["authorization"] for h in ep.headers_seen} == {f"Bearer {key}"}
        with pytest.raises(ConfigurationError, match="refused the credentials") as info:
            agent(ep.url, api_key="wrong-key").run(MemoryEnv(TASK), max_steps=5)
    assert "wrong-key" not in str(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_no_api_key_sends_no_authorization_and_reads_no_openai_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without ``api_key`` nothing of the user's OpenAI settings reaches the endpoint."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    monkeypatch.setenv("OPENAI_ORG_ID", "org-from-the-environment")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-from-the-environment")
    monkeypatch.setenv("OPENAI_ADMIN_KEY", "sk-admin-from-the-environment")
    with ReferenceEndpoint({TASK: SOLUTION}) as ep:
        assert agent(ep.url).run(MemoryEnv(TASK), max_steps=5).end == "answered"
        sent = list(ep.headers_seen)
    assert sent and all("authorization" not in h for h in sent)
    assert not [h for h in sent if any("environment" in v for v in h.values())]


def test_agent_protocol_and_before_action_at_construction() -> None:
    seen: list[list[StepRecord]] = []
    with ReferenceEndpoint({TASK: SOLUTION}, faults="malformed=1") as ep:
        a = agent(ep.url, before_action=seen.append)
        assert isinstance(a, Agent)
        traj = a.run(MemoryEnv(TASK), max_steps=10)
        a.close()
    assert traj.end == "answered"
    # one call per applied action (the answer applies none), the re-asked turn first
    assert [[r.reask for r in records] for records in seen] == [[0, 1], [0], [0]]


def test_terse_prompt_variant_conforms() -> None:
    with ReferenceEndpoint({TASK: SOLUTION}) as ep:
        traj = agent(ep.url, prompt="terse-v1").run(MemoryEnv(TASK), max_steps=5)
        assert ep.requests_seen[0]["messages"][0]["content"].startswith("You operate a computer")
    assert traj.end == "answered"


def test_unknown_prompt_variant_is_rejected() -> None:
    with pytest.raises(KeyError, match="default-v1"):
        agent("http://127.0.0.1:9/v1", prompt="nope-v0")


def test_a_prompt_past_the_models_context_ends_the_episode_as_the_models_failure() -> None:
    """The endpoint refuses the first turn as vLLM refuses a prompt past --max-model-len (the
    reference endpoint's ``context=N`` fault, vLLM's words; the real server in
    test_vllm_real.py): the episode ends ``context_overflow``, the refused turn recorded with
    the harness's image-token estimate, and nothing is raised (the case is then scored)."""
    with ReferenceEndpoint({TASK: SOLUTION}, faults="context=100") as ep:
        traj = agent(ep.url).run(MemoryEnv(TASK), max_steps=5)
    assert traj.end == "context_overflow"
    assert "exceeds model's maximum context length (100)" in (traj.error or "")
    (turn,) = traj.steps
    assert turn.error is not None and turn.error.startswith("context overflow:")
    assert turn.tool_call is None and turn.image_tokens_est and turn.image_tokens_est > 0
