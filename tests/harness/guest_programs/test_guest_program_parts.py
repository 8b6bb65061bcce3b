"""The guest programs' pure parts, on the host (fast tier: no desktop). Each program runs here
under this interpreter, standard library only, as it would run under a desktop's python3; the
X window probe's X calls are not run (python-xlib needs a display), only its pure helpers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from computer_env import guest_programs
from computer_env.desktop.providers.local.bwrap import GUEST_SUBPACKAGES
from computer_env.guest_programs import file_saves, tamper_probe, verifier_run, x_window


def test_read_and_fill_the_shipped_programs() -> None:
    assert guest_programs.read("page_ready.js").rstrip().endswith("})")
    assert "__PASSWORD__" not in guest_programs.fill("sudo.sh", PASSWORD="pw")
    with pytest.raises(KeyError, match="left unfilled"):
        guest_programs.fill("chromium.sh")
    with pytest.raises(KeyError, match="no placeholder"):
        guest_programs.fill("chromium.sh", CHROMIUM_BINARY="/x", NOPE="y")
    with pytest.raises(ValueError):
        guest_programs.read("../errors.py")
    assert "guest_programs" in GUEST_SUBPACKAGES  # the desktop image and sandbox carry them


@pytest.mark.parametrize(
    ("entry", "busy"),
    [
        ("lu12ab.tmp", True),
        (".goutputstream-XYZ", True),
        (".report.ods.1a2b.tmp", True),
        (".report.ods.part", True),
        ("report.ods", False),
        ("other.tmp", False),
    ],
)
def test_a_save_in_progress_is_seen_by_its_temporary_file(entry: str, busy: bool) -> None:
    assert file_saves.is_busy_name(entry, "report.ods") is busy


def test_an_unsaved_window_names_its_file() -> None:
    listing = (
        "0x01 0 host *report.ods - LibreOffice Calc\n"
        "0x02 0 host notes.txt - Mousepad\n0x03 0 host\n"
    )
    assert file_saves.busy_titles(listing, ["/home/user/report.ods", "/home/user/notes.txt"]) == [
        "window '*report.ods - LibreOffice Calc'"
    ]


def test_the_saves_probe_answers_one_json_line(tmp_path: Path) -> None:
    doc = tmp_path / "a.ods"
    doc.write_bytes(b"12345")
    (tmp_path / "lu1.tmp").write_text("")
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            guest_programs.read("file_saves.py"),
            str(doc),
            str(tmp_path / "gone.txt"),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    state = json.loads(out.stdout)
    assert state["files"][str(doc)][0][0] == 5 and state["files"][str(tmp_path / "gone.txt")] == [
        None,
        None,
    ]
    assert str(tmp_path / "lu1.tmp") in state["busy"]


def test_tamper_probe_finds_the_hooks_in_a_home(tmp_path: Path) -> None:
    (tmp_path / ".bashrc").write_text("alias ls=rm\n")
    (tmp_path / ".config/autostart").mkdir(parents=True)
    (tmp_path / ".config/autostart/x.desktop").write_text("[Desktop Entry]\n")
    found = tamper_probe.scan(str(tmp_path))
    assert found[str(tmp_path / ".bashrc")]["kind"] == "shell_rc"
    assert found[str(tmp_path / ".bashrc")]["digest"] == tamper_probe.digest(
        str(tmp_path / ".bashrc")
    )
    assert found[str(tmp_path / ".config/autostart/x.desktop")]["kind"] == "autostart"
    assert tamper_probe.package_key("NumPy-1.26.dist-info") == "numpy"
    assert tamper_probe.digest(str(tmp_path / "missing")) == "unreadable:FileNotFoundError"


def test_tamper_probe_runs_isolated_from_stdin(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    (tmp_path / ".profile").write_text("")
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-"],
        input=guest_programs.read("tamper_probe.py"),
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith(tamper_probe.MARK))
    assert str(tmp_path / ".profile") in json.loads(line[len(tamper_probe.MARK) :])


def test_the_verifier_runner_reports_result_bad_and_error() -> None:
    assert verifier_run.answer(True) == {"result": True}
    assert verifier_run.answer("yes") == {"bad": "'yes'"}
    for code, key in (
        ("def verify():\n    return 0.5\n", "result"),
        ("def verify():\n    raise RuntimeError('x')\n", "error"),
    ):
        script = (
            guest_programs.read("verifier_run.py") + f"\nrun({code!r}, '@@M@@', {os.defpath!r})\n"
        )
        out = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, check=True
        )
        line = next(ln for ln in out.stdout.splitlines() if ln.startswith("@@M@@"))
        assert key in json.loads(line[len("@@M@@") :])


def test_focus_inside_walks_up_to_the_window() -> None:
    parents = {5: 4, 4: 3, 3: 1, 9: 1}
    assert x_window.focus_inside(5, 3, 1, parents.__getitem__)
    assert not x_window.focus_inside(9, 3, 1, parents.__getitem__)
    assert not x_window.focus_inside(0, 3, 1, parents.__getitem__)


def test_a_pong_is_the_answer_to_its_own_ping() -> None:
    from Xlib import X

    pong = SimpleNamespace(type=X.ClientMessage, client_type=7, data=(32, [11, 42, 3, 0, 0]))
    assert x_window.is_pong(pong, 7, 11, 42)
    assert not x_window.is_pong(pong, 7, 11, 43)
