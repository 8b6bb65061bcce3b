"""A setup step that depends on what an earlier step started (a window to activate, an app to
type into, a file to open) gets the time OSWorld's VM gives it: an audit of every real task
config in shared/osworld, and real local desktops (sandboxed Xvfb + guest server) where the
window comes up seconds after the step that started it."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from computer_env.desktop.client import DesktopClient
from computer_env.errors import SetupError
from computer_env.osworld import TaskContext, default_vars
from computer_env.osworld.catalog.tasks import SetupStep
from computer_env.osworld.prepare.setup import (
    BACKGROUND_PROGRAMS,
    GUI_PROGRAMS,
    launched_program,
    sends_input,
    step_wait,
)
from computer_env.osworld.prepare.setup import _steps as setup_steps
from computer_env.osworld.prepare.setup import run_setup_in_process as run_setup
from tests.harness.helpers.localdesk import local_desktop

EXAMPLES = Path(__file__).resolve().parents[4] / "shared" / "osworld" / "evaluation_examples"
CHROME_DARK_MODE = "chrome/93eabf48-6a27-4cb6-b963-7d5fe1e0d3a9"


def _configs() -> dict[str, list[SetupStep]]:
    found = {}
    for path in sorted((EXAMPLES / "examples").glob("*/*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        found[f"{path.parent.name}/{path.stem}"] = [
            SetupStep.model_validate(s) for s in data.get("config", [])
        ]
    return found


@pytest.mark.skipif(
    not (EXAMPLES / "examples").is_dir(), reason="OSWorld's task files are not in shared/osworld"
)
def test_every_real_config_waits_for_what_earlier_steps_started() -> None:
    """Every step that waits on an earlier one, in every real task config, is handled: window
    steps and opens after a launch/open/execute are repeated until their target is there;
    input after a GUI launch waits for that app's window (or the earlier step waited itself)."""
    configs = _configs()
    assert len(configs) >= 360
    starters = {"launch", "open", "execute", "command", "chrome_open_tabs"}
    handled: dict[str, int] = {"retry": 0, "app": 0, "earlier": 0}
    for task, steps in configs.items():
        for index, step in enumerate(steps):
            if step.type == "launch":
                program = launched_program(step)
                assert program in GUI_PROGRAMS or program in BACKGROUND_PROGRAMS, (
                    f"{task}: launched program {program!r} is neither a known GUI program nor "
                    "a background one"
                )
            earlier = steps[:index]
            if not any(e.type in starters for e in earlier):
                continue
            wait = step_wait(steps, index)
            if step.type in ("activate_window", "close_window", "open"):
                assert wait is not None and wait.kind == "retry", f"{task} step {index}"
                handled["retry"] += 1
            elif sends_input(step):
                gui = [
                    e
                    for e in earlier
                    if e.type in ("open", "chrome_open_tabs")
                    or (e.type == "launch" and launched_program(e) in GUI_PROGRAMS)
                ]
                if not gui:
                    continue  # nothing with a window was started before: nothing to wait for
                assert wait is not None, f"{task} step {index} ({step.type})"
                if gui[-1].type == "launch":
                    assert wait.kind == "app", f"{task} step {index}"
                    assert wait.classes == GUI_PROGRAMS[launched_program(gui[-1])]
                else:
                    assert wait.kind == "earlier", f"{task} step {index}"
                handled[wait.kind] += 1
    steps = configs[CHROME_DARK_MODE]
    assert [s.type for s in steps] == ["execute", "launch", "launch", "activate_window"]
    wait = step_wait(steps, 3)
    assert wait is not None and wait.kind == "retry" and wait.seconds >= 60
    # the sequences the audit found (counted on the task files of 2025: 369 tasks)
    assert handled["retry"] >= 60 and handled["app"] >= 10 and handled["earlier"] >= 5, handled


def test_a_step_with_nothing_started_before_it_does_not_wait() -> None:
    alone = [SetupStep(type="activate_window", parameters={"window_name": "x"})]
    assert step_wait(alone, 0) is None
    after_download = [SetupStep(type="download", parameters={"files": []}), alone[0]]
    assert step_wait(after_download, 1) is None
    vlc = SetupStep(
        type="launch", parameters={"command": "VLC_VERBOSE=-1 vlc --no-audio", "shell": True}
    )
    assert launched_program(vlc) == "vlc"


# ----------------------------------------------------------------------- on a real desktop

needs_desktop = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("bwrap"),
    reason="the local sandbox needs root and bubblewrap",
)


@pytest.fixture(scope="module")
def desktop() -> Iterator[Any]:
    with local_desktop(width=1024, height=768) as provider:
        yield provider


@pytest.fixture
def ctx(desktop: Any, tmp_path: Path) -> TaskContext:
    client = DesktopClient.from_handle(desktop.handle)
    return TaskContext(
        client=client,
        handle=desktop.handle,
        cache_dir=tmp_path / "cache",
        vars=default_vars((1024, 768)),
        screen=(1024, 768),
    )


def _sh(ctx: TaskContext, command: str) -> str:
    return ctx.client.execute(command, shell=True).output or ""


@pytest.mark.desktop
@needs_desktop
def test_activate_after_a_slow_launch_waits_for_the_window(ctx: TaskContext) -> None:
    """chrome/93eabf48's shape: launch, then activate the window at once. The window comes up
    3 s after the launch; the step is repeated until it is there, and it ends active."""
    report = run_setup(
        [
            {
                "type": "launch",
                "parameters": {"command": "sleep 3; exec xterm -T late-window", "shell": True},
            },
            {"type": "activate_window", "parameters": {"window_name": "late-window"}},
        ],
        ctx,
    )
    assert report.steps[1].seconds >= 2.0
    assert "late-window" in _sh(ctx, "xdotool getactivewindow getwindowname")
    _sh(ctx, "wmctrl -c late-window")


@pytest.mark.desktop
@needs_desktop
def test_input_after_a_gui_launch_waits_for_its_window(ctx: TaskContext) -> None:
    """An input step (xdotool) after launching a GUI program runs once that program's window
    is mapped: here an ``xterm`` that shows its window only after 3 s."""
    ctx.client.upload_file(
        "/tmp/slowbin/xterm", b"#!/bin/sh\nsleep 3\nexec /usr/bin/xterm -T slow-xterm\n"
    )
    _sh(ctx, "chmod +x /tmp/slowbin/xterm")
    report = run_setup(
        [
            {"type": "launch", "parameters": {"command": ["/tmp/slowbin/xterm"]}},
            {
                "type": "execute",
                "parameters": {
                    "command": [
                        "sh",
                        "-c",
                        "xdotool search --name slow-xterm windowactivate --sync",
                    ]
                },
            },
        ],
        ctx,
    )
    assert report.steps[1].seconds >= 2.0
    assert "slow-xterm" in _sh(ctx, "xdotool getactivewindow getwindowname")
    _sh(ctx, "wmctrl -c slow-xterm")


@pytest.mark.desktop
@needs_desktop
def test_a_window_that_never_comes_is_still_a_setup_failure(
    ctx: TaskContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(setup_steps, "START_GRACE_S", 2.0)
    with pytest.raises(SetupError, match=r"never-there not found \(waited \d+ s"):
        run_setup(
            [
                {"type": "execute", "parameters": {"command": ["true"]}},
                {"type": "activate_window", "parameters": {"window_name": "never-there"}},
            ],
            ctx,
        )
