"""Credentials in URLs are removed before anything is written or printed (issue 11, item 7).

``--base-url http://user:PASSWORD@host/v1`` must still authenticate (basic auth) yet leave the
password out of result.json, agent.json, every other file and the terminal.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from computer_env.errors import ModelEndpointError
from fixtures.cases.records.redact import redact, redact_obj, strip_url_credentials
from fixtures.run.run_start import builtin_solutions_by_instruction
from holo_agent import HoloComputerAgent
from holo_agent.client import ChatClient, split_credentials
from holo_agent.reference import DONE_STEP, ReferenceEndpoint
from tests.harness.helpers.memenv import MemoryEnv
from tests.harness.helpers.suite import first_smoke_tasks, run_suite, task_list_file

PASSWORD = "pw-" + uuid.uuid4().hex


def test_any_url_user_info_is_redacted_registered_or_not() -> None:
    text = f"endpoint http://holo:{PASSWORD}@gpu1:8000/v1 failed; proxy https://u:p@proxy:3128"
    out = redact(text)
    assert PASSWORD not in out and "u:p@" not in out
    assert "http://[REDACTED]@gpu1:8000/v1" in out and "https://[REDACTED]@proxy:3128" in out
    assert redact_obj({"endpoint": f"http://a:{PASSWORD}@h/v1"}) == {
        "endpoint": "http://[REDACTED]@h/v1"
    }
    assert (
        strip_url_credentials("mail me: a@b.c, see http://h/x?u=a@b")
        == "mail me: a@b.c, see http://h/x?u=a@b"
    )


def test_chat_client_shows_the_url_without_credentials_and_sends_them() -> None:
    assert split_credentials(f"http://holo:{PASSWORD}@h:8000/v1") == (
        "http://h:8000/v1",
        ("holo", PASSWORD),
    )
    assert split_credentials("http://h:8000/v1") == ("http://h:8000/v1", None)
    client = ChatClient(f"http://holo:{PASSWORD}@h:8000/v1")
    try:
        assert PASSWORD not in client.base_url and PASSWORD not in repr(client)
        assert client._http.auth is not None  # noqa: SLF001 - the credentials go into requests
    finally:
        client.close()


def test_url_credentials_go_out_as_basic_auth_and_nowhere_else() -> None:
    """A real request: the endpoint receives ``Basic holo:PASSWORD`` (not a Bearer key); the
    agent's URL, settings and errors leave the password out."""
    with ReferenceEndpoint(
        policy=lambda instruction, index, request: DONE_STEP, faults="status=500:100"
    ) as ep:
        url = ep.url.replace("http://", f"http://holo:{PASSWORD}@", 1)
        agent = HoloComputerAgent(url, "reference-policy", max_retries=1, backoff_base=0.01)
        with pytest.raises(ModelEndpointError) as info:
            agent.run(MemoryEnv("Say done."), max_steps=1)
        ep.set_faults(None)
        assert agent.run(MemoryEnv("Say done."), max_steps=1).end == "answered"
        agent.close()
        sent = {h.get("authorization") for h in ep.headers_seen}
        shown = ep.url
    basic = "Basic " + base64.b64encode(f"holo:{PASSWORD}".encode()).decode()
    assert sent == {basic}
    assert PASSWORD not in str(info.value) and shown in str(info.value)
    assert PASSWORD not in repr(agent) and PASSWORD not in str(agent.settings())


@pytest.fixture
def endpoint() -> Iterator[ReferenceEndpoint]:
    ep = ReferenceEndpoint(builtin_solutions_by_instruction(), model_name="holo-test")
    ep.start()
    yield ep
    ep.stop()


@pytest.mark.desktop
def test_a_run_with_credentials_in_the_base_url_writes_and_prints_none(
    tmp_path: Path, endpoint: ReferenceEndpoint
) -> None:
    url = endpoint.url.replace("http://", f"http://holo:{PASSWORD}@", 1)
    tasks = task_list_file(tmp_path, first_smoke_tasks(1, exclude_domains=("chrome",)))
    run = run_suite(
        tmp_path,
        "cred",
        "--task-list",
        str(tasks),
        "-n0",
        "--base-url",
        url,
        "-v",
        "-o",
        f"cache_dir={tmp_path / 'pytest-cache'}",
    )  # -v: the header too
    assert run.rc == 0, run.output[-3000:]
    (result,) = run.results().values()
    assert result["outcome"] == "passed", result
    assert endpoint.request_count >= 2  # the run really talked to the endpoint
    leaked = [p for p in tmp_path.rglob("*") if p.is_file() and PASSWORD.encode() in p.read_bytes()]
    assert leaked == []
    assert PASSWORD not in run.output
    shown = endpoint.url.replace("http://", "http://[REDACTED]@", 1)
    assert f"model {shown}" in run.output, run.output[:2000]  # the header
