"""The nest: nothing the agent can start in a local desktop sees or signals its server or Xvfb.

Real sandboxed desktops. Before the nest, a kill typed into a terminal (or run by any command in
the desktop) took the guest server down, and the case became unscored instead of the agent's 0.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

from computer_env.desktop.client import DesktopClient
from computer_env.desktop.providers.local.provider import LocalSandboxProvider
from tests.harness.helpers.localdesk import guest_sh, local_desktop
from tests.harness.helpers.polling import wait_for

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(
        os.geteuid() != 0 or not shutil.which("bwrap"),
        reason="the local sandbox needs root and bubblewrap",
    ),
]

KILL = "pkill -9 -f computer_env.desktop.server; pkill -9 -x Xvfb; kill -9 1; kill -9 -1"


@pytest.fixture(scope="module")
def desktop() -> Iterator[LocalSandboxProvider]:
    with local_desktop(width=1024, height=768) as provider:
        yield provider


def _serves(provider: LocalSandboxProvider) -> None:
    """The server answers, draws and runs commands; X is up."""
    assert provider.is_alive()
    handle = provider.handle
    assert handle is not None
    with DesktopClient.from_handle(handle, retries=0) as client:
        assert client.screen_size() == (1024, 768)
        assert client.screenshot(fmt="png")[:4] == b"\x89PNG"
    assert guest_sh(handle, "xdpyinfo >/dev/null && echo x-up")["output"].strip() == "x-up"


def test_commands_in_the_desktop_see_neither_the_server_nor_x(
    desktop: LocalSandboxProvider,
) -> None:
    handle = desktop.reset()
    out = guest_sh(handle, "ps -e -o args=")["output"]
    assert "computer_env.desktop.server " not in out and "Xvfb" not in out, out
    assert "openbox" in out and "dbus-daemon" in out, out  # the agent's side is in the nest
    res = guest_sh(handle, "pgrep -f 'desktop[.]server --host'; pgrep -x Xvfb; echo rc=$?")
    assert res["output"].strip() == "rc=1", res


def test_the_nests_init_holds_no_capability_and_cannot_be_traced(
    desktop: LocalSandboxProvider,
) -> None:
    """The init mounted the nest's /proc with the capabilities a new user namespace gives; it
    re-executes before anything runs, so it holds none, and is not dumpable: a process of the
    agent's uid cannot ptrace it (and through it unmount /proc) nor read its memory."""
    handle = desktop.reset()
    out = guest_sh(
        handle,
        "grep -E '^Cap(Eff|Prm):' /proc/1/status; "
        "head -c1 /proc/1/environ >/dev/null 2>&1 || echo no-environ; "
        "grep -c -- --reap /proc/1/cmdline",
    )["output"].split()
    assert out[:4] == ["CapPrm:", "0000000000000000", "CapEff:", "0000000000000000"], out
    assert "no-environ" in out, out  # /proc/1/environ needs ptrace access: refused
    assert out[-1] == "1", out  # it is the re-executed reaper


def test_a_kill_run_in_the_desktop_leaves_its_server_and_x_running(
    desktop: LocalSandboxProvider,
) -> None:
    handle = desktop.reset()
    res = guest_sh(handle, KILL)
    assert res["returncode"] == -9, res  # pkill -f matched the shell itself
    _serves(desktop)
    # the nest's init took no signal: commands still start in it after kill -9 -1
    assert guest_sh(handle, "echo still; exit 3") == {
        "status": "success",
        "output": "still\n",
        "error": "",
        "returncode": 3,
    }
    desktop.reset()
    _serves(desktop)


def test_a_kill_typed_into_a_terminal_opened_with_ctrl_alt_t_leaves_the_server_running(
    desktop: LocalSandboxProvider,
) -> None:
    """The GUI route: the keyboard shortcut D-Bus-activates gnome-terminal-server in the nest;
    what is typed there reaches nothing outside it."""
    handle = desktop.reset()
    with DesktopClient.from_handle(handle) as client:
        client.run_pyautogui("pyautogui.hotkey('ctrl', 'alt', 't')")
        wait_for(
            lambda: "Terminal" in guest_sh(handle, "wmctrl -l")["output"],
            "the terminal window",
            timeout=60,
        )
        wait_for(
            lambda: guest_sh(handle, "pgrep -x bash")["returncode"] == 0,
            "the terminal's shell",
            timeout=30,
        )
        client.type_text("echo typed > /tmp/typed; " + KILL + "\n")
    wait_for(
        lambda: guest_sh(handle, "cat /tmp/typed")["output"] == "typed\n",
        "the typed command to run",
        timeout=30,
    )
    wait_for(
        lambda: guest_sh(handle, "pgrep -x gnome-terminal-server")["returncode"] == 1,
        "the kill to end the terminal too",
        timeout=30,
    )
    _serves(desktop)


def test_the_action_interpreter_killed_from_inside_is_the_actions_error_not_the_desktops(
    desktop: LocalSandboxProvider,
) -> None:
    """The fast action path's interpreter runs in the nest, where the agent can kill it (a kill
    typed into a terminal matches its command line too): the block it dies in answers an error
    result, as a killed command does, and the next block starts a new interpreter; before, the
    request failed (HTTP 500), the desktop's failure: unscored."""
    handle = desktop.reset()
    with DesktopClient.from_handle(handle, retries=0) as client:
        assert client.run_pyautogui("print('first')").output.strip() == "first"
        res = client.run_pyautogui("import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
        assert res.status == "error" and "exited with code -9" in res.error, res
        assert client.run_pyautogui("print('again')").output.strip() == "again"
        guest_sh(handle, "pkill -9 -f desktop.server.action_worker")  # killed between blocks
        # the next block at once: dead before it took the block, the interpreter is replaced
        # and the block runs (it acknowledges each block it takes before running it)
        assert client.run_pyautogui("print('third')").output.strip() == "third"
    _serves(desktop)


def test_exit_status_signals_and_missing_programs_as_before(desktop: LocalSandboxProvider) -> None:
    handle = desktop.handle
    assert handle is not None
    assert guest_sh(handle, "kill -TERM $$")["returncode"] == -15
    with DesktopClient.from_handle(handle) as client:
        assert client.execute(["sh", "-c", "pwd; exit 5"]).model_dump() == {
            "status": "success",
            "output": "/home/user\n",
            "error": "",
            "returncode": 5,
        }
        with pytest.raises(Exception, match="No such file or directory: 'no-such-program'"):
            client.execute(["no-such-program"])
