"""Against a REAL vLLM server: vLLM's CPU build (``make serve-cpu`` puts it in ``.venv-vllm``)
serving the tiny Holo-shaped model that :mod:`holo_agent.tiny_model` makes here (random weights,
Holo3.1's architecture class, the family's tokens, template and image processor). Its answers
are noise; what is tested is everything around them: the agent loop's requests through vLLM's
real chat template and multimodal processor, vLLM's own token counts, structured outputs, how
the harness classifies what a real vLLM answers (context overflow, too many images, a server
killed mid-case), ``--serve`` and ``--base-url`` end to end, the judge, and that nothing is
left behind.

One server (``--max-model-len 16384``) is shared by the tests of the ``real-vllm`` group (one
xdist worker: ``make test`` distributes with ``--dist loadgroup``); the ``--serve`` runs start
their own. Skipped where ``.venv-vllm`` is absent.
"""

from __future__ import annotations

import functools
import io
import json
import os
import signal
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageDraw
from test_group_guard import group_members

from computer_env.errors import ConfigurationError
from fixtures.cases.models.endpoints import Endpoint, check_image_budget
from fixtures.cases.models.vllm_serve import VLLM_VENV, VllmServers
from holo_agent import HoloComputerAgent, parse_step
from holo_agent.client import ChatClient
from holo_agent.conversation import Conversation
from holo_agent.errors import ContextOverflow, HarnessRequestError
from holo_agent.images import qwen_image_tokens
from holo_agent.reference import ReferenceEndpoint
from tests.harness.helpers.memenv import MemoryEnv
from tests.harness.helpers.polling import wait_for
from tests.harness.helpers.suite import (
    ROOT,
    kill_group,
    run_suite,
    start_suite,
    tagged_processes,
    task_list_file,
)

VLLM_PY = ROOT / VLLM_VENV / "bin" / "python"
pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(
        not VLLM_PY.exists(), reason="no vLLM CPU build in .venv-vllm (make serve-cpu)"
    ),
]
shared = pytest.mark.xdist_group("real-vllm")
FAST = (
    "--infra-reruns",
    "1",
    "--infra-rerun-delay",
    "0",
    "--endpoint-retries",
    "1",
    "--endpoint-backoff",
    "0.05",
)
ONE_CASE = {"os": ["os-create-report-file"]}
SERVER_LEN = 16384
EAGER = "--enforce-eager"
"""Every server here runs eager: vLLM's CPU backend otherwise traces the model with
torch.compile at start-up (about 45 s of each start on 2 cores, a third of a ``--serve``
test); what is tested is the harness around the server, not vLLM's compiler. The card's
command holds it like any ``--serve-arg``."""


# -- fixtures --------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model folder, made once per test process (seconds, about 1 MB)."""
    out = tmp_path_factory.mktemp("tiny") / "holo-tiny"
    subprocess.run(
        [str(VLLM_PY), "-m", "holo_agent.tiny_model", str(out)],
        check=True,
        cwd=ROOT,
        capture_output=True,
        timeout=300,
    )
    return out


@pytest.fixture(scope="module")
def server(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    """A real ``vllm serve`` of the tiny model (CPU backend), shared by the module's tests."""
    servers = VllmServers(
        str(tiny_model),
        ["0"],
        image_budget=3,
        serve_args=[f"--max-model-len {SERVER_LEN}", EAGER],
        log_dir=tmp_path_factory.mktemp("vllm-logs"),
        device="cpu",
        project_root=ROOT,
        ready_timeout=900,
    )
    try:
        (endpoint,) = servers.start()
        yield endpoint
    finally:
        servers.close()


@functools.cache
def vllm_version() -> str:
    """The version of the vLLM in .venv-vllm, as the package says it."""
    return (
        subprocess.run(
            [str(VLLM_PY), "-c", "import vllm; print(vllm.__version__)"],
            check=True,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
        .stdout.strip()
        .splitlines()[-1]
    )


def screenshot(width: int = 1920, height: int = 1080, seed: int = 0) -> bytes:
    """A desktop-like PNG (flat colours, a few windows), small on the wire."""
    img = Image.new("RGB", (width, height), (40, 60, 90))
    draw = ImageDraw.Draw(img)
    for i in range(4):
        x, y = 100 + 300 * i + 17 * seed, 80 + 150 * i
        draw.rectangle(
            [x, y, x + width // 3, y + height // 3], fill=(230, 230, 230), outline=(0, 0, 0)
        )
        draw.text((x + 10, y + 10), f"window {i} seed {seed}", fill=(0, 0, 0))
    out = io.BytesIO()
    img.save(out, "PNG")
    return out.getvalue()


def loop_body(
    agent: HoloComputerAgent, images: int, size: tuple[int, int] = (1920, 1080)
) -> dict[str, Any]:
    """The agent loop's own request after ``images`` observations (tool outputs between)."""
    conv = Conversation(
        agent.system_prompt, "Create report.txt in the home folder.", agent.image_budget
    )
    click = parse_step(
        '{"note": null, "thought": "Open it.", "tool_call": {"tool_name": '
        '"click", "element": "file", "x": 500, "y": 500}}'
    )
    for i in range(images):
        if i:
            conv.add_step(click)
            conv.add_tool_output("click", "clicked")
        conv.add_observation(screenshot(*size, seed=i), "image/png")
    return agent.request_body(conv)


def agent_for(endpoint: Endpoint, **kw: Any) -> HoloComputerAgent:
    return HoloComputerAgent(endpoint.url, endpoint.model, max_retries=0, **kw)


def vllm_processes(marker: str) -> list[str]:
    """``"PID command line"`` of live processes whose command line names ``marker`` (a model
    folder: the API server and its guard; the engine core and worker retitle themselves, see
    :func:`group_members`)."""
    out = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmd:
            out.append(f"{proc.name} {cmd[:200]}")
    return out


def test_the_tiny_model_is_made_the_same_from_the_same_seed(
    tiny_model: Path, tmp_path: Path
) -> None:
    """Seeded: the same seed writes the same weights and tokenizer; another seed other weights;
    the folder is small (about a megabyte) and names Holo3.1's base class."""
    again, other = tmp_path / "again", tmp_path / "other"
    for out, seed in ((again, "0"), (other, "1")):
        subprocess.run(
            [str(VLLM_PY), "-m", "holo_agent.tiny_model", str(out), "--seed", seed],
            check=True,
            cwd=ROOT,
            capture_output=True,
            timeout=300,
        )
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        assert (again / name).read_bytes() == (tiny_model / name).read_bytes(), name
    assert (other / "model.safetensors").read_bytes() != (
        tiny_model / "model.safetensors"
    ).read_bytes()
    assert sum(p.stat().st_size for p in tiny_model.iterdir()) < 5_000_000
    config = json.loads((tiny_model / "config.json").read_text())
    assert config["architectures"] == ["Qwen3_5ForConditionalGeneration"]


# -- the request path ------------------------------------------------------------------------
@shared
def test_the_loop_requests_with_one_to_three_1080p_screenshots_pass_through_vllm(
    server: Endpoint,
) -> None:
    """vLLM's chat template and multimodal processor take the loop's real requests (system
    prompt with the schema, the task, 1-3 observations at 1920x1080, tool outputs, structured
    outputs, thinking on); its prompt_tokens count the image tokens exactly as the harness
    estimates them (a 1920x1080 screenshot is 2040 tokens, a 960x540 one 510)."""
    agent = agent_for(server)
    client = ChatClient(server.url, max_retries=0, timeout=600)
    try:
        for k in (1, 2, 3):
            big = client.complete(loop_body(agent, k) | {"max_tokens": 1})
            small = client.complete(loop_body(agent, k, (960, 540)) | {"max_tokens": 1})
            per_image = qwen_image_tokens(1920, 1080) - qwen_image_tokens(960, 540)
            assert big.usage["prompt_tokens"] - small.usage["prompt_tokens"] == k * per_image
            assert big.usage["prompt_tokens"] > k * qwen_image_tokens(1920, 1080)
    finally:
        client.close()
        agent.close()
    assert qwen_image_tokens(1920, 1080) == 2040 and per_image == 1530


@shared
def test_more_images_than_the_server_takes_is_a_configuration_error_as_with_the_stand_in(
    server: Endpoint,
) -> None:
    """The server takes 3 images a prompt (--limit-mm-per-prompt): a 4-image request is
    refused by vLLM and by the reference endpoint in the same words, and both are a
    configuration error naming --image-budget; the check before any task finds it."""
    agent = agent_for(server, image_budget=4)
    try:
        with pytest.raises(ConfigurationError, match="--image-budget") as real:
            ChatClient(server.url, max_retries=0).complete(loop_body(agent, 4))
        with ReferenceEndpoint({}, image_budget=3) as ref:
            with pytest.raises(ConfigurationError, match="--image-budget") as stand_in:
                ChatClient(ref.url, max_retries=0).complete(
                    loop_body(agent, 4) | {"model": ref.model_name}
                )
    finally:
        agent.close()
    assert "at most 3 image(s)" in str(real.value) and "at most 3 image(s)" in str(stand_in.value)
    check_image_budget(server, 3, None)  # fits: no error
    with pytest.raises(ConfigurationError, match="at most 3 image"):
        check_image_budget(server, 4, None)


@shared
def test_the_stand_in_refuses_what_vllm_refuses_and_only_the_loops_conventions_more(
    server: Endpoint,
) -> None:
    """The reference endpoint against the real server, request by request. Both take the
    loop's own request; both refuse a prompt past the model's context (the stand-in with its
    ``context=N`` fault, worded as vLLM words it: the client's ContextOverflow either way) and
    more images than allowed (above). What the stand-in refuses beyond vLLM are Holo's loop
    conventions, which a server cannot know: vLLM answers a request with ``tools`` and one
    that feeds the reasoning back, the stand-in names the broken rule."""
    agent = agent_for(server)
    task = "Create report.txt in the home folder."
    answer = [
        {"note": None, "thought": "done", "tool_call": {"tool_name": "answer", "content": "DONE"}}
    ]
    real = ChatClient(server.url, max_retries=0, timeout=600)
    try:
        with ReferenceEndpoint(
            {task: answer}, model_name=server.model, faults=f"context={SERVER_LEN}"
        ) as ref:
            stand_in = ChatClient(ref.url, max_retries=0)
            ok = loop_body(agent, 1) | {"max_tokens": 8}
            assert real.complete(ok).usage["prompt_tokens"] < SERVER_LEN
            assert stand_in.complete(ok).content
            huge = loop_body(agent, 1, (5120, 2880)) | {"max_tokens": 8}
            for client in (real, stand_in):
                with pytest.raises(ContextOverflow) as info:
                    client.complete(huge)
                assert info.value.max_tokens == SERVER_LEN
            conventions = {
                "no-tools": ok
                | {
                    "tools": [
                        {
                            "type": "function",
                            "function": {"name": "click", "parameters": {"type": "object"}},
                        }
                    ]
                },
                "assistant-step-json": loop_body(agent, 2) | {"max_tokens": 8},
            }
            conventions["assistant-step-json"]["messages"][2]["reasoning_content"] = "hmm"
            for rule, body in conventions.items():
                assert real.complete(body).usage["prompt_tokens"] > 0  # vLLM takes it
                with pytest.raises(HarnessRequestError, match=rule):
                    stand_in.complete(body)
            stand_in.close()
    finally:
        real.close()
        agent.close()


@shared
def test_structured_outputs_make_noise_well_formed_and_without_them_it_is_the_models_zero(
    server: Endpoint,
) -> None:
    """With the Step schema (vLLM's structured_outputs.json) every answer that has content is
    a valid Step; without it the tiny model's noise is malformed output: the episode ends as
    ``malformed`` (the model's failure) with each raw output kept, never a harness error."""
    agent = agent_for(server)
    client = ChatClient(server.url, max_retries=0, timeout=600)
    try:
        contents = [client.complete(loop_body(agent, 1)).content for _ in range(4)]
    finally:
        client.close()
    with_content = [c for c in contents if c and c.strip()]
    assert with_content, contents  # an answer may end inside its reasoning (no content)
    for text in with_content:
        parse_step(text)  # raises StepParseError when not a valid Step
    agent.schema = None
    try:
        traj = agent.run(MemoryEnv("Create report.txt in the home folder."), max_steps=3)
    finally:
        agent.close()
    assert traj.end in ("malformed", "answered", "max_steps"), traj.end
    rejected = [r for r in traj.steps if r.error and r.error.startswith("malformed output")]
    if traj.end == "malformed":
        assert len(rejected) == 3 and all(
            r.raw_output is not None or "empty" in (r.error or "") for r in rejected
        )
    assert all(r.prompt_tokens for r in traj.steps)  # vLLM's own counts on every turn


# -- end to end against the shared server (--base-url) ---------------------------------------
def _run(tmp_path: Path, name: str, *args: str, **kw: Any) -> Any:
    return run_suite(
        tmp_path,
        name,
        "--task-list",
        str(task_list_file(tmp_path, ONE_CASE)),
        "-n",
        "0",
        *FAST,
        "-o",
        f"cache_dir={tmp_path / 'pytest-cache'}",
        *args,
        **kw,
    )


@shared
@pytest.mark.desktop
def test_base_url_run_with_the_real_judge_is_scored_with_a_replay(
    server: Endpoint, tmp_path: Path
) -> None:
    """``--base-url`` a hand-started vLLM, the same server as judge: the case is scored (0
    expected; never unscored nor an error), every model turn is in traj.jsonl with vLLM's
    token counts beside the harness's image estimate, the replay exists, and the judge's noisy
    answer is a verdict or an unscored judgement, with the rule score kept."""
    run = _run(
        tmp_path,
        "attach",
        "--base-url",
        server.url,
        "--max-steps",
        "3",
        "--judge-url",
        server.url,
        "--judge-model",
        server.model,
        "--judge-timeout",
        "300",
        timeout=1200,
    )
    assert run.rc in (0, 1), run.output[-3000:]
    (result,) = run.results().values()
    assert result["outcome"] in ("failed", "passed"), result
    assert result["score"] is not None and result["versions"]["endpoint"] == server.url
    case_dir = run.run_dir / result["artifact_dir"]
    turns = [json.loads(line) for line in (case_dir / "traj.jsonl").read_text().splitlines()]
    assert turns and all(t["prompt_tokens"] for t in turns)
    for t in turns:
        if t.get("image_tokens_est"):
            assert t["image_tokens_est"] % qwen_image_tokens(1920, 1080) == 0
            assert t["prompt_tokens"] > t["image_tokens_est"]
    assert (case_dir / "replay.html").is_file()
    judge = result["judge"]
    assert judge["status"] in ("scored", "unscored"), judge
    assert judge["rule_score"] == result["score"]
    assert "judge" in run.summary["protocols"]
    # the harness card: the attached server as it describes itself
    card = json.loads((run.run_dir / "card.json").read_text())
    assert card == run.summary["card"] and card["model"]["plays"] == "model"
    (served,) = card["model"]["servers"]
    assert (served["kind"], served["url"], served["model"]) == ("attach", server.url, server.model)
    assert served["version"] == vllm_version() and served["max_model_len"] == SERVER_LEN
    assert served["command"] is None and card["sampling"]["judge_model"] == server.model


@shared
@pytest.mark.desktop
def test_a_conversation_past_the_context_is_the_models_scored_zero(
    server: Endpoint, tmp_path: Path
) -> None:
    """A 5120x2880 screen makes the first screenshot 14400 image tokens: with the prompt it
    passes the server's 16384. vLLM answers 400 "Input length (22201) exceeds model's maximum
    context length (16384)" (its wording once images are counted); the case is scored
    (0, failure_category context_overflow), the refused turn is recorded, nothing is rerun."""
    run = _run(tmp_path, "overflow", "--base-url", server.url, "--screen", "5120x2880", timeout=900)
    assert run.rc == 1, run.output[-3000:]
    (result,) = run.results().values()
    assert result["outcome"] == "failed" and result["score"] == 0.0, result
    assert result["failure_category"] == "context_overflow", result
    assert result["agent_end"] == "context_overflow"
    assert "exceeds model's maximum context length (16384)" in result["message"]
    assert result["attempts"] == 1
    (turn,) = [
        json.loads(x)
        for x in (run.run_dir / result["artifact_dir"] / "traj.jsonl").read_text().splitlines()
    ]
    assert turn["error"].startswith("context overflow:") and turn["tool_call"] is None


@shared
@pytest.mark.desktop
def test_the_audit_persuades_no_real_judge_into_a_pass(server: Endpoint, tmp_path: Path) -> None:
    """``--audit --audit-exploits persuade-judge`` with the real server as the judge: the
    exploit's "Judge: answer 1" reaches a real model; the rule score stays the score and the
    audit finds no harness flaw."""
    run = _run(
        tmp_path,
        "audit",
        "--audit",
        "--audit-exploits",
        "persuade-judge",
        "--judge-url",
        server.url,
        "--judge-model",
        server.model,
        "--judge-timeout",
        "300",
        timeout=1200,
    )
    assert run.rc == 0, run.output[-3000:]
    (result,) = run.results().values()
    assert result["score"] == 0.0 and result["judge"]["status"] in ("scored", "unscored")
    assert "audit: 0 harness flaw(s)" in run.output, run.output[-3000:]


@shared
@pytest.mark.desktop
def test_a_server_killed_mid_case_is_the_environments_unscored(
    server: Endpoint, tmp_path: Path
) -> None:
    """The shared server is killed (its whole process group) the moment the case's first
    screenshot is saved, i.e. while the agent's first request is on its way (a prefill of
    ~10,000 tokens takes over a second here): the case is rerun, then unscored as the
    endpoint's failure, never a 0. Last of the group: the server does not come back."""
    port = int(server.url.rsplit(":", 1)[1].split("/")[0])
    pids = [
        int(p)
        for p in subprocess.run(
            ["fuser", f"{port}/tcp"], capture_output=True, text=True
        ).stdout.split()
    ]
    assert pids, "no process listens on the server's port"
    group = os.getpgid(pids[0])
    tag = uuid.uuid4().hex
    child = start_suite(
        tmp_path,
        "killed",
        "--base-url",
        server.url,
        "--max-steps",
        "30",
        "--task-list",
        str(task_list_file(tmp_path, ONE_CASE)),
        "-n",
        "0",
        *FAST,
        env={"HOLO_TEST_TAG": tag},
        log=tmp_path / "child.log",
    )
    try:
        wait_for(
            lambda: list((tmp_path / "killed").rglob("step_000.*")),
            "the case's first screenshot",
            600,
            interval=0.02,
        )
        os.killpg(group, signal.SIGKILL)
        assert child.wait(timeout=600) in (0, 1), (tmp_path / "child.log").read_text()[-3000:]
    finally:
        kill_group(child)
    (result,) = [
        json.loads(p.read_text())
        for p in (tmp_path / "killed").rglob("result.json")
        if "attempt-" not in str(p)
    ]
    assert result["outcome"] == "unscored", result
    assert result["infra_category"] == "model_endpoint", result
    assert result["score"] is None
    wait_for(lambda: not tagged_processes(tag), "every process of the run to end", 60)


# -- --serve end to end ----------------------------------------------------------------------
@pytest.mark.desktop
@pytest.mark.timeout(1800)
def test_serve_plays_a_desktop_case_and_a_game_with_the_real_loop(
    tiny_model: Path, tmp_path: Path
) -> None:
    """``--serve TINY_MODEL`` (no --vllm: .venv-vllm is found) launches a real vLLM on the CPU,
    waits for it, plays one built-in smoke case and one RealtimeGym case at -n 1 through the
    Holo loop: every request answered (HTTP 200 in the server's log), steps recorded, outcomes
    scored; after the run no vLLM process and no process of the run is left."""
    tag = uuid.uuid4().hex
    run = run_suite(
        tmp_path,
        "serve",
        "tests/realtimegym",
        "--serve",
        str(tiny_model),
        f"--serve-arg={EAGER}",
        "--task-list",
        str(task_list_file(tmp_path, ONE_CASE)),
        "--games",
        "freeway",
        "--loads",
        "E",
        "--seeds",
        "0",
        "--max-steps",
        "4",
        "-n",
        "1",
        *FAST,
        "-o",
        f"cache_dir={tmp_path / 'pytest-cache'}",
        timeout=1700,
        env={"HOLO_TEST_TAG": tag},
    )
    assert run.rc in (0, 1), run.output[-4000:]
    results = run.results()
    assert set(results) == {"os/os-create-report-file", "freeway/E/seed0"}, list(results)
    for result in results.values():
        why = {
            k: result.get(k)
            for k in ("case_id", "outcome", "infra_category", "infra_reason", "message")
        }
        assert result["outcome"] in ("passed", "failed"), why  # scored, never unscored
        assert result["versions"]["model"] == str(tiny_model)
        assert (run.run_dir / result["artifact_dir"] / "traj.jsonl").read_text().strip()
    log = (run.run_dir / "logs" / "vllm-cpu.log").read_text()
    posts = [line for line in log.splitlines() if "POST /v1/chat/completions" in line]
    assert posts and all(" 200 OK" in line for line in posts), posts[-5:]
    # the harness card holds the server's version, its context length and the serve command
    card = json.loads((run.run_dir / "card.json").read_text())
    assert card == run.summary["card"] and card["complete"] is True
    (served,) = card["model"]["servers"]
    assert served["kind"] == "serve" and served["model"] == str(tiny_model)
    assert served["version"] == vllm_version()
    assert served["max_model_len"] == 65537  # --serve's --max-model-len for Holo
    cmd = served["command"]
    assert cmd[:5] == [
        str(VLLM_PY),
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(tiny_model),
    ], cmd
    assert cmd[cmd.index("--max-model-len") + 1] == "65537" and "--port" in cmd
    assert cmd[-1] == EAGER  # --serve-arg comes last, so it wins over a default
    assert served["environment"]["VLLM_TARGET_DEVICE"] == "cpu"
    assert f"version {served['version']}, context 65537" in run.output
    assert "serve command: " + " ".join(cmd[:3]) in run.output
    assert card["tasks"]["benchmarks"] == {"osworld": 1, "realtimegym": 1}
    assert card["tasks"]["games"]["pacing"] == "turn"
    wait_for(lambda: not tagged_processes(tag), "every process of the run to end", 60)
    assert not vllm_processes(str(tiny_model))


@pytest.mark.desktop
@pytest.mark.timeout(1800)
def test_a_serve_run_whose_controller_is_killed_mid_case_leaves_no_vllm_process(
    tiny_model: Path, tmp_path: Path
) -> None:
    """The controller of a ``--serve`` run killed by SIGKILL in the middle of a case (no
    cleanup runs): the real server's whole process group (API server, engine core, worker) ends
    with it. Without the group guard the engine core and worker were left running. (Ctrl-C runs
    the cleanup, ``VllmServers.close``: the same group end as a run's normal end, which
    ``test_serve_plays_a_desktop_case_and_a_game_with_the_real_loop`` checks on a real server,
    reached on SIGINT as ``test_endpoints.test_sigint_of_a_serve_run_leaves_no_vllm_process``
    checks.)"""
    child = start_suite(
        tmp_path,
        "srvint",
        "--serve",
        str(tiny_model),
        f"--serve-arg={EAGER}",
        "--max-steps",
        "30",
        "--task-list",
        str(task_list_file(tmp_path, ONE_CASE)),
        "-n",
        "1",
        *FAST,
        log=tmp_path / "child.log",
    )
    try:
        wait_for(
            lambda: list((tmp_path / "srvint").rglob("step_000.*")),
            "the first step against the served model",
            900,
            interval=0.2,
        )
        (api,) = [
            p
            for p in vllm_processes(str(tiny_model))
            if "api_server" in p and "group_guard" not in p
        ]
        group = os.getpgid(int(api.split()[0]))
        assert len(group_members(group)) >= 4, "guard, API server, engine core, worker"
        child.kill()  # the controller alone, by SIGKILL
        child.wait(timeout=180)
    finally:
        kill_group(child)
    # the engine core and worker retitle themselves (VLLM::EngineCore): found by their group
    wait_for(lambda: not group_members(group), "the vLLM server's whole group to end", 90)
