"""Model endpoints of the plugin: attach mode (``--base-url``, ``HOLO_BASE_URLS``, ``--model``,
``--api-key``) against real reference-endpoint servers, the per-worker ``EndpointChooser``, and
serve mode (``--serve``/``--gpus``).

Serve mode uses a TEST DOUBLE of the ``vllm`` executable (``tests/harness/helpers/fake_vllm/vllm``): a
real vLLM server needs a GPU and model weights, which cannot exist on a test machine. The double
parses ``vllm serve MODEL --host H --port P ...``, records its command line and
``CUDA_VISIBLE_DEVICES``, and serves the real reference endpoint in-process, so everything on the
harness side (launch, flags, health wait, logs, teardown) is real.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from computer_env.errors import ConfigurationError, ModelEndpointError
from fixtures.cases.models.endpoints import (
    Endpoint,
    EndpointChooser,
    attach,
    free_port,
    list_models,
    normalize_base_url,
)
from fixtures.cases.models.vllm_serve import VllmServers
from fixtures.run.run_start import builtin_solutions_by_instruction
from holo_agent.client import ChatClient
from holo_agent.reference import ReferenceEndpoint
from tests.harness.helpers.httpstub import CountingServer
from tests.harness.helpers.polling import wait_for
from tests.harness.helpers.suite import (
    ROOT,
    SuiteRun,
    first_smoke_tasks,
    kill_group,
    run_suite,
    start_suite,
    tagged_processes,
    task_list_file,
)

FAKE_VLLM_DIR = Path(__file__).resolve().parents[1] / "helpers" / "fake_vllm"
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
SECRET = "sk-holo-test-" + uuid.uuid4().hex


# -- helpers ---------------------------------------------------------------------------------
@pytest.fixture
def reference_pair() -> Iterator[tuple[ReferenceEndpoint, ReferenceEndpoint]]:
    """Two real reference endpoints serving model ``holo-test`` that demand ``SECRET``."""
    solutions = builtin_solutions_by_instruction()
    eps = [
        ReferenceEndpoint(solutions, model_name="holo-test", require_api_key=SECRET)
        for _ in range(2)
    ]
    for ep in eps:
        ep.start()
    yield eps[0], eps[1]
    for ep in eps:
        ep.stop()


def dead_url() -> str:
    return f"http://127.0.0.1:{free_port()}/v1"


def _cache(tmp_path: Path) -> tuple[str, str]:
    return ("-o", f"cache_dir={tmp_path / 'pytest-cache'}")


def _one_task_file(tmp_path: Path) -> Path:
    return task_list_file(tmp_path, first_smoke_tasks(1, exclude_domains=("chrome",)))


def _files_containing(folder: Path, needle: str) -> list[Path]:
    data = needle.encode()
    return [p for p in folder.rglob("*") if p.is_file() and data in p.read_bytes()]


def _no_task_ran(run: SuiteRun) -> None:
    assert not list(run.run_dir.rglob("result.json")), "a task ran despite the bad configuration"
    assert not (run.run_dir / "summary.json").exists()


def StatusServer(status: int = 200) -> CountingServer:  # noqa: N802 - reads like a class
    """A real HTTP server whose ``/v1/models`` answers ``status`` with a model list; counts the
    probes it receives."""
    body = json.dumps({"object": "list", "data": [{"id": "m"}]}).encode()
    return CountingServer(status, body=body, path="/v1")


# -- unit: URLs, attach ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "raw", ["http://gpu1:8000", "http://gpu1:8000/", "http://gpu1:8000/v1", "http://gpu1:8000/v1/"]
)
def test_normalize_base_url_adds_v1_once(raw: str) -> None:
    assert normalize_base_url(raw) == "http://gpu1:8000/v1"


def test_normalize_base_url_keeps_https_and_rejects_non_urls() -> None:
    assert normalize_base_url("https://api.example.test/v1") == "https://api.example.test/v1"
    for bad in ("gpu1:8000", "ftp://gpu1/v1", ""):
        with pytest.raises(ConfigurationError, match="--base-url"):
            normalize_base_url(bad)


def test_attach_picks_the_served_model_name(reference_pair) -> None:
    a, b = reference_pair
    eps = attach([a.url.removesuffix("/v1"), b.url + "/"], None, None)
    assert eps == [
        Endpoint(url=a.url, model="holo-test", kind="attach"),
        Endpoint(url=b.url, model="holo-test", kind="attach"),
    ]
    assert attach([a.url], "holo-test", SECRET)[0].model == "holo-test"


def test_attach_unknown_model_and_dead_url_are_configuration_errors(reference_pair) -> None:
    a, _ = reference_pair
    with pytest.raises(ConfigurationError, match=r"--model 'nope' is not served.*holo-test"):
        attach([a.url], "nope", None)
    dead = dead_url()
    with pytest.raises(ConfigurationError, match=rf"--base-url {dead}: the endpoint does not"):
        attach([a.url, dead], None, None)


def test_attach_to_a_reference_endpoint_process() -> None:
    """``python -m holo_agent.reference --port 0`` in its own process, found via /v1/models."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "holo_agent.reference", "--port", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        url = proc.stdout.readline().strip()  # type: ignore[union-attr]
        assert url.startswith("http://127.0.0.1:"), url
        (ep,) = attach([url], None, None)
        assert ep == Endpoint(url=url, model="reference-policy", kind="attach")
    finally:
        kill_group(proc)  # type: ignore[arg-type]
        proc.wait(timeout=10)


class HeaderRecorder:
    """A real OpenAI-compatible HTTP server (``/v1/models``, ``/v1/chat/completions``) that
    records the headers of every request, by path."""

    def __init__(self) -> None:
        self.seen: dict[str, list[dict[str, str]]] = {}
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self, payload: dict[str, object]) -> None:
                owner.seen.setdefault(self.path, []).append(
                    {k.lower(): v for k, v in self.headers.items()}
                )
                body = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:  # noqa: N802 - http.server naming
                self._answer({"object": "list", "data": [{"id": "m", "object": "model"}]})

            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self._answer(
                    {
                        "id": "c",
                        "object": "chat.completion",
                        "created": 0,
                        "model": "m",
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": "stop",
                                "message": {"role": "assistant", "content": "done"},
                            }
                        ],
                    }
                )

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self.server.server_address[1])
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


# the headers that differ between two requests of one client by nature (the agent's call asks
# for the raw response; its user agent names openai's client class, a subclass there)
_PER_REQUEST = {
    "content-length",
    "content-type",
    "x-stainless-read-timeout",
    "x-stainless-retry-count",
    "x-stainless-timeout",
    "host",
    "connection",
    "x-stainless-raw-response",
    "user-agent",
}


@pytest.mark.parametrize(
    "api_key,userinfo",
    [(SECRET, ""), (None, ""), (None, "user:pw@")],
    ids=["key", "no-key", "url-credentials"],
)
def test_probe_sends_what_the_agent_sends(
    api_key: str | None, userinfo: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probe is the agent's own client: same auth, same headers (openai's user agent and
    platform headers), never an organisation or project from the environment."""
    monkeypatch.setenv("OPENAI_ORG_ID", "org-from-env")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-from-env")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    server = HeaderRecorder()
    url = f"http://{userinfo}127.0.0.1:{server.port}/v1"
    chat = ChatClient(url, api_key=api_key, max_retries=0)
    try:
        assert list_models(url, api_key) == ["m"]
        chat.complete({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    finally:
        chat.close()
        server.close()
    (probe,) = server.seen["/v1/models"]
    (call,) = server.seen["/v1/chat/completions"]
    same = {k: v for k, v in probe.items() if k not in _PER_REQUEST}
    assert same == {k: v for k, v in call.items() if k not in _PER_REQUEST}
    assert probe["user-agent"].startswith("OpenAI/Python")
    assert probe["user-agent"].split("/")[1] == call["user-agent"].split("/")[1]
    assert not {"openai-organization", "openai-project"} & set(probe)
    expected = (
        f"Bearer {api_key}"
        if api_key
        else "Basic " + base64.b64encode(b"user:pw").decode()
        if userinfo
        else None
    )
    assert probe.get("authorization") == expected


def test_probe_errors_name_the_url_never_the_credentials() -> None:
    bad = CountingServer(200, body=b'{"data": 5}', path="/v1")
    try:
        with pytest.raises(ModelEndpointError, match=r"/v1/models: not an OpenAI model list"):
            list_models(bad.url, SECRET)
    finally:
        bad.close()
    dead = dead_url().replace("http://", "http://user:hidden-pw@")
    with pytest.raises(ModelEndpointError) as info:
        list_models(dead, SECRET, timeout=5)
    assert "[REDACTED]@127.0.0.1" in info.value.reason and "ConnectError" in info.value.reason
    assert "hidden-pw" not in info.value.reason and SECRET not in info.value.reason


# -- unit: EndpointChooser -------------------------------------------------------------------
def test_chooser_spreads_workers_over_endpoints() -> None:
    servers = [StatusServer() for _ in range(3)]
    try:
        eps = [Endpoint(url=s.url, model="m", kind="attach") for s in servers]
        picks = [EndpointChooser(eps, worker_index=i).pick().url for i in range(6)]
        assert picks == [s.url for s in servers] * 2
    finally:
        for s in servers:
            s.close()


def test_chooser_skips_a_dead_endpoint_and_raises_when_all_are_dead() -> None:
    flaky, good = StatusServer(status=503), StatusServer()
    try:
        eps = [
            Endpoint(url=flaky.url, model="m", kind="attach"),
            Endpoint(url=good.url, model="m", kind="attach"),
        ]
        chooser = EndpointChooser(eps, worker_index=0)
        assert chooser.pick().url == good.url
        assert flaky.hits == 1 and chooser.dead == {flaky.url}
        assert chooser.pick().url == good.url
        assert flaky.hits == 1, "a later pick probed the endpoint known to be dead"
        good.close()
        with pytest.raises(ModelEndpointError) as info:
            chooser.pick()
        assert good.url in info.value.reason and flaky.url in info.value.reason
        assert flaky.hits == 2  # re-probed before giving up: it might have come back
        flaky.status = 200  # it came back
        assert chooser.pick().url == flaky.url
        assert chooser.dead == {good.url}
    finally:
        flaky.close()


def test_chooser_needs_an_endpoint() -> None:
    with pytest.raises(ConfigurationError):
        EndpointChooser([], worker_index=0)


# -- session start: every URL is checked before any task (no desktop needed) -------------------
@pytest.mark.parametrize("how", ["repeated", "comma", "env"])
def test_every_base_url_is_checked_at_session_start(
    tmp_path: Path, reference_pair, how: str
) -> None:
    live, dead = reference_pair[0].url, dead_url()
    args: tuple[str, ...] = ()
    env = {}
    if how == "repeated":
        args = ("--base-url", live, "--base-url", dead)
    elif how == "comma":
        args = ("--base-url", f"{live},{dead}")
    else:
        env = {"HOLO_BASE_URLS": f"{live},{dead}"}
    run = run_suite(tmp_path, "chk", *args, *_cache(tmp_path), timeout=120, env=env)
    assert run.rc not in (0, 1), run.output[-2000:]
    assert f"--base-url {dead}: the endpoint does not answer" in run.output, run.output[-2000:]
    _no_task_ran(run)


def test_unknown_model_is_a_configuration_error_before_any_task(
    tmp_path: Path, reference_pair
) -> None:
    run = run_suite(
        tmp_path,
        "nomodel",
        "--base-url",
        reference_pair[0].url,
        "--model",
        "holo-unknown",
        *_cache(tmp_path),
        timeout=120,
    )
    assert run.rc not in (0, 1), run.output[-2000:]
    assert "--model 'holo-unknown' is not served" in run.output
    assert "holo-test" in run.output  # what it does serve
    _no_task_ran(run)


# -- attach mode end to end ------------------------------------------------------------------
@pytest.mark.desktop
def test_attach_run_sends_the_api_key_and_never_writes_it(tmp_path: Path, reference_pair) -> None:
    a, b = reference_pair
    judge_key = "jk-holo-test-" + uuid.uuid4().hex  # on the command line, never used
    run = run_suite(
        tmp_path,
        "att",
        "--task-list",
        str(_one_task_file(tmp_path)),
        "-n0",
        "--base-url",
        a.url,
        "--base-url",
        b.url,
        "--api-key",
        SECRET,
        f"--judge-api-key={judge_key}",
        "--live",
        "--watch",
        *FAST,
        *_cache(tmp_path),
    )
    assert run.rc == 0, run.output[-3000:]
    (result,) = run.results().values()
    assert result["outcome"] == "passed", result
    assert result["reference_policy"] is False
    assert result["versions"]["model"] == "holo-test"  # picked from /v1/models
    assert result["versions"]["endpoint"] == a.url  # worker 0 prefers the first endpoint
    assert result["artifact_dir"].startswith("holo-test/")
    # the endpoint refuses chat requests without the key (401): it answered, so the key was sent
    # b: only the image-budget check every endpoint gets before any task
    assert a.request_count >= 2 and b.request_count == 1
    assert "REFERENCE POLICY" not in run.output
    # no key in any file of the run (summary.json/csv, report, result, trajectory, replay,
    # watch page, logs) nor on the terminal
    written = {p.name for p in run.run_dir.rglob("*") if p.is_file()}
    assert {"summary.json", "summary.csv", "report.html", "result.json"} <= written, written
    for key in (SECRET, judge_key):
        assert _files_containing(tmp_path, key) == []
        assert key not in run.output
    # the resume command refers to the keys' environment twins instead
    resume = run.summary["run"]["resume_command"]
    assert '--api-key "$HOLO_API_KEY"' in resume, resume
    assert '--judge-api-key "$HOLO_JUDGE_API_KEY"' in resume, resume


@pytest.mark.desktop
def test_attach_run_from_environment_variables(tmp_path: Path, reference_pair) -> None:
    a, b = reference_pair
    run = run_suite(
        tmp_path,
        "attenv",
        "--task-list",
        str(_one_task_file(tmp_path)),
        "-n0",
        "--model",
        "holo-test",
        *FAST,
        *_cache(tmp_path),
        env={"HOLO_BASE_URLS": f"{b.url},{a.url}", "HOLO_API_KEY": SECRET},
    )
    assert run.rc == 0, run.output[-3000:]
    (result,) = run.results().values()
    assert result["outcome"] == "passed", result
    assert result["versions"]["endpoint"] == b.url
    assert b.request_count >= 2 and a.request_count == 1  # a: the image-budget check
    assert _files_containing(tmp_path, SECRET) == []


# -- serve mode with the vllm test double ----------------------------------------------------
def _fake_env(records: Path, **extra: str) -> dict[str, str]:
    records.mkdir(parents=True, exist_ok=True)
    return {
        "PATH": f"{FAKE_VLLM_DIR}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOLO_SERVE_DEVICE": "gpu",  # the double stands in for GPU servers
        "FAKE_VLLM_PYTHON": sys.executable,
        "FAKE_VLLM_RECORD_DIR": str(records),
        **extra,
    }


def _launches(records: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(records.glob("launch-*.json"))]


def _flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


def test_vllm_servers_start_and_close_with_the_test_double(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = tmp_path / "records"
    for key, value in _fake_env(records).items():
        monkeypatch.setenv(key, value)
    servers = VllmServers(
        "/models/holo-fake",
        ["0"],
        image_budget=5,
        serve_args=["--max-num-seqs 4"],
        log_dir=tmp_path / "logs",
        ready_timeout=60,
    )
    try:
        (ep,) = servers.start()
    finally:
        pids = [p.pid for p in servers.procs]
        servers.close()
    assert ep.kind == "serve" and ep.model == "/models/holo-fake"
    (launch,) = _launches(records)
    assert json.loads(_flag(launch["argv"], "--limit-mm-per-prompt"))["image"] >= 5
    assert _flag(launch["argv"], "--max-num-seqs") == "4"
    assert not any(_alive(pid) for pid in pids)
    assert "serving at" in (tmp_path / "logs" / "vllm-gpu0.log").read_text()


def test_vllm_that_never_answers_is_a_configuration_error_naming_the_last_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server process that stays up but never serves /v1/models (a TEST DOUBLE ``vllm`` that
    only sleeps: a real one needs a GPU): the wait ends at ``ready_timeout`` and says why."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "vllm").write_text("#!/bin/sh\nexec sleep 120\n")
    (bin_dir / "vllm").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    servers = VllmServers(
        "/models/holo-fake",
        ["0"],
        image_budget=3,
        serve_args=[],
        log_dir=tmp_path / "logs",
        ready_timeout=1.5,
    )
    try:
        with pytest.raises(ConfigurationError) as info:
            servers.start()
    finally:
        servers.close()
    message = str(info.value)
    assert "vllm serve on GPU 0 not ready after 2 s" in message, message
    assert "/v1/models; last: " in message and "ConnectError" in message, message
    assert servers.procs == []


def test_vllm_that_exits_at_once_is_a_configuration_error_naming_its_log(tmp_path: Path) -> None:
    env = _fake_env(tmp_path / "records", FAKE_VLLM_MODE="exit")
    run = run_suite(
        tmp_path, "dies", "--serve", "/models/holo-fake", *_cache(tmp_path), timeout=120, env=env
    )
    assert run.rc not in (0, 1), run.output[-2000:]
    log = run.run_dir / "logs" / "vllm-gpu0.log"
    assert "exited with code 3" in run.output and str(log) in run.output, run.output[-2000:]
    assert "simulated start failure" in log.read_text()
    _no_task_ran(run)


@pytest.mark.desktop
def test_serve_launches_one_server_per_gpu_on_the_controller(tmp_path: Path) -> None:
    records = tmp_path / "records"
    tag = uuid.uuid4().hex
    run = run_suite(
        tmp_path,
        "srv",
        "--serve",
        "/models/holo-fake",
        "--gpus",
        "0,1",
        "--image-budget",
        "4",
        "--task-list",
        str(_one_task_file(tmp_path)),
        "-n",
        "2",
        *FAST,
        *_cache(tmp_path),
        env={**_fake_env(records), "HOLO_TEST_TAG": tag},
    )
    assert run.rc == 0, run.output[-3000:]
    (result,) = run.results().values()
    assert result["outcome"] == "passed", result
    assert result["versions"]["model"] == "/models/holo-fake"
    launches = _launches(records)
    assert len(launches) == 2, launches  # the controller launches; xdist workers do not
    assert sorted(x["cuda_visible_devices"] for x in launches) == ["0", "1"]
    ports = {int(_flag(x["argv"], "--port")) for x in launches}
    assert len(ports) == 2
    assert result["versions"]["endpoint"] in {f"http://127.0.0.1:{p}/v1" for p in ports}
    for x in launches:
        argv = x["argv"]
        assert argv[:2] == ["serve", "/models/holo-fake"]
        assert _flag(argv, "--reasoning-parser") == "qwen3"
        assert json.loads(_flag(argv, "--limit-mm-per-prompt"))["image"] >= 4
        assert int(_flag(argv, "--max-model-len")) > 0
        assert "--enable-prefix-caching" in argv
        assert _flag(argv, "--chat-template-content-format") == "openai"
    logs = sorted(p.name for p in (run.run_dir / "logs").glob("vllm-*.log"))
    assert logs == ["vllm-gpu0.log", "vllm-gpu1.log"]
    assert not any(_alive(x["pid"]) for x in launches)
    assert not [c for c in tagged_processes(tag) if "fake_vllm" in c]


@pytest.mark.desktop
def test_sigint_of_a_serve_run_leaves_no_vllm_process(tmp_path: Path) -> None:
    records = tmp_path / "records"
    tag = uuid.uuid4().hex
    env = {**_fake_env(records, FAKE_VLLM_FAULTS="delay=3"), "HOLO_TEST_TAG": tag}
    child = start_suite(
        tmp_path,
        "srvint",
        "--serve",
        "/models/holo-fake",
        "--gpus",
        "0,1",
        "--task-list",
        str(_one_task_file(tmp_path)),
        "-n",
        "2",
        *FAST,
        *_cache(tmp_path),
        env=env,
        log=tmp_path / "child.log",
    )
    try:
        wait_for(
            lambda: list((tmp_path / "srvint").rglob("step_000.*")),
            "the first step against the served model",
            180,
        )
        assert len(_launches(records)) == 2
        kill_group(child, signal.SIGINT)  # Ctrl-C reaches the whole foreground group
        child.wait(timeout=120)
    finally:
        kill_group(child)
    pids = [x["pid"] for x in _launches(records)]
    try:
        wait_for(lambda: not any(_alive(p) for p in pids), "the vllm servers to end", 30)
        wait_for(
            lambda: not tagged_processes(tag), "every process of the run to end", 30, interval=0.2
        )
    except AssertionError:
        raise AssertionError(
            f"left behind: {tagged_processes(tag)}\n" + (tmp_path / "child.log").read_text()[-3000:]
        ) from None
