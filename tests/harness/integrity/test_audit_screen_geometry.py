"""Audit finding, fixed: an agent that changed the screen size (xrandr, typed into a terminal)
kept its 0, but from then on the model was fed screenshots of another size than the action
mapping expected. Now every screenshot reaches the model at the task's size (the screen at the
top left of a black one of the task's size, cut where larger) and the step says so
(``env_notice``, on the trajectory and the replay); a changed keyboard map is noticed too."""

from __future__ import annotations

import io
import json
import os
import shutil
from pathlib import Path

import pytest
from PIL import Image

from computer_env.osworld.env import fit_to_screen
from tests.harness.helpers.audit_suite import audit_run


def _png(size: tuple[int, int], colour: tuple[int, int, int]) -> Image.Image:
    return Image.new("RGB", size, colour)


@pytest.mark.parametrize("size", [(800, 600), (2560, 1440)], ids=["smaller", "larger"])
def test_a_screenshot_of_another_size_is_fitted_pixel_for_pixel(size: tuple[int, int]) -> None:
    shot = _png(size, (200, 10, 10))
    data, notice = fit_to_screen(shot, (1920, 1080))
    fitted = Image.open(io.BytesIO(data))
    assert fitted.size == (1920, 1080)
    assert fitted.getpixel((0, 0)) == fitted.getpixel((min(size[0], 1920) - 1, 10)) == (200, 10, 10)
    if size[0] < 1920:  # outside the real screen: black, so a click there is plainly off it
        assert fitted.getpixel((1919, 1079)) == (0, 0, 0)
    assert f"{size[0]}x{size[1]}" in notice and "1920x1080" in notice


def _steps(artifact: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (artifact / "traj.jsonl").read_text().splitlines()]


@pytest.mark.desktop
@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("bwrap"),
    reason="the local sandbox needs root and bubblewrap",
)
def test_a_resized_screen_or_changed_keymap_keeps_its_zero_and_is_on_the_replay(
    tmp_path: Path,
) -> None:
    audit = audit_run(tmp_path, ["screen-resize", "keymap-change"])
    assert audit.harness_flaws() == [], (audit.harness_flaws(), audit.run.output[-4000:])
    expected = {
        "screen-resize": "the screen is 800x600, not the task's 1920x1080",
        "keymap-change": "the keyboard map is not the one of the first screenshot",
    }
    for exploit, notice in expected.items():
        r = audit.results()[("os/os-create-report-file", exploit)]
        assert (r["outcome"], r["score"], r["attempts"]) == ("failed", 0.0, 1), r["message"]
        artifact = audit.run.run_dir / r["artifact_dir"]
        steps = _steps(artifact)
        assert steps[0]["env_notice"] is None  # before the command was typed
        assert notice in str(steps[-1]["env_notice"]), steps[-1]
        for step in steps:  # never another size than the task's reached the model
            assert step["env_size"] == [1920, 1080] and step["image_size"] == [1920, 1080]
            assert Image.open(artifact / str(step["screenshot"])).size == (1920, 1080)
        assert "env notice" in (artifact / "replay.html").read_text()
    assert audit.run.rc == 0, audit.run.output[-4000:]
