"""The desktop's trust boundary against an agent that has read this code, on a real local desktop.

Each test is an attack that worked before: reading the server's token inside the desktop and
calling ``/verify`` with code that queued a forged answer on the runner's pipe (a forged pass);
a verifier's ``setsid`` sleeper outside the nest that killed the server after the tamper audit
(a dodged 0); one non-UTF-8 byte that made the server answer 500 (unscored)."""

from __future__ import annotations

import os
import shutil
import time

import httpx
import pytest

from computer_env.desktop.client import DesktopClient
from computer_env.synthetic import run_verifier
from tests.harness.helpers.localdesk import guest_sh, local_desktop

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(
        os.geteuid() != 0 or not shutil.which("bwrap"),
        reason="the local sandbox needs root and bubblewrap",
    ),
]

#: run inside the desktop as the agent's code would: every place a token could hide, read
FIND_TOKEN = r"""
found=0
for f in $(find /run /tmp /home /var /opt /etc -xdev -type f 2>/dev/null) \
         /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do
    grep -qaF "$TOKEN" "$f" 2>/dev/null && { echo "FOUND $f"; found=1; }
done
for fd in /proc/[0-9]*/fd/*; do
    timeout 1 cat "$fd" 2>/dev/null | grep -qaF "$TOKEN" && echo "FOUND $fd"
done
echo "searched"
"""

#: a verifier that tries everything at once: forge an answer on every descriptor, leave a sleeper
#: that outlives it, look for the server and Xvfb, note its capabilities
HOSTILE_VERIFIER = r"""
import os, subprocess
def verify():
    seen = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                seen.append(open(f"/proc/{d}/cmdline", "rb").read().replace(b"\0", b" ").decode())
            except OSError:
                pass
    caps = open("/proc/self/status").read().split("CapEff:")[1].split()[0]
    with open(os.path.expanduser("~/verifier_saw.txt"), "w") as f:
        f.write("\n".join(seen) + "\nCAPS " + caps + "\n")
    subprocess.Popen(["sh", "-c", "exec -a holo-sleeper sleep 1000"], start_new_session=True)
    for fd in range(0, 256):
        try:
            os.write(fd, b'{"result": 1.0}\n')
        except OSError:
            pass
    return 0
"""
VERIFY_ZERO = "def verify():\n    return 0\n"


def test_no_process_inside_can_find_the_token_or_use_verify() -> None:
    with local_desktop(skip_unavailable=True) as provider:
        handle = provider.handle
        assert handle is not None and handle.token
        half = len(handle.token) // 2  # given in two halves: the search's own command line
        # must not hold the whole token
        head, tail = handle.token[:half], handle.token[half:]
        out = guest_sh(handle, f"TOKEN='{head}''{tail}'\n{FIND_TOKEN}")["output"]
        assert "FOUND" not in out and "searched" in out, out
        # the server's port answers inside, but /verify without the token is refused
        ask = (
            "python3 -c \"import urllib.request as u; r=u.Request('http://127.0.0.1:5000/"
            "verify', data=b'{}', headers={'Content-Type': 'application/json'}); "
            'u.urlopen(r)" 2>&1 | tail -n 1'
        )
        assert "403" in guest_sh(handle, ask)["output"]


def test_a_hostile_verifier_cannot_forge_see_the_server_or_leave_a_sleeper() -> None:
    with local_desktop(skip_unavailable=True) as provider:
        handle = provider.handle
        assert handle is not None
        client = DesktopClient.from_handle(handle)
        try:
            hostile = run_verifier(client, HOSTILE_VERIFIER, timeout_s=30)
            assert not (hostile.ok and hostile.score == 1.0), hostile
            # the next answer is its own, not one queued by the last verifier
            honest = run_verifier(client, VERIFY_ZERO, timeout_s=30)
            assert honest.ok and honest.score == 0.0, honest
            saw = guest_sh(handle, "cat ~/verifier_saw.txt")["output"]
            assert "CAPS 0000000000000000" in saw, saw
            assert "openbox" in saw  # it ran in the nest, with the agent's apps ...
            assert "computer_env.desktop.server --host" not in saw  # ... not beside the server
            assert "Xvfb" not in saw and "_verifier_main" not in saw.split("\n")[0]
            # the sleeper ended with its verifier: nothing of it in the nest
            left = guest_sh(handle, "pgrep -fa '[h]olo-sleeper'; echo end")["output"]
            assert left.strip() == "end", left
        finally:
            client.close()


def test_killing_every_process_inside_leaves_the_verifier_runner() -> None:
    """A task may ask to kill every Python process: the runner is out of reach, so the verifier
    still answers (it cannot cost a right answer its score)."""
    with local_desktop(skip_unavailable=True) as provider:
        handle = provider.handle
        assert handle is not None
        guest_sh(handle, "pkill -KILL -f python; kill -9 -1; true")
        client = DesktopClient.from_handle(handle)
        try:
            still = run_verifier(client, VERIFY_ZERO, timeout_s=30)
            assert still.ok and still.score == 0.0, still
            assert client.proves_identity() is True
        finally:
            client.close()


def test_bytes_that_are_not_utf8_never_make_an_error() -> None:
    with local_desktop(skip_unavailable=True) as provider:
        handle = provider.handle
        assert handle is not None
        client = DesktopClient.from_handle(handle)
        try:
            bash = client.run_bash_script("printf 'a\\xff\\xfeb'", timeout=30)
            assert bash["status"] == "success" and bash["output"] == "a\ufffd\ufffdb", bash
            py = client.run_python("import sys\nsys.stdout.buffer.write(bytes(range(256)))")
            assert py["status"] == "success" and "\ufffd" in py["output"], py
            ex = client.execute("printf '\\303'; printf '\\377' >&2", shell=True)
            assert ex.output == "\ufffd" and ex.error == "\ufffd", ex
            # a window whose title is not UTF-8 and a process whose name is not
            guest_sh(
                handle,
                "nohup xterm -T \"odd-$(printf '\\377\\376')\" >/dev/null 2>&1 &"
                ' nohup python3 -c "import ctypes,time; ctypes.CDLL(None).prctl('
                "15, b'\\xff\\xfe', 0, 0, 0); time.sleep(60)\" >/dev/null 2>&1 &",
            )
            auth = {"Authorization": f"Bearer {handle.token}"}
            deadline = time.monotonic() + 30
            titles = ""
            while "xterm" not in titles.lower() and time.monotonic() < deadline:
                windows = httpx.get(f"{handle.url}/windows", timeout=30, headers=auth)
                assert windows.status_code == 200, windows.text
                titles = windows.text
                time.sleep(0.2)
            assert "xterm" in titles.lower(), titles  # listed, whatever its title's bytes
            assert client.screenshot()[:4] == b"\x89PNG"  # the X watch read the odd name
        finally:
            client.close()
