"""Settling on evidence (damage reports, the active app's CPU time, new windows), on a real
sandboxed desktop: LibreOffice's "keep current format?" dialog, which comes ~0.5 s after
ctrl+s while the screen stays still, is waited for; a still screen costs milliseconds; an app
working without drawing is waited for up to the cap."""

from __future__ import annotations

import io
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from computer_env.desktop.client import DesktopClient
from computer_env.desktop.server.screen import appcpu
from computer_env.osworld import wait_until_settled
from computer_env.osworld.prepare import settle as settling
from tests.harness.helpers.localdesk import local_desktop
from tests.harness.helpers.polling import scaled, wait_for

needs_sandbox = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("bwrap"),
    reason="the local sandbox needs root and bubblewrap",
)
LO_CONFIG = "/home/user/.config/libreoffice/4/user/registrymodifications.xcu"
SETTLE = (0.3, 3.0)  # OSWorldComputerEnv's (quiet_s, cap_s)


@pytest.fixture(scope="module")
def client() -> Iterator[DesktopClient]:
    with local_desktop() as provider:
        handle = provider.handle
        assert handle is not None
        with DesktopClient.from_handle(handle) as c:
            yield c


def _windows(client: DesktopClient) -> str:
    return client.execute(["wmctrl", "-l"]).output


def _sheet_bytes() -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    for i in range(1, 400):  # enough rows that saving takes LibreOffice a while
        sheet.append([i, i * 2, f"row {i}", i / 7])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def _cells(client: DesktopClient, path: str, *names: str) -> tuple[object, ...] | None:
    """Values of cells of the saved sheet; None while it cannot be read (not saved yet)."""
    import openpyxl

    data = client.read_file(path)
    if not data:
        return None
    try:
        sheet = openpyxl.load_workbook(io.BytesIO(data)).active
    except Exception:  # noqa: BLE001 - a save still being written
        return None
    return None if sheet is None else tuple(sheet[name].value for name in names)


@contextmanager
def _calc(client: DesktopClient, name: str) -> Iterator[str]:
    """A fresh .xlsx open in LibreOffice Calc with the keep-format question on; its path."""
    client.execute(
        [
            "sed",
            "-i",
            's|<prop oor:name="WarnAlienFormat" oor:op="fuse"><value>'
            'false|<prop oor:name="WarnAlienFormat" oor:op="fuse"><value>true|',
            LO_CONFIG,
        ]
    )
    assert b'WarnAlienFormat" oor:op="fuse"><value>true' in (client.read_file(LO_CONFIG) or b"")
    path = f"/home/user/{name}"
    client.upload_file(path, _sheet_bytes())
    client.launch(["libreoffice", "--calc", path])
    wait_for(lambda: name in _windows(client), f"LibreOffice Calc with {name}", 90)
    try:
        wait_until_settled(client, quiet_s=0.5, cap_s=10.0)
        yield path
    finally:
        client.execute(["wmctrl", "-c", name])  # saved: it closes without asking
        wait_for(lambda: name not in _windows(client), "LibreOffice to close")


def _act(client: DesktopClient, code: str = "", text: str = "") -> None:
    """One agent step as OSWorldComputerEnv takes it: the input, then the settle."""
    if text:
        client.type_text(text)
    if code:
        client.run_pyautogui(code)
    wait_until_settled(client, quiet_s=SETTLE[0], cap_s=SETTLE[1])


def test_cpu_samples_tell_working_from_sleeping() -> None:
    """Real processes: one spinning, one asleep, and the spinner's child counted with it."""
    spin = "import time\nt = time.time()\nwhile time.time() - t < 5: pass"
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys, time; "
            f"subprocess.Popen([sys.executable, '-c', {spin!r}]); "
            "time.sleep(5)",
        ]
    )
    sleeper = subprocess.Popen(["sleep", "5"])
    try:
        wait_for(lambda: len(appcpu.process_tree(parent.pid)) == 2, "the spinning child")
        tree = appcpu.process_tree(parent.pid)
        busy0, idle0 = appcpu.sample(tree), appcpu.sample((sleeper.pid,))
        time.sleep(0.3)
        busy1, idle1 = appcpu.sample(tree), appcpu.sample((sleeper.pid,))
        assert appcpu.busy_fraction(busy0, busy1) > 0.5  # ran or waited for a core
        assert appcpu.busy_fraction(idle0, idle1) < 0.05
        assert busy1.runnable and not idle1.runnable  # a spinner is R, a sleeper S
    finally:
        for pid in appcpu.process_tree(parent.pid)[1:]:
            os.kill(pid, 9)
        for proc in (parent, sleeper):
            proc.kill()
            proc.wait(timeout=5)


def test_a_thread_kept_off_the_cores_is_working_though_its_times_stand_still() -> None:
    """The kernel adds a runnable thread's wait to its times only when it runs again: over a
    window in which a loaded host (or a spent CPU quota) kept it off the cores, its times stand
    still. Its state at the reading (R) still says it works."""
    still = {7: 1_000_000}
    waiting = appcpu.AppActivity()
    waiting.record(7, appcpu.CpuSample(at=10.0, busy_ns=still, blocked=False))
    waiting.record(7, appcpu.CpuSample(at=10.3, busy_ns=still, blocked=False, runnable=True))
    assert waiting.idle_for(0.2) is False and waiting.busy_seen
    asleep = appcpu.AppActivity()
    asleep.record(7, appcpu.CpuSample(at=10.0, busy_ns=still, blocked=False))
    asleep.record(7, appcpu.CpuSample(at=10.3, busy_ns=still, blocked=False))
    assert asleep.idle_for(0.2) is True and not asleep.busy_seen
    assert asleep.idle_for(0.5) is None  # the readings do not span the window yet


@pytest.mark.desktop
@needs_sandbox
def test_keep_format_dialog_is_waited_for(client: DesktopClient) -> None:
    """ctrl+s on an .xlsx with the format warning on: LibreOffice works, then asks whether to
    keep the format. Enter right after the settle must answer that dialog (keep xlsx), not
    land in the sheet while LibreOffice is still busy."""
    with _calc(client, "keep.xlsx") as path:
        _act(client, "pyautogui.hotkey('ctrl', 'home')")
        _act(client, "pyautogui.press('enter')", text="4242")
        _act(client, "pyautogui.hotkey('ctrl', 's')")
        assert "Confirm File Format" in _windows(client)  # the settle waited for the question
        _act(client, "pyautogui.press('enter')")  # its default: keep xlsx
        wait_for(lambda: _cells(client, path, "A1") == (4242,), "keep.xlsx saved, A1 = 4242", 20)
        assert "Confirm File Format" not in _windows(client)


@pytest.mark.desktop
@needs_sandbox
def test_keys_wait_for_libreoffice_to_move_the_focus(client: DesktopClient) -> None:
    """ctrl+shift+F5 moves the focus to the Name Box a while after the key (LibreOffice posts
    it to its main loop, drawing nothing meanwhile): text typed right after the settle must go
    there, not into the cell (with damage reports alone "A7" landed in A1)."""
    with _calc(client, "names.xlsx") as path:
        _act(client, "pyautogui.hotkey('ctrl', 'shift', 'f5')")
        _act(client, "pyautogui.press('enter')", text="A7")
        _act(client, "pyautogui.press('enter')", text="Total")
        _act(client, "pyautogui.hotkey('ctrl', 's')")
        _act(client, "pyautogui.press('enter')")  # keep xlsx
        wait_for(
            lambda: _cells(client, path, "A1", "A7") == (1, "Total"),
            "names.xlsx saved with A7 = Total and A1 untouched",
            20,
        )


@pytest.mark.desktop
@needs_sandbox
def test_still_screen_settles_in_milliseconds(client: DesktopClient) -> None:
    """Nothing drawn, no input, the active app idle: the server answers in < 50 ms with every
    check on, and ``wait_until_settled`` (screenshot polling needed >= its quiet_s) in < 0.15 s."""
    client.launch(["xterm", "-T", "still-term", "-geometry", "60x10+0+0"])
    wait_for(lambda: "still-term" in _windows(client), "the xterm")
    try:
        wait_until_settled(client, quiet_s=0.3, cap_s=5.0)
        time.sleep(0.4)  # nothing happens for longer than any quiet window: a still screen
        server, total = [], []
        for _ in range(5):
            t0 = time.monotonic()
            answer = client.settle(
                quiet_s=settling.STILL_S,
                max_quiet_s=0.3,
                cap_s=3.0,
                cpu_quiet_s=settling.APP_IDLE_S,
                map_quiet_s=settling.WINDOW_S,
            )
            assert answer is not None and not answer["capped"]
            server.append(answer["waited_s"])
            total.append(wait_until_settled(client, quiet_s=0.3, cap_s=3.0))
            assert time.monotonic() - t0 < scaled(3.0)
        assert sorted(server)[2] < scaled(0.05), server
        assert sorted(total)[2] < scaled(0.15), total
    finally:
        client.execute(["wmctrl", "-c", "still-term"])


@pytest.mark.desktop
@needs_sandbox
def test_an_app_working_without_drawing_is_waited_for(client: DesktopClient) -> None:
    """A terminal whose command computes (1.5 s of CPU time) and prints only then: the screen
    is still meanwhile, the CPU time says the app is not done. The settle must return after
    the work ended (its marker file exists), however slow the host: the work is counted in
    CPU time, so a loaded host stretches it as it delays the settle request."""
    marker = "/tmp/work-term-done"
    work = (
        "import time\n"
        "while time.process_time() < 1.5: pass\n"
        f"open({marker!r}, 'w').close()\n"
        "print('done')"
    )
    client.execute(["rm", "-f", marker])
    client.launch(
        [
            "xterm",
            "-T",
            "work-term",
            "-geometry",
            "60x10+0+0",
            "-e",
            "bash",
            "-c",
            f"read; python3 -c {shlex.quote(work)}; read",
        ]
    )
    wait_for(lambda: "work-term" in _windows(client), "the xterm")
    try:
        wait_until_settled(client, quiet_s=0.3, cap_s=5.0)
        client.run_pyautogui("pyautogui.press('enter')")
        answer = client.settle(quiet_s=0.1, cap_s=scaled(30.0), cpu_quiet_s=0.1, map_quiet_s=0.2)
        assert answer is not None and answer["app_busy"] is True, answer
        done = client.execute(["test", "-e", marker]).returncode == 0
        assert done, f"the settle returned before the work ended: {answer}"
        assert not answer["capped"], answer
    finally:
        client.execute(["wmctrl", "-c", "work-term"])
        client.execute(["rm", "-f", marker])
