"""The harness card (``fixtures.report.card``): built from a run's real settings (the suite's own
option parser), the built-in task files on disk and hand-made results; the OSWorld-Verified
verdict; the server probe against a real HTTP server on loopback (a stand-in for vLLM's
``/version`` and ``/v1/models``: the real vLLM is tests/harness/model/test_vllm_real.py); no
secret in a card; every field documented. Fast tier: no desktop."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from computer_env.osworld.builtin import BUILTIN_ROOT
from fixtures.cases.models.endpoints import Endpoint
from fixtures.cases.models.vllm_serve import LaunchedServer, shaping_environment
from fixtures.cases.records.redact import register_secret, register_url_credentials
from fixtures.cases.records.results import TaskResult, Versions
from fixtures.report.card import (
    HarnessCard,
    RunInputs,
    build_card,
    card_fields,
    card_json,
    card_lines,
    card_reference,
    mask_command,
    osworld_verified,
    read_card,
    server_cards,
    write_card,
)
from fixtures.report.summary import format_summary, summarize
from fixtures.run.config.profiles import PROFILES
from tests.harness.helpers.parsed_settings import settings_of

TASKS = ("os/os-create-report-file", "libreoffice_calc/calc-average-score")


def result(case_id: str, *, outcome: str = "passed", **versions: Any) -> TaskResult:
    domain, task_id = case_id.split("/")
    score = None if outcome in ("unscored", "skipped") else float(outcome == "passed")
    return TaskResult(
        benchmark="osworld",
        case_id=case_id,
        domain=domain,
        task_id=task_id,
        outcome=outcome,  # type: ignore[arg-type]
        score=score,
        versions=Versions(**{"model": "holo", **versions}),
    )


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- the card of a run -------------------------------------------------------------------------
def test_the_card_holds_the_options_given_and_what_each_case_recorded_by_value() -> None:
    """Options come from the real parser; per-case values (two endpoints, two desktop kinds)
    are kept with their counts, never flattened; each task file is hashed from disk."""
    s = settings_of(
        "--temperature",
        "0.3",
        "--max-steps",
        "15",
        "--image-budget",
        "2",
        "--reasoning-effort",
        "high",
        "--prompt",
        "terse-v1",
        "--infra-reruns",
        "1",
        "--samples",
        "2",
        "--screen",
        "1280x720",
    )
    results = [
        result(TASKS[0], endpoint="http://gpu1:8000/v1", desktop="embedded desktop"),
        result(
            TASKS[1], outcome="failed", endpoint="http://gpu2:8000/v1", desktop="embedded desktop"
        ),
        result(TASKS[1], outcome="unscored", endpoint="http://gpu2:8000/v1", desktop="OSWorld VM"),
    ]
    card = build_card(RunInputs(s, "run-a"), results, complete=True)
    sm = card.sampling
    assert (sm.temperature, sm.max_steps, sm.image_budget, sm.reasoning_effort, sm.prompt) == (
        0.3,
        15,
        2,
        "high",
        "terse-v1",
    )
    assert sm.prompt_sha256 is not None and len(sm.prompt_sha256) == 64
    assert sm.reasks == 2 and sm.max_tokens is None and sm.score_by == "rule"
    assert card.model.plays == "reference"  # neither --base-url nor --serve
    assert card.model.cases_by_endpoint == {"http://gpu1:8000/v1": 1, "http://gpu2:8000/v1": 2}
    assert card.environment.desktop == {"OSWorld VM": 1, "embedded desktop": 2}
    assert card.environment.screen == [1280, 720]
    assert (card.policy.infra_reruns, card.policy.samples) == (1, 2)
    t = card.tasks
    assert (t.source, t.task_list, t.tasks, t.scored_tasks, t.cases) == (
        "built-in",
        "test_all",
        2,
        2,
        3,
    )
    files = {case: sha256(BUILTIN_ROOT / "examples" / f"{case}.json") for case in TASKS}
    assert t.files == {case: sha[:16] for case, sha in sorted(files.items())}
    lines = "".join(f"{case} {files[case]}\n" for case in sorted(files))
    assert t.content_sha256 == hashlib.sha256(lines.encode()).hexdigest()
    assert t.osworld_code and t.evaluators_sha256 and len(t.evaluators_sha256) == 64
    assert card.versions.harness_commit and card.versions.packages["pytest"]
    assert card.environment.host.cores and card.environment.host.memory_bytes
    assert HarnessCard.model_validate(card_json(card)) == card  # the JSON reads back the same


def test_card_json_and_summary_json_carry_the_same_card(tmp_path: Path) -> None:
    s = settings_of()
    card = build_card(RunInputs(s, "r"), [result(TASKS[0])], complete=True)
    write_card(tmp_path, card)
    summary = summarize([result(TASKS[0])], reference_policy=True).model_copy(update={"card": card})
    (tmp_path / "summary.json").write_text(summary.model_dump_json())
    on_disk = json.loads((tmp_path / "card.json").read_text())
    assert on_disk == json.loads((tmp_path / "summary.json").read_text())["card"]
    assert read_card(tmp_path) == card
    (tmp_path / "card.json").unlink()  # an older layout: the summary's card
    assert read_card(tmp_path) == card
    text = format_summary(summary)  # the summary's first lines say how the scores were made
    assert "card: sampling temperature 0.8" in text and "OSWorld-Verified: NOT comparable" in text
    assert text.index("card: model") < text.index("mean score")


def test_no_key_token_or_url_credential_is_ever_in_a_card(tmp_path: Path) -> None:
    """The API keys, a desktop URL's token, URL credentials of the endpoint, proxy and judge,
    a serve command's --api-key and a VLLM_API_KEY of the server's environment: none of them
    reaches card.json."""
    secrets = [
        "sk-card-secret-0123456789",
        "judge-secret-0123456789",
        "vmtoken-0123456789",
        "proxypass-0123456789",
        "urlpass-0123456789",
        "servekey-0123456789",
        "envkey-0123456789",
    ]
    s = settings_of(
        "--api-key",
        secrets[0],
        "--judge-api-key",
        secrets[1],
        "--judge-url",
        f"http://judge:{secrets[4]}@judge.example:9000/v1",
        "--vm-url",
        f"http://10.0.0.5:5000#{secrets[2]}",
        "--provider",
        "remote",
        "--vm-proxy",
        f"http://user:{secrets[3]}@127.0.0.1:3128",
    )
    register_secret(s.endpoints.api_key)  # what the plugin registers at configure
    register_secret(s.protocols.judge_api_key)
    register_secret(secrets[2])
    for url in (s.network.vm_proxy, s.protocols.judge_url):
        register_url_credentials(url)
    cmd = ["vllm", "serve", "/m", "--api-key", secrets[5], "--hf-token=" + secrets[5]]
    launched = LaunchedServer(
        url="http://127.0.0.1:1/v1",
        name="cpu",
        command=tuple(cmd),
        environment=shaping_environment(
            {"VLLM_API_KEY": secrets[6], "VLLM_TARGET_DEVICE": "cpu", "HOME": "/root"}
        ),
    )
    endpoint = Endpoint(url=f"http://user:{secrets[4]}@127.0.0.1:1/v1", model="m", kind="serve")
    servers = server_cards([endpoint], api_key=secrets[0], launched=[launched], timeout=0.5)
    assert servers[0].command is not None and "--api-key" in servers[0].command
    assert servers[0].environment["VLLM_TARGET_DEVICE"] == "cpu"
    assert "HOME" not in servers[0].environment
    card = build_card(
        RunInputs(s, "r", tuple(servers)), [result(TASKS[0], endpoint=endpoint.url)], complete=True
    )
    write_card(tmp_path, card)
    text = (tmp_path / "card.json").read_text()
    for secret in secrets:
        assert secret not in text, secret
    assert "127.0.0.1:3128" in text and "judge.example:9000" in text  # the rest is kept


def test_mask_command_hides_the_values_of_key_and_token_flags() -> None:
    assert mask_command(
        [
            "vllm",
            "serve",
            "m",
            "--api-key",
            "abc",
            "--port",
            "8000",
            "--hf-token=xyz",
            "--max-model-len",
            "4096",
        ]
    ) == [
        "vllm",
        "serve",
        "m",
        "--api-key",
        "[REDACTED]",
        "--port",
        "8000",
        "--hf-token=[REDACTED]",
        "--max-model-len",
        "4096",
    ]


# -- the server probe, against a real HTTP server -----------------------------------------------
@pytest.fixture
def vllm_like() -> Iterator[tuple[str, list[dict[str, str]]]]:
    """An HTTP server answering vLLM's /version and /v1/models (as vLLM words them); it keeps
    the headers of every request."""
    seen: list[dict[str, str]] = []
    routes = {
        "/version": {"version": "0.11.2"},
        "/v1/models": {
            "object": "list",
            "data": [
                {"id": "other", "object": "model", "max_model_len": 4096, "root": "/x"},
                {
                    "id": "holo",
                    "object": "model",
                    "max_model_len": 65537,
                    "root": "/models/holo",
                    "owned_by": "vllm",
                },
            ],
        },
    }

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(dict(self.headers))
            body = routes.get(self.path)
            data = json.dumps(body).encode() if body is not None else b"{}"
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen
    finally:
        server.shutdown()
        server.server_close()


def test_the_probe_reads_version_and_context_of_the_served_model(
    vllm_like: tuple[str, list[dict[str, str]]],
) -> None:
    url, seen = vllm_like
    creds = url.replace("http://", "http://u:probe-pass-0123@")
    (card,) = server_cards(
        [Endpoint(url=creds, model="holo", kind="attach")], api_key="probe-key-0123456789"
    )
    assert (card.version, card.max_model_len, card.root) == ("0.11.2", 65537, "/models/holo")
    assert card.url == url and card.command is None  # attached: no command, no credentials
    assert (
        all(h.get("Authorization", "").startswith(("Bearer probe-key", "Basic ")) for h in seen)
        and len(seen) == 2
    )


def test_a_server_that_says_nothing_leaves_the_fields_empty() -> None:
    (card,) = server_cards(
        [Endpoint(url="http://127.0.0.1:9/v1", model="m", kind="attach")], timeout=0.5
    )  # nothing listens on port 9 (discard)
    assert (card.version, card.max_model_len, card.root) == (None, None, None)


# -- OSWorld-Verified ------------------------------------------------------------------------
def _verified_card(
    tmp_path: Path, *args: str, desktop: str = "OSWorld VM", n: int = 369
) -> HarnessCard:
    """A card of a run on OSWorld's task files with a model, ``n`` scored tasks."""
    s = settings_of("--osworld-root", str(tmp_path), "--base-url", "http://gpu:8000/v1", *args)
    card = build_card(RunInputs(s, "v"), [result(TASKS[0], desktop=desktop)], complete=True)
    return card.model_copy(
        update={
            "tasks": card.tasks.model_copy(
                update={"tasks": n, "scored_tasks": n, "source": "OSWorld task files"}
            )
        }
    )


@pytest.mark.parametrize("budget", [15, 50, 100])
def test_a_run_made_as_osworld_verified_is_comparable_at_its_budget(
    tmp_path: Path, budget: int
) -> None:
    card = _verified_card(tmp_path, "--profile", f"osworld-verified-{budget}")
    assert card.sampling.max_steps == budget and card.tasks.task_list == "test_all"
    v = osworld_verified(card)
    assert v is not None and v.comparable and v.budget == budget, v
    assert v.line == f"OSWorld-Verified: comparable with the published {budget}-step numbers"


def test_every_reason_a_run_is_not_osworld_verified_is_named(tmp_path: Path) -> None:
    card = _verified_card(
        tmp_path,
        "--max-steps",
        "30",
        "--screen",
        "1280x720",
        "--judge-url",
        "reference",
        "--score-by",
        "judge",
        "--domain",
        "os",
        desktop="embedded desktop",
        n=12,
    )
    v = osworld_verified(card)
    assert v is not None and not v.comparable and v.budget is None
    text = "; ".join(v.reasons)
    for words in (
        "step budget 30",
        "screen 1280x720",
        "judge model's verdicts",
        "embedded desktop",
        "task subset: 12 of OSWorld-Verified's 369",
        "only the domain(s) os",
    ):
        assert words in text, (words, text)
    builtin = build_card(RunInputs(settings_of(), "b"), [result(TASKS[0])], complete=True)
    reasons = osworld_verified(builtin).reasons  # type: ignore[union-attr]
    assert any("reference endpoint played" in r for r in reasons)
    assert any("built-in tasks, not OSWorld's task files" in r for r in reasons)
    assert osworld_verified(builtin).line in card_lines(builtin)  # type: ignore[union-attr]


def test_osworld_verified_profiles_set_only_what_it_fixes() -> None:
    s = settings_of("--profile", "osworld-verified-50")
    assert (s.agent.max_steps, s.tasks.task_list, s.desktops.screen) == (
        50,
        "test_all",
        (1920, 1080),
    )
    assert s.agent.image_budget == 3  # the agent's own screenshot history is left alone
    assert s.agent.image_budget == settings_of().agent.image_budget
    assert s.protocols.profile is not None and s.protocols.profile.name == "osworld-verified-50"
    assert {"osworld-verified-15", "osworld-verified-50", "osworld-verified-100"} <= set(PROFILES)


def test_a_game_only_run_has_no_osworld_verified_line() -> None:
    game = TaskResult(
        benchmark="realtimegym",
        case_id="freeway/E/seed0",
        domain="freeway",
        group="freeway/E",
        task_id="seed0",
        outcome="passed",
        score=1.0,
    )
    card = build_card(RunInputs(settings_of(), "g"), [game], complete=True)
    assert card.osworld_verified is None and card.tasks.games is not None
    assert card.tasks.games.pacing == "turn" and card.tasks.content_sha256 is None


# -- the reference ---------------------------------------------------------------------------
def test_every_card_field_is_documented_and_in_the_generated_reference() -> None:
    reference = card_reference()
    fields = list(card_fields())
    assert len(fields) > 60
    for path, _kind, _impact, description in fields:
        assert description.strip(), f"{path}: no description"
        assert f"| `{path}` |" in reference
    impacts = {path: impact for path, _, impact, _ in fields}
    assert impacts["sampling.temperature"] == "comparability"
    assert impacts["tasks.content_sha256"] == "comparability"
    assert impacts["model.servers[].version"] == "score"
    assert impacts["environment.host.cores"] == "info"
