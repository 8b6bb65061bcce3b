"""The reference endpoint keys solutions by task id, not by instruction text: the agent sends
its task's id as the request's ``user`` (OpenAI's end-user id, which model servers ignore).
Before, two synthesized tasks with the same instruction both played the last one's solution."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest

from holo_agent.reference import ReferenceEndpoint, check_request, solution_key
from tests.harness.helpers.reference_requests import TASK, good_body
from tests.harness.helpers.suite import run_suite


def _say(word: str) -> list[dict[str, Any]]:
    return [
        {
            "note": None,
            "thought": f"say {word}",
            "tool_call": {"tool_name": "answer", "content": word},
        }
    ]


def _answer(url: str, body: dict[str, Any]) -> str:
    r = httpx.post(f"{url}/chat/completions", json=body, timeout=10)
    assert r.status_code == 200, r.text
    return json.loads(r.json()["choices"][0]["message"]["content"])["tool_call"]["content"]


def test_the_task_id_picks_the_solution_and_the_instruction_is_the_fallback() -> None:
    solutions = {
        TASK: _say("by-instruction"),
        solution_key("os/a"): _say("a"),
        solution_key("os/b"): _say("b"),
    }
    with ReferenceEndpoint(solutions) as ep:
        for user, word in (
            ("os/a", "a"),
            ("os/b", "b"),
            (None, "by-instruction"),
            ("os/unknown", "by-instruction"),
        ):
            body = good_body()
            if user is not None:
                body["user"] = user
            assert check_request(body) is None  # the id breaks no convention
            assert _answer(ep.url, body) == word, user


def _task(task_id: str, word: str) -> dict[str, Any]:
    return {
        "task_id": task_id,
        "domain": "os",
        "task_instruction": "Write the word of your task into ~/answer.txt.",
        "verifier_code": (
            "import os\n\ndef verify():\n    p = os.path.expanduser("
            f"'~/answer.txt')\n    return os.path.isfile(p) and "
            f"open(p).read().strip() == {word!r}\n"
        ),
        "initial_state": {"files": {"~/notes.txt": "-\n"}, "setup": []},
        "reference_solution": [
            {
                "note": None,
                "thought": "Write it.",
                "tool_call": {
                    "tool_name": "run_code",
                    "language": "bash",
                    "code": f"echo {word} > ~/answer.txt",
                },
            },
            {
                "note": None,
                "thought": "Done.",
                "tool_call": {"tool_name": "answer", "content": "DONE"},
            },
        ],
    }


@pytest.mark.desktop
@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("bwrap"),
    reason="the local sandbox needs root and bubblewrap",
)
def test_two_synthesized_tasks_with_one_instruction_each_play_their_own(tmp_path: Path) -> None:
    folder = tmp_path / "synth"
    folder.mkdir()
    for task_id, word in (("same-text-alpha", "alpha"), ("same-text-beta", "beta")):
        (folder / f"{task_id}.json").write_text(json.dumps(_task(task_id, word)))
    run = run_suite(
        tmp_path / "results",
        "same",
        "--synthetic-dir",
        str(folder),
        "--code-actions",
        "-n",
        "0",
        target="tests/synthetic",
    )
    results = run.results()
    assert set(results) == {"os/same-text-alpha", "os/same-text-beta"}, run.output[-3000:]
    for case, r in results.items():
        assert (r["outcome"], r["score"]) == ("passed", 1.0), (case, r["message"])
    assert run.rc == 0, run.output[-3000:]
