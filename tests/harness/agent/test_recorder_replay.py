"""Recorder files (also after a SIGKILLed run), the replay page (escaping, headless Chromium),
and that the API key is never written. Uses the real reference endpoint over HTTP.
"""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from computer_env import Click, Scroll
from computer_env.procs import set_pdeathsig
from holo_agent import HoloComputerAgent, Recorder, read_traj, render_replay
from holo_agent.reference import ReferenceEndpoint
from holo_agent.replay import REFERENCE_LABEL
from holo_agent.tools import AnswerTool, ClickTool, RunCodeTool, ScrollTool, WriteTool
from tests.harness.helpers.memenv import MemoryEnv
from tests.harness.helpers.polling import wait_for

TASK = "Rename the file <b>report</b> & save it."
ROOT = Path(__file__).resolve().parents[3]
KEY = "sk-live-DO-NOT-WRITE-4f2a9c"
EVIL_THOUGHT = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'


def s(tool_name: str, thought: str = "next", note: str | None = None, **args: Any) -> dict:
    return {"note": note, "thought": thought, "tool_call": {"tool_name": tool_name, **args}}


SOLUTION = [
    s(
        "click",
        thought=EVIL_THOUGHT,
        note="</div><script>window.__pwned = 3</script>",
        element="file",
        x=250,
        y=300,
    ),
    s("write", content='<img src=y onerror="window.__pwned=4">', press_enter=True),
    s("drag", from_x=100, from_y=100, to_x=600, to_y=700),
    s("scroll", direction="down", amount=3, x=500, y=500),
    s("hotkey", keys=["ctrl", "s"]),
    s("answer", content="renamed"),
]


def run_episode(
    task_dir: Path, *, mime: str = "image/png", faults: str | None = None
) -> tuple[ReferenceEndpoint, Any]:
    with ReferenceEndpoint({TASK: SOLUTION}, faults=faults, require_api_key=KEY) as ep:
        agent = HoloComputerAgent(
            ep.url, "reference-policy", api_key=KEY, backoff_base=0.01, recorder=Recorder(task_dir)
        )
        traj = agent.run(MemoryEnv(TASK, 1024, 640, mime=mime), max_steps=10)
    return ep, traj


def assert_no_key(folder: Path) -> None:
    for f in folder.rglob("*"):
        if f.is_file():
            assert KEY.encode() not in f.read_bytes(), f"API key written into {f.name}"


def test_recorder_writes_every_file(tmp_path: Path) -> None:
    ep, traj = run_episode(tmp_path, faults="schema=1")
    lines = [json.loads(x) for x in (tmp_path / "traj.jsonl").read_text().splitlines()]
    for line in lines:
        for key in (
            "time",
            "latency_s",
            "prompt_tokens",
            "completion_tokens",
            "note",
            "thought",
            "tool_call",
            "pixel",
            "tool_output",
            "screenshot",
            "error",
        ):
            assert key in line
        assert "reasoning" not in line  # kept apart, in reasoning.jsonl
    rows = read_traj(tmp_path)
    assert rows == traj.steps  # the file reads back as the records the agent made
    assert len(rows) == 7 and rows[0].error.startswith("malformed") and rows[0].call is None
    assert [r.index for r in rows] == list(range(7))
    assert rows[1].pixel == {"x": 256, "y": 192} and rows[1].tool_output == "applied click"
    assert rows[1].call == ClickTool(tool_name="click", element="file", x=250, y=300)
    assert rows[1].input_event == Click(x=256, y=192)
    assert isinstance(rows[2].call, WriteTool) and rows[2].call.press_enter
    assert rows[-1].call == AnswerTool(tool_name="answer", content="renamed")
    assert rows[-1].input_event is None and all(r.reasoning for r in rows)
    # the saved screenshots are the exact bytes sent
    sent = [
        p["image_url"]["url"]
        for p in ep.requests_seen[-1]["messages"][-1]["content"]
        if p.get("type") == "image_url"
    ]
    last_shot = tmp_path / rows[-1].screenshot
    assert base64.b64decode(sent[0].split(",", 1)[1]) == last_shot.read_bytes()
    prompt = (tmp_path / "system_prompt.txt").read_text()
    assert prompt == ep.requests_seen[0]["messages"][0]["content"]
    reasoning = [json.loads(x) for x in (tmp_path / "reasoning.jsonl").read_text().splitlines()]
    assert len(reasoning) == 7 and all(r["reasoning"] for r in reasoning)
    summary = json.loads((tmp_path / "trajectory.json").read_text())
    assert summary["end"] == "answered" and summary["totals"]["requests"] == 7
    assert json.loads((tmp_path / "agent.json").read_text())["instruction"] == TASK
    assert not list(tmp_path.glob(".*.tmp"))
    assert_no_key(tmp_path)


def test_read_traj_reads_older_and_odd_lines(tmp_path: Path) -> None:
    """Lines of older runs (fields missing), a tool this version does not know, a line that is
    no step record, and a killed run's half line: what can be read is read, typed where it can."""
    lines = [
        {
            "index": 0,
            "step": 0,
            "thought": "t",
            "latency_s": 0.1,  # no time (older runs)
            "tool_call": {"tool_name": "scroll", "direction": "down", "amount": 2},
            "event": {"kind": "scroll", "direction": "down", "amount": 2},
            "code": None,
        },
        {"thought": "u", "tool_call": {"tool_name": "teleport", "to": "mars"}},  # unknown tool
        {"index": "not a number"},
        {
            "index": 3,
            "step": 1,
            "time": 1.0,
            "latency_s": 0.2,
            "tool_call": {"tool_name": "run_code", "language": "bash", "code": "ls"},
            "code": {
                "language": "bash",
                "code": "ls",
                "output": "a",
                "exit_code": 0,
                "timed_out": False,
                "duration_s": 0.5,
                "truncated": False,
                "output_chars": 1,
            },
        },
    ]
    text = "".join(json.dumps(x) + "\n" for x in lines) + '{"index": 4, "thou'
    (tmp_path / "traj.jsonl").write_text(text)
    (tmp_path / "reasoning.jsonl").write_text(json.dumps({"index": 3, "reasoning": "r"}) + "\n")
    rows = read_traj(tmp_path / "traj.jsonl")
    assert [r.index for r in rows] == [0, 1, 3] and rows[0].time == 0.0
    assert rows[0].call == ScrollTool(tool_name="scroll", direction="down", amount=2)
    assert rows[0].input_event == Scroll(direction="down", amount=2) and rows[0].code_run is None
    assert rows[1].call is None and rows[1].tool_call == {"tool_name": "teleport", "to": "mars"}
    assert isinstance(rows[2].call, RunCodeTool) and rows[2].code_run is not None
    assert rows[2].code_run.exit_code == 0 and rows[2].reasoning == "r"
    assert read_traj(tmp_path / "missing") == []
    html = render_replay(tmp_path).read_text()  # and the page shows all three
    assert "teleport(to=&#34;mars&#34;)" in html and "code (bash) · exit code 0" in html


def test_screenshot_extension_follows_mime(tmp_path: Path) -> None:
    run_episode(tmp_path, mime="image/jpeg")
    assert (tmp_path / "step_000.jpg").exists() and not (tmp_path / "step_000.png").exists()
    assert Image.open(tmp_path / "step_000.jpg").format == "JPEG"


CHILD = """
import sys
from pathlib import Path
sys.path.insert(0, {root!r})
from holo_agent import HoloComputerAgent, Recorder
from tests.harness.helpers.memenv import MemoryEnv
agent = HoloComputerAgent({url!r}, "reference-policy", api_key={key!r},
                          recorder=Recorder(Path({task_dir!r})))
agent.run(MemoryEnv({task!r}, 800, 600), max_steps=200)
"""


def test_files_parse_after_a_killed_run(tmp_path: Path) -> None:
    steps = [s("wait", thought=f"waiting {i}", seconds=0) for i in range(200)]
    with ReferenceEndpoint({TASK: steps}, faults="delay=0.1", require_api_key=KEY) as ep:
        code = CHILD.format(root=str(ROOT), url=ep.url, key=KEY, task_dir=str(tmp_path), task=TASK)
        proc = subprocess.Popen(
            [sys.executable, "-c", code],
            start_new_session=True,
            preexec_fn=set_pdeathsig,
            stderr=subprocess.PIPE,
        )
        try:

            def four_steps() -> bool:
                assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
                return len(read_traj(tmp_path)) >= 4

            wait_for(four_steps, "4 recorded steps", 60, interval=0.05)
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    lines = (tmp_path / "traj.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines]  # every line complete and valid
    assert len(rows) >= 4 and [r["index"] for r in rows] == list(range(len(rows)))
    for row in rows:
        assert row["thought"].startswith("waiting") and (tmp_path / row["screenshot"]).exists()
        Image.open(tmp_path / row["screenshot"]).verify()
    assert not (tmp_path / "trajectory.json").exists()
    page = render_replay(tmp_path)  # a partial run still renders
    assert "waiting 0" in page.read_text()
    assert_no_key(tmp_path)


def _write_result(task_dir: Path, **extra: Any) -> None:
    result = {
        "instruction": TASK,
        "outcome": "failed",
        "score": 0.0,
        "evaluator": {"metric": "compare_text", "expected": "<i>x</i>", "got": "y"},
        "infra_reason": None,
        "reference_policy": True,
        **extra,
    }
    (task_dir / "result.json").write_text(json.dumps(result))


def test_replay_escapes_model_text_and_renders_result(tmp_path: Path) -> None:
    run_episode(tmp_path)
    _write_result(tmp_path)
    html = render_replay(tmp_path).read_text()
    assert html.count("<script>") == 1  # only the page's own navigation script
    assert not re.search(r"<[a-z][^>]*\sonerror\s*=", html, re.I)  # no live handler attribute
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in html
    assert "Rename the file &lt;b&gt;report&lt;/b&gt; &amp; save it." in html
    assert REFERENCE_LABEL in html and "compare_text" in html and "&lt;i&gt;x&lt;/i&gt;" in html
    assert 'src="step_000.png"' in html and "data:image" not in html
    assert "<details" in html and "Reference policy" in html
    assert_no_key(tmp_path)


def test_replay_tolerates_missing_result_and_self_contained(tmp_path: Path) -> None:
    run_episode(tmp_path)
    html = render_replay(tmp_path, self_contained=True).read_text()
    assert REFERENCE_LABEL not in html and "outcome:" not in html
    srcs = html.split('src="')[1:]
    assert srcs and all(x.startswith("data:image/png;base64,") for x in srcs)


def test_replay_cli(tmp_path: Path) -> None:
    run_episode(tmp_path)
    out = subprocess.run(
        [sys.executable, "-m", "holo_agent.replay", str(tmp_path), "--self-contained"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert Path(out.stdout.strip()) == tmp_path / "replay.html"
    assert "data:image/png;base64," in (tmp_path / "replay.html").read_text()


CHROMIUM = Path("/usr/bin/chromium")


@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs /usr/bin/chromium")
def test_replay_in_headless_chromium(tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    run_episode(tmp_path, faults="list_coords=1")
    _write_result(tmp_path)
    page_path = render_replay(tmp_path)
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM),
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(page_path.as_uri())
            page.wait_for_load_state("load")
            assert page.evaluate("window.__pwned") is None
            assert page.locator("main .step").count() == 7
            assert page.locator(".filmstrip .thumb").count() == 7
            assert page.locator(".refpolicy").inner_text() == REFERENCE_LABEL
            loaded = (
                "sel => Array.from(document.querySelectorAll(sel))"
                ".every(i => i.complete && i.naturalWidth > 0)"
            )
            page.wait_for_function(loaded, arg=".thumb img, #step-0 img", timeout=10_000)
            assert page.locator(".shot svg circle").count() >= 2  # click and scroll markers
            assert page.locator(".shot svg line[marker-end]").count() >= 2  # drag and scroll
            assert page.locator("body").get_attribute("data-current") == "0"
            page.keyboard.press("j")
            page.keyboard.press("j")
            assert page.locator("body").get_attribute("data-current") == "2"
            assert "active" in (page.locator("#step-2").get_attribute("class") or "")
            page.wait_for_function(loaded, arg="#step-2 img", timeout=10_000)  # lazy, now in view
            page.keyboard.press("k")
            assert page.locator("body").get_attribute("data-current") == "1"
            page.keyboard.press("ArrowDown")
            assert page.locator("body").get_attribute("data-current") == "2"
            page.locator(".thumb").nth(5).click()
            assert page.locator("body").get_attribute("data-current") == "5"
            page.locator("#step-1 details summary").first.click()
            assert page.locator("#step-1 details").first.get_attribute("open") is not None
            page.keyboard.press("Home")
            shot = tmp_path / "replay_screenshot.png"
            page.screenshot(path=str(shot), full_page=False)
            assert Image.open(shot).size == (1400, 900)
            assert page.evaluate("window.__pwned") is None and not errors
        finally:
            browser.close()
    out_dir = os.environ.get("HOLO_REPLAY_SCREENSHOT_DIR")
    if out_dir:  # keep the screenshot for a human look
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        (Path(out_dir) / "replay_screenshot.png").write_bytes(shot.read_bytes())


def test_endpoint_failure_mid_run_is_recorded(tmp_path: Path) -> None:
    from computer_env.errors import ModelEndpointError

    with ReferenceEndpoint({TASK: SOLUTION}, require_api_key=KEY) as ep:
        seen: list[int] = []

        def on_step(rec: Any) -> None:
            seen.append(rec.index)
            if rec.index == 1:
                ep.set_faults("status=500:10")

        agent = HoloComputerAgent(
            ep.url,
            "reference-policy",
            api_key=KEY,
            max_retries=1,
            backoff_base=0.01,
            recorder=Recorder(tmp_path),
            on_step=on_step,
        )
        with pytest.raises(ModelEndpointError) as info:
            agent.run(MemoryEnv(TASK, 1024, 640), max_steps=10)
    assert seen == [0, 1]  # the caller saw both turns before the failure (on_step)
    assert not hasattr(info.value, "trajectory")  # nothing rides on the exception
    summary = json.loads((tmp_path / "trajectory.json").read_text())
    assert summary["end"] is None and "ModelEndpointError" in summary["error"]
    assert len(read_traj(tmp_path)) == 2
    assert "step_002.png" in {p.name for p in tmp_path.iterdir()}
    assert_no_key(tmp_path)
