"""Ready means ready, saved means saved, gold stays on the host (issue 11, items 1, 2 and 4).

On a real local desktop with real LibreOffice: the first key press after readiness lands (the
Name Box jump of the Calc reference solution), input is confirmed by the app, a save started a
moment before evaluation is waited for, a half-written or broken office file is an evaluator
infrastructure failure (never a 0), and the asset server refuses gold files to the desktop.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from computer_env.errors import EvaluatorInfraError, SetupError
from computer_env.osworld import TaskContext, load_builtin_tasks
from computer_env.osworld.catalog.assets import AssetServer, private_assets
from computer_env.osworld.catalog.tasks import load_task_file, parse_task
from computer_env.osworld.context import default_vars
from computer_env.osworld.prepare.readiness import (
    AppExpectation,
    AppNotReady,
    expected_app,
    office_problem,
    wait_until_ready,
    window_problem,
)
from computer_env.osworld.prepare.setup import run_setup_in_process as run_setup
from computer_env.osworld.scoring.saves import evaluated_files, wait_for_saves
from fixtures.cases.outcomes import classify
from tests.harness.helpers.localdesk import local_desktop
from tests.harness.helpers.suite import OSWORLD_DATA

TASKS = {t.id: t for t in load_builtin_tasks()}


# -- pure ------------------------------------------------------------------------------------
def test_every_builtin_task_names_the_app_that_takes_the_first_action() -> None:
    for task in TASKS.values():
        app = expected_app(task)
        assert app is not None, task.case_id
        if task.snapshot.startswith("libreoffice") or task.id.startswith(("calc-", "writer-")):
            assert app.kind == "libreoffice" and app.title.endswith((".xlsx", ".docx")), app
    assert expected_app(TASKS["multi-notes-into-letter"]).title == "letter.docx"  # the last one
    assert expected_app(TASKS["multi-prices-to-csv"]).kind == "terminal"


def test_osworld_vlc_tasks_name_vlc_behind_their_env_assignment() -> None:
    """Every real VLC task launches ``VLC_VERBOSE=-1 vlc ...``: the app is VLC, so readiness
    waits for its window (before, the assignment was read as the program: no check at all)."""
    vlc_last = 0
    for path in sorted((OSWORLD_DATA / "examples" / "vlc").glob("*.json")):
        task = load_task_file(path, "vlc")
        kinds = [s.type for s in task.config if s.type in ("launch", "open")]
        if kinds and kinds[-1] == "launch":  # VLC opened last (else a file opened after it)
            app = expected_app(task)
            assert app is not None and app.kind == "media" and app.classes == ("vlc",), path.name
            vlc_last += 1
    assert vlc_last >= 10


def test_window_and_office_problems_say_what_is_missing() -> None:
    want = AppExpectation("libreoffice", ("libreoffice",), "roster.xlsx")
    good = {
        "active": 5,
        "class": ["libreoffice", "libreoffice-calc"],
        "viewable": True,
        "title": "roster.xlsx - LibreOffice Calc",
        "focused": True,
        "pong": True,
    }
    assert window_problem(want, good) is None
    assert "not the one" in window_problem(want, {**good, "title": "LibreOffice"})
    assert "focus" in window_problem(want, {**good, "focused": False})
    assert "busy" in window_problem(want, {**good, "pong": False})
    assert window_problem(want, {"active": 0}) == "no active window"
    office = {
        "app": True,
        "frame": "roster.xlsx - LibreOffice Calc",
        "toolbars": 3,
        "in_document": True,
    }
    assert office_problem(office) is None
    assert "toolbars" in office_problem({**office, "toolbars": 0})
    assert "focus" in office_problem({**office, "in_document": False})


def test_the_evaluated_files_come_from_the_evaluator() -> None:
    assert evaluated_files(TASKS["calc-append-roster-row"]) == ["/home/user/roster.xlsx"]
    assert evaluated_files(TASKS["calc-line-totals"]) == ["/home/user/orders.xlsx"]
    assert evaluated_files(TASKS["os-create-report-file"]) == []  # read by a command


def test_gold_files_are_private_assets() -> None:
    private = private_assets()
    assert "calc/orders_gold.xlsx" in private and "writer/memo_gold.docx" in private
    assert "calc/orders.xlsx" not in private and "chrome/shop/index.html" not in private


# -- on a real desktop -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def assets() -> Iterator[AssetServer]:
    with AssetServer(host="0.0.0.0") as server:
        yield server


@pytest.fixture(scope="module")
def desktop(assets: AssetServer) -> Iterator[Any]:
    with local_desktop(allow_ports=[assets.port], skip_unavailable=True) as provider:
        yield provider


def _context(desktop: Any, assets: AssetServer, tmp_path: Path, task_id: str) -> TaskContext:
    from computer_env.desktop.client import DesktopClient

    handle = desktop.reset()
    client = DesktopClient.from_handle(handle)
    screen = client.screen_size()
    return TaskContext(
        client=client,
        handle=handle,
        cache_dir=tmp_path,
        screen=screen,
        task_id=task_id,
        vars=default_vars(
            screen,
            asset_url=f"http://127.0.0.1:{assets.port}",
            guest_asset_url=f"http://{handle.guest_host}:{assets.port}",
        ),
    )


def _cell(data: bytes, ref: str) -> Any:
    import openpyxl

    return openpyxl.load_workbook(io.BytesIO(data)).active[ref].value


@pytest.mark.desktop
def test_calc_takes_the_first_key_press_and_the_save_is_waited_for(
    desktop: Any, assets: AssetServer, tmp_path: Path
) -> None:
    task = TASKS["calc-append-roster-row"]
    ctx = _context(desktop, assets, tmp_path, task.id)
    try:
        run_setup(task.config, ctx)
        report = wait_until_ready(ctx.client, task, timeout=180)
        office = report.last.get("office", {})
        assert office.get("toolbars", 0) > 0 and office.get("in_document"), report.last
        c = ctx.client
        # at once, like the reference solution: the Name Box jump must not be lost
        assert c.run_pyautogui("pyautogui.hotkey('ctrl', 'shift', 'f5')").ok
        c.type_text("A9\n")
        c.type_text("Ready Check")
        assert c.run_pyautogui("pyautogui.press('enter'); pyautogui.hotkey('ctrl', 's')").ok
        saves = wait_for_saves(c, task, vars=ctx.vars)  # no pause between save and reading
        assert saves.files == ["/home/user/roster.xlsx"]
        data = c.read_file("/home/user/roster.xlsx")
        assert data is not None and _cell(data, "A9") == "Ready Check"
        # the input confirmation of the desktop's server: the app answered after the input
        probe = c.run_pyautogui(
            "from Xlib import display\n"
            "from computer_env.desktop.server.input.text_input import confirm_delivered\n"
            "print(confirm_delivered(display.Display()))"
        )
        assert probe.output.strip().splitlines()[-1] == "True", probe
    finally:
        ctx.client.close()


@pytest.mark.desktop
def test_the_office_probe_sees_the_focus_leave_the_document(
    desktop: Any, assets: AssetServer, tmp_path: Path
) -> None:
    """The probe's walk skips toolbars, buttons and boxes (they cannot hold the document):
    with the focus in Calc's Name Box (a combo box) the document is not ready for keys, and
    back in the sheet it is."""
    from computer_env.osworld.prepare.readiness import office_state
    from computer_env.osworld.prepare.settle import wait_until_settled

    task = TASKS["calc-append-roster-row"]
    ctx = _context(desktop, assets, tmp_path, task.id)
    try:
        run_setup(task.config, ctx)
        wait_until_ready(ctx.client, task, timeout=180)
        c = ctx.client
        assert c.run_pyautogui("pyautogui.hotkey('ctrl', 'shift', 'f5')").ok
        wait_until_settled(c)
        away = office_state(c, "roster.xlsx")
        assert away.get("toolbars", 0) > 0 and not away.get("in_document"), away
        assert "focus" in (office_problem(away) or "")
        assert c.run_pyautogui("pyautogui.press('escape')").ok
        wait_until_settled(c)
        back = office_state(c, "roster.xlsx")
        assert back.get("in_document") and office_problem(back) is None, back
    finally:
        ctx.client.close()


@pytest.mark.desktop
def test_an_app_that_never_shows_is_unscored_setup_not_a_zero(
    desktop: Any, assets: AssetServer, tmp_path: Path
) -> None:
    task = parse_task(
        {
            "id": "never",
            "instruction": "x",
            "config": [{"type": "open", "parameters": {"path": "/home/user/never-opened.xlsx"}}],
            "evaluator": {"func": "exact_match"},
        }
    )
    ctx = _context(desktop, assets, tmp_path, task.id)
    try:
        with pytest.raises(AppNotReady, match="not ready for input") as info:
            wait_until_ready(ctx.client, task, timeout=5)
        assert isinstance(info.value, SetupError)
        assert classify(info.value)[0] == "setup"
    finally:
        ctx.client.close()


def _reads(path: str) -> Any:
    return parse_task(
        {
            "id": "reads",
            "instruction": "x",
            "evaluator": {
                "func": "compare_table",
                "result": {"type": "vm_file", "path": path, "dest": "r.xlsx"},
            },
        }
    )


@pytest.mark.desktop
def test_a_broken_or_still_written_office_file_is_an_evaluator_infra_failure(
    desktop: Any, assets: AssetServer, tmp_path: Path
) -> None:
    ctx = _context(desktop, assets, tmp_path, "reads")
    c = ctx.client
    try:
        c.upload_file("/home/user/half.xlsx", b"PK\x03\x04 half written")
        with pytest.raises(EvaluatorInfraError, match="cannot be parsed") as info:
            wait_for_saves(c, _reads("/home/user/half.xlsx"), quiet_s=0.5)
        assert classify(info.value)[0] == "evaluator"
        c.upload_file(
            "/home/user/busy.xlsx",
            (
                Path(__file__).parents[3]
                / "computer_env"
                / "osworld"
                / "builtin"
                / "assets"
                / "calc"
                / "roster.xlsx"
            ).read_bytes(),
        )
        c.upload_file("/home/user/lu4711.tmp", b"")  # LibreOffice's save in progress
        with pytest.raises(EvaluatorInfraError, match="saves did not finish"):
            wait_for_saves(c, _reads("/home/user/busy.xlsx"), quiet_s=0.5, timeout=3)
        assert c.execute(["rm", "/home/user/lu4711.tmp"]).ok
        report = wait_for_saves(c, _reads("/home/user/busy.xlsx"), quiet_s=0.5)
        assert report.polls >= 2
        missing = wait_for_saves(c, _reads("/home/user/never-saved.xlsx"), quiet_s=0.5)
        assert missing.files == ["/home/user/never-saved.xlsx"]  # the agent's result: no error
    finally:
        c.close()


@pytest.mark.desktop
def test_the_desktop_cannot_fetch_gold_files(
    desktop: Any, assets: AssetServer, tmp_path: Path
) -> None:
    import httpx

    ctx = _context(desktop, assets, tmp_path, "gold")
    base = f"http://{ctx.handle.guest_host}:{assets.port}"

    def status(path: str) -> str:
        res = ctx.client.execute(
            [
                "curl",
                "-s",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
                "--noproxy",
                "*",
                f"{base}/{path}",
            ]
        )
        return res.output.strip()

    try:
        assert status("calc/orders.xlsx") == "200"
        assert status("calc/orders_gold.xlsx") == "404"
        assert status("calc/../calc/orders_gold.xlsx") == "404"
        assert status("calc/orders_gold.xlsx?x=1") == "404"
        host = httpx.get(f"http://127.0.0.1:{assets.port}/calc/orders_gold.xlsx", timeout=30)
        assert host.status_code == 200 and host.content[:2] == b"PK"  # the evaluator's way
    finally:
        ctx.client.close()
