"""The reference endpoint over real HTTP: models list, scripted play, conformance checks, faults,
the CLI. Requests are built by hand (httpx) so that each convention can be broken on purpose.
"""

from __future__ import annotations

import base64
import copy
import io
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from PIL import Image

from holo_agent.conversation import EVICTED
from holo_agent.judge import build_judge_messages
from holo_agent.reference import ReferenceEndpoint
from holo_agent.reference.judge import JUDGE_MODEL, judge_completion
from holo_agent.reference.usage import image_tokens
from tests.harness.helpers.reference_requests import TASK, good_body

SOLUTION = [
    {
        "note": None,
        "thought": "open",
        "tool_call": {"tool_name": "click", "element": "file", "x": 10, "y": 20},
    },
    {
        "note": "first line is abc",
        "thought": "done",
        "tool_call": {"tool_name": "answer", "content": "abc"},
    },
]


@pytest.fixture(scope="module")
def endpoint() -> Any:
    with ReferenceEndpoint({TASK: SOLUTION}) as ep:
        yield ep


def post(url: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{url}/chat/completions", json=body, timeout=10)


def test_models_reports_reference_policy_as_harness_check(endpoint: ReferenceEndpoint) -> None:
    data = httpx.get(f"{endpoint.url}/models", timeout=5).json()
    assert data["data"][0]["id"] == "reference-policy"
    assert data["data"][0]["metadata"]["harness_check"] is True


def test_plays_steps_by_assistant_turn_count(endpoint: ReferenceEndpoint) -> None:
    r0 = post(endpoint.url, good_body(1))
    assert r0.status_code == 200, r0.text
    msg = r0.json()["choices"][0]["message"]
    assert json.loads(msg["content"]) == SOLUTION[0] and msg["reasoning_content"]
    usage = r0.json()["usage"]
    assert usage["prompt_tokens"] > 1000 and usage["completion_tokens_details"]["reasoning_tokens"]
    second = post(endpoint.url, good_body(2)).json()["choices"][0]["message"]["content"]
    assert json.loads(second) == SOLUTION[1]
    done = post(endpoint.url, good_body(3)).json()["choices"][0]["message"]["content"]
    assert json.loads(done)["tool_call"] == {"tool_name": "answer", "content": "DONE"}


def noisy_png(width: int, height: int) -> bytes:
    """A PNG that compresses badly, as screenshots with text and photos do."""
    buf = io.BytesIO()
    Image.effect_noise((width, height), 64).save(buf, "PNG")
    return buf.getvalue()


def with_image(body: dict[str, Any], png: bytes) -> dict[str, Any]:
    """``body`` with its (only) screenshot replaced by ``png``."""
    body = copy.deepcopy(body)
    url = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
    body["messages"][1]["content"][2]["image_url"]["url"] = url
    return body


def test_image_tokens_follow_the_vision_encoders_patches() -> None:
    """Holo3.1's family (Qwen3.5): 32 px a token, as vLLM counts them (test_vllm_real.py)."""
    assert image_tokens(1920, 1080) == 60 * 34 + 2  # resized to 1920x1088, 32 px a token
    assert image_tokens(1280, 800) == 40 * 25 + 2
    assert image_tokens(10, 10) == image_tokens(56, 56) == 8 * 8 + 2  # at least 256x256 px
    assert image_tokens(10_000, 10_000) <= 16384 + 2  # at most MAX_PIXELS


def test_usage_counts_a_screenshot_by_its_patches_not_its_base64(
    endpoint: ReferenceEndpoint,
) -> None:
    """One 1920x1080 PNG costs its 2042 patch tokens, not its base64 text (here ~700k "tokens"
    at four characters each)."""
    big = with_image(good_body(1), noisy_png(1920, 1080))
    small = with_image(good_body(1), noisy_png(56, 56))
    assert len(json.dumps(big)) // 4 > 500_000
    usage = {}
    for name, body in (("big", big), ("small", small)):
        resp = post(endpoint.url, body)
        assert resp.status_code == 200, resp.text
        usage[name] = resp.json()["usage"]["prompt_tokens"]
    assert usage["big"] - usage["small"] == image_tokens(1920, 1080) - image_tokens(56, 56)
    text = usage["small"] - image_tokens(56, 56)  # the system prompt, the task, the wrappers
    assert 1000 < text < 5000 and usage["big"] == text + 2042


def test_judge_usage_counts_screenshots_by_patches() -> None:
    messages = build_judge_messages(
        TASK, [SOLUTION[0]], "answered", [(noisy_png(1920, 1080), "image/png")]
    )
    solutions = {TASK: SOLUTION}
    usage = judge_completion({"model": JUDGE_MODEL, "messages": messages}, solutions, 1)["usage"]
    assert 2042 < usage["prompt_tokens"] < 2042 + 1000


def test_policy_is_asked_first() -> None:
    seen: list[tuple[str, int]] = []

    def policy(instruction: str, index: int, request: dict) -> dict | None:
        seen.append((instruction, index))
        if index == 0:
            return {
                "note": None,
                "thought": "game move",
                "tool_call": {"tool_name": "press_key", "key": "up"},
            }
        return None

    with ReferenceEndpoint({TASK: SOLUTION}, policy=policy) as ep:
        first = post(ep.url, good_body(1)).json()["choices"][0]["message"]["content"]
        second = post(ep.url, good_body(2)).json()["choices"][0]["message"]["content"]
    assert json.loads(first)["tool_call"] == {"tool_name": "press_key", "key": "up"}
    assert json.loads(second) == SOLUTION[1]
    assert seen == [(TASK, 0), (TASK, 1)]


def _set(path: list[Any], value: Any) -> Callable[[dict], None]:
    def mutate(body: dict) -> None:
        node = body
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return mutate


def _evict_newest(body: dict) -> None:
    last = [m for m in body["messages"] if isinstance(m["content"], list)][-1]
    last["content"][-2] = {"type": "text", "text": EVICTED}


def _keep_oldest_image(body: dict) -> None:
    newest = [m for m in body["messages"] if isinstance(m["content"], list)][-1]
    body["messages"][1]["content"][2] = copy.deepcopy(newest["content"][-2])


def _placeholder_outside(body: dict) -> None:
    body["messages"][1]["content"].append({"type": "text", "text": EVICTED})


def _raw_assistant(body: dict) -> None:
    body["messages"][2]["content"] = "I will wait. " + body["messages"][2]["content"]


def _reasoning_fed_back(body: dict) -> None:
    body["messages"][2]["reasoning_content"] = "thinking..."


def _tool_role(body: dict) -> None:
    body["messages"][3] = {"role": "tool", "content": "ok", "tool_call_id": "1"}


def _wrong_tool_name(body: dict) -> None:
    body["messages"][3]["content"] = '<tool_output tool="click">\nok\n</tool_output>'


def _missing_tool_output(body: dict) -> None:
    del body["messages"][3]


def _schema_differs(body: dict) -> None:
    body["structured_outputs"]["json"]["required"] = ["thought", "tool_call"]


def _no_output_format(body: dict) -> None:
    body["messages"][0]["content"] = "You are an agent."


def _no_task(body: dict) -> None:
    body["messages"][1]["content"] = body["messages"][1]["content"][1:]


def _http_image(body: dict) -> None:
    body["messages"][1]["content"][2]["image_url"]["url"] = "http://example.invalid/a.png"


BAD: dict[str, tuple[Callable[[dict], None], str, int]] = {
    "tools-field": (_set(["tools"], [{"type": "function"}]), "no-tools", 2),
    "no-structured-outputs": (_set(["structured_outputs"], None), "structured-outputs", 2),
    "schema-differs": (_schema_differs, "schema-identical", 2),
    "no-output-format": (_no_output_format, "system-prompt", 2),
    "thinking-off": (_set(["chat_template_kwargs"], {"enable_thinking": False}), "thinking-on", 2),
    "too-many-images": (_keep_oldest_image, "image-budget", 4),
    "newest-evicted": (_evict_newest, "image-budget", 4),
    "placeholder-outside-wrapper": (_placeholder_outside, "observation-wrapper", 4),
    "http-image": (_http_image, "observation-wrapper", 1),
    "raw-assistant-text": (_raw_assistant, "assistant-step-json", 2),
    "reasoning-fed-back": (_reasoning_fed_back, "assistant-step-json", 2),
    "tool-role-message": (_tool_role, "roles", 2),
    "tool-output-wrong-tool": (_wrong_tool_name, "tool-output-user", 2),
    "tool-output-missing": (_missing_tool_output, "tool-output-user", 2),
    "no-task-block": (_no_task, "task-first", 1),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_conformance_checker_rejects_each_broken_rule(
    endpoint: ReferenceEndpoint, case: str
) -> None:
    mutate, rule, n_obs = BAD[case]
    body = good_body(n_obs)
    assert post(endpoint.url, copy.deepcopy(body)).status_code == 200
    mutate(body)
    resp = post(endpoint.url, body)
    assert resp.status_code == 400, resp.text
    err = resp.json()["error"]
    assert err["rule"] == rule and f"'{rule}'" in err["message"]


def test_unknown_model_is_404(endpoint: ReferenceEndpoint) -> None:
    body = good_body(1)
    body["model"] = "Holo-3.1-4B"
    assert post(endpoint.url, body).status_code == 404


def test_faults_via_admin_route(endpoint: ReferenceEndpoint) -> None:
    base = endpoint.url.removesuffix("/v1")
    r = httpx.post(f"{base}/admin/faults", json={"spec": "status=503:1,retry_after=2,empty=1"})
    assert r.status_code == 200
    first = post(endpoint.url, good_body(1))
    assert first.status_code == 503 and first.headers["retry-after"] == "2"
    assert post(endpoint.url, good_body(1)).json()["choices"][0]["message"]["content"] == ""
    assert post(endpoint.url, good_body(1)).status_code == 200
    assert httpx.post(f"{base}/admin/faults", json={"spec": "bogus=1"}).status_code == 400


def test_drop_fault_closes_the_connection() -> None:
    with ReferenceEndpoint({TASK: SOLUTION}, faults="drop=1") as ep:
        with pytest.raises(httpx.TransportError):
            post(ep.url, good_body(1))
        assert post(ep.url, good_body(1)).status_code == 200


def test_bad_body_fault_answers_200_without_a_completion() -> None:
    with ReferenceEndpoint({TASK: SOLUTION}, faults="bad_body=1") as ep:
        first = post(ep.url, good_body(1))
        assert first.status_code == 200 and "choices" not in first.json()
        assert "choices" in post(ep.url, good_body(1)).json()


def test_bad_solution_is_refused_at_construction() -> None:
    with pytest.raises(ValueError, match="step 0"):
        ReferenceEndpoint({TASK: [{"thought": "x", "tool_call": {"tool_name": "fly"}}]})


def test_cli_serves_solutions_file(tmp_path: Path) -> None:
    sol = tmp_path / "solutions.json"
    sol.write_text(json.dumps({TASK: SOLUTION}))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "holo_agent.reference",
            "--port",
            "0",
            "--solutions",
            str(sol),
            "--faults",
            "status=502:1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        url = proc.stdout.readline().strip()  # the CLI prints the URL once it is listening
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        assert httpx.get(f"{url}/models", timeout=5).status_code == 200
        assert post(url, good_body(1)).status_code == 502
        content = post(url, good_body(1)).json()["choices"][0]["message"]["content"]
        assert json.loads(content) == SOLUTION[0]
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
