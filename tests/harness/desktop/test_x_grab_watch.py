"""The guest server's grab watch (``computer_env/desktop/server/x11/xwatch.py``) on a real Xvfb: a
client's XGrabServer is found and released in seconds with the grabber named; an X server
stopped from outside (SIGSTOP) is no grab and costs no client its life, and a screenshot waiting
on it gives up in a second; and on a real local desktop a stopped X server stays the
environment's (rerun, never the agent's 0)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from computer_env.desktop.server.screen.screenshot import ScreenGrabber, ScreenUnavailable
from computer_env.desktop.server.x11.xclients import process_state, x_clients
from computer_env.desktop.server.x11.xwatch import XWatch
from tests.harness.helpers.polling import scaled, wait_for
from tests.harness.helpers.suite import CHAOS, ROOT, first_smoke_tasks, run_suite, task_list_file

GRAB = (
    "import ctypes,sys,time;x=ctypes.CDLL('libX11.so.6');x.XOpenDisplay.restype=ctypes.c_void_p;"
    "d=ctypes.c_void_p(x.XOpenDisplay(None));x.XGrabServer(d);x.XSync(d,0);"
    "print('grabbed',flush=True);time.sleep(600)"
)
HOLD = (
    "import ctypes,time;x=ctypes.CDLL('libX11.so.6');x.XOpenDisplay.restype=ctypes.c_void_p;"
    "d=ctypes.c_void_p(x.XOpenDisplay(None));print('open',flush=True);time.sleep(600)"
)

needs_xvfb = pytest.mark.skipif(not shutil.which("Xvfb"), reason="needs Xvfb")


@pytest.fixture
def xvfb(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A fresh Xvfb on a free display: ``(display, process)``."""
    read, write = os.pipe()
    proc = subprocess.Popen(
        [
            "Xvfb",
            "-displayfd",
            str(write),
            "-screen",
            "0",
            "640x480x24",
            "-nolisten",
            "tcp",
            "-noreset",
        ],
        pass_fds=(write,),
        stderr=subprocess.DEVNULL,
    )
    os.close(write)
    with os.fdopen(read) as f:
        display = ":" + f.readline().strip()
    try:
        yield display, proc
    finally:
        os.kill(proc.pid, signal.SIGCONT)
        proc.kill()
        proc.wait()


def _client(display: str, code: str, ready: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        env={**os.environ, "DISPLAY": display},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == ready
    return proc


@needs_xvfb
def test_a_grab_is_found_and_its_client_killed_in_seconds(
    xvfb: tuple[str, subprocess.Popen[bytes]],
) -> None:
    display, x = xvfb
    watch = XWatch(display, x.pid, nested=False)
    bystander = _client(display, HOLD, "open")
    try:
        assert watch.wait_probing(scaled(10)), "the probe's first answer"
        started = time.monotonic()
        grabber = _client(display, GRAB, "grabbed")
        wait_for(lambda: watch.grabs, "the grab to be found", 15, interval=0.05)
        found = time.monotonic() - started
        assert grabber.wait(timeout=5) == -signal.SIGKILL
        assert found < scaled(5), found
        (grab,) = watch.grabs
        assert grab.released and grab.grabber.startswith(f"{grabber.pid}: "), grab
        assert "XGrabServer" in grab.grabber
        assert bystander.poll() is None  # the one that grabbed was found: nothing else died
        assert watch.snapshot()["watching"]
    finally:
        bystander.kill()
        watch.close()


@needs_xvfb
def test_a_grab_held_by_the_servers_own_side_is_listed_not_counted_and_nothing_killed(
    xvfb: tuple[str, subprocess.Popen[bytes]],
) -> None:
    """``nested``: only the nest's processes are the desktop's side; a grabber in this
    process's own pid namespace (here: the test's child) is never killed, and the grab is not
    the agent's (``released`` false, not in the count the harness reads)."""
    display, x = xvfb
    watch = XWatch(display, x.pid, nested=True)
    # probing first, as the guest server starts (start_watch): a grab taken while the probe's
    # connection is being set up holds that set-up, where nothing is seen
    assert watch.wait_probing(scaled(10)), "the probe's first answer"
    grabber = _client(display, GRAB, "grabbed")
    try:
        wait_for(lambda: watch.grabs, "the grab to be looked into", 15, interval=0.05)
        (grab,) = watch.grabs
        assert not grab.released and grab.grabber == "" and "did not release" in grab.detail
        assert watch.released() == 0 and grabber.poll() is None
    finally:
        grabber.kill()
        watch.close()


@needs_xvfb
def test_a_stopped_x_server_is_no_grab_and_kills_nothing(
    xvfb: tuple[str, subprocess.Popen[bytes]],
) -> None:
    display, x = xvfb
    watch = XWatch(display, x.pid, nested=False, threshold_s=0.5)
    bystander = _client(display, HOLD, "open")
    try:
        wait_for(lambda: len(x_clients(x.pid)) >= 2, "the probe and the client to connect", 10)
        assert watch.x_stopped() is None
        os.kill(x.pid, signal.SIGSTOP)
        wait_for(lambda: process_state(x.pid) == "T", "Xvfb to stop", 5)
        time.sleep(3)  # a hang six times the threshold: nothing may be called a grab
        assert watch.grabs == [] and bystander.poll() is None
        assert watch.x_stopped() == f"the desktop's X server (pid {x.pid}) is stopped (state T)"
    finally:
        os.kill(x.pid, signal.SIGCONT)
        bystander.kill()
        watch.close()


@needs_xvfb
def test_a_screenshot_of_a_stopped_x_server_gives_up_in_a_second_and_works_after(
    xvfb: tuple[str, subprocess.Popen[bytes]],
) -> None:
    """A grab that waits on a stopped X server is not waited out: the reason the watch gives
    ends it (the route answers 503, the environment's, in a second rather than at the
    harness's time-outs); once the X server runs again, screenshots work."""
    display, x = xvfb
    watch = XWatch(display, x.pid, nested=False)
    screen = ScreenGrabber(display)
    try:
        assert screen.screenshot("png", unavailable=watch.x_stopped).data[:4] == b"\x89PNG"
        os.kill(x.pid, signal.SIGSTOP)
        wait_for(lambda: process_state(x.pid) == "T", "Xvfb to stop", 5)
        started = time.monotonic()
        with pytest.raises(ScreenUnavailable, match="is stopped"):
            screen.screenshot("png", unavailable=watch.x_stopped)
        assert time.monotonic() - started < scaled(5)
        os.kill(x.pid, signal.SIGCONT)
        assert screen.screenshot("png", unavailable=watch.x_stopped).data[:4] == b"\x89PNG"
    finally:
        os.kill(x.pid, signal.SIGCONT)
        screen.close()
        watch.close()


@pytest.mark.desktop
@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("bwrap"),
    reason="the local sandbox needs root and bubblewrap",
)
def test_an_x_server_stopped_from_the_host_stays_the_environments(tmp_path: Path) -> None:
    tasks = first_smoke_tasks(1, exclude_domains=("chrome",))
    run = run_suite(
        tmp_path,
        "stopx",
        "--task-list",
        str(task_list_file(tmp_path, tasks)),
        "-n0",
        *CHAOS,
        "--infra-rerun-delay",
        "0",
        env={"PYTHONPATH": str(ROOT), "CHAOS_STOP_X": "agent"},
    )
    (result,) = run.results().values()
    assert result["attempts"] == 2, result  # the stopped desktop's attempt was rerun
    (first,) = result["earlier_attempts"]  # found in a second, not at the client's time-outs
    assert first["infra_category"] == "desktop_error", first
    assert "X server (pid" in first["message"] and "is stopped (state T)" in first["message"]
    assert result["outcome"] == "passed", result["message"]
    assert result.get("failure_category") is None, result
    assert run.rc == 0, run.output[-3000:]


def test_waiting_for_the_probe_ends_at_once_when_its_display_is_gone() -> None:
    """No X server on the display: the probe stops, and the guest server's start (``start_watch``)
    does not wait out its limit for a first answer that cannot come."""
    watch = XWatch(":65000", 1, nested=False)
    try:
        started = time.monotonic()
        assert watch.wait_probing(scaled(60)) is False
        assert time.monotonic() - started < scaled(30)
        assert not watch.snapshot()["watching"]
    finally:
        watch.close()
