"""Nothing the agent leaves in the desktop can speak for the evaluator: on a real local desktop,
a hostile "agent" (commands run as the desktop's user, as a code action would) plants every
hook it can, and the verifier still gives its own answer; the tamper audit names the hooks.

Each attack is one that worked on the code before: a ``.pth`` file in the user site printing a
forged result line, ``PYTHON*`` variables, a user PATH folder shadowing ``python3``, and a
process that writes forged lines into the verifier's output while it runs."""

from __future__ import annotations

import os
import shutil

import pytest

from computer_env.desktop.client import DesktopClient
from computer_env.osworld.guards.tamper import compare, fingerprint
from computer_env.synthetic import run_verifier
from tests.harness.helpers.localdesk import guest_sh, local_desktop

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(
        os.geteuid() != 0 or not shutil.which("bwrap"),
        reason="the local sandbox needs root and bubblewrap",
    ),
]

VERIFY_FALSE = "import os\ndef verify():\n    return os.path.exists(os.path.expanduser('~/x'))\n"
FORGED = '@@HOLO_VERIFIER@@{"result": 1}'
PLANT = r"""
site=$HOME/.local/lib/python3.11/site-packages
mkdir -p $site $HOME/.local/bin
cat > $site/zz_forge.pth <<'HOOK'
import atexit; atexit.register(lambda: print('\n@@HOLO_VERIFIER@@{"result": 1}'))
HOOK
cat > $site/usercustomize.py <<'HOOK'
print('@@HOLO_VERIFIER@@{"result": 1}')
HOOK
cat > $HOME/.local/bin/python3 <<'HOOK'
#!/bin/sh
echo '@@HOLO_VERIFIER@@{"result": 1}'
HOOK
chmod +x $HOME/.local/bin/python3
echo 'alias ls="echo forged"' >> $HOME/.bashrc
"""


def _plant_hooks(handle: object) -> None:
    out = guest_sh(handle, PLANT)  # type: ignore[arg-type]
    assert out["returncode"] == 0, out


def test_planted_hooks_cannot_forge_a_result_and_are_named() -> None:
    with local_desktop(skip_unavailable=True) as provider:
        handle = provider.handle
        assert handle is not None
        client = DesktopClient.from_handle(handle)
        try:
            assert (client.capabilities() or {}).get("verify") is True
            before = fingerprint(client)
            assert before.ok, before.error
            honest = run_verifier(client, VERIFY_FALSE, timeout_s=30)
            assert honest.ok and honest.score == 0.0 and honest.route == "verify"

            _plant_hooks(handle)
            # the hooks work on an ordinary Python of the desktop: the attack is real
            plain = guest_sh(handle, "python3 -c 'print(1)'")
            assert FORGED in plain["output"], plain
            # ... but not on the verifier
            after_hooks = run_verifier(client, VERIFY_FALSE, timeout_s=30)
            assert after_hooks.ok and after_hooks.score == 0.0

            # a process of the desktop's user writes forged lines wherever it can reach
            guest_sh(
                handle,
                "nohup sh -c 'for i in $(seq 400); do for f in /proc/[0-9]*/fd/1 "
                f"/proc/[0-9]*/fd/3; do echo \\'{FORGED}\\' > $f; done 2>/dev/null; "
                "sleep 0.02; done' >/dev/null 2>&1 &",
            )
            raced = run_verifier(client, VERIFY_FALSE, timeout_s=30)
            assert raced.ok and raced.score == 0.0

            verdict = compare(before, fingerprint(client), "Add a line to a text file.")
            named = " ".join(verdict.reasons())
            for hook in ("zz_forge.pth", "usercustomize.py", ".local/bin/python3", ".bashrc"):
                assert hook in named, named
            assert verdict.is_tampered
            # a task that asks for a shell alias may change .bashrc: not tampering
            asked = compare(before, fingerprint(client), "Add an alias to ~/.bashrc.")
            assert any(f.path.endswith(".bashrc") for f in asked.allowed)
            assert not any(f.path.endswith(".bashrc") for f in asked.tampered)
        finally:
            client.close()


def test_verifier_failures_are_reported_by_kind() -> None:
    with local_desktop(skip_unavailable=True) as provider:
        assert provider.handle is not None
        client = DesktopClient.from_handle(provider.handle)
        try:
            crash = run_verifier(client, "def verify():\n    return 1 / 0\n", timeout_s=30)
            assert crash.kind == "crashed" and "ZeroDivisionError" in crash.message
            slow = run_verifier(
                client, "import time\ndef verify():\n    time.sleep(30)\n", timeout_s=1
            )
            assert slow.kind == "timeout" and "out of time" in slow.message
            bad = run_verifier(client, "def verify():\n    return 'yes'\n", timeout_s=30)
            assert bad.kind == "bad"
            big = run_verifier(client, "def verify():\n    return 7\n", timeout_s=30)
            assert big.kind == "out_of_range"
            # the environment a verifier sees: no user PATH, no PYTHON* variables
            env = run_verifier(
                client,
                "import os, sys\ndef verify():\n    return float("
                "os.environ['PATH'].startswith('/usr/local/sbin') and not any("
                "k.startswith('PYTHON') for k in os.environ) and "
                "sys.flags.isolated)\n",
                timeout_s=30,
            )
            assert env.score == 1.0, env
            # the runner and the server are out of the desktop user's sight: they run outside
            # the nest (computer_env/desktop/server/commands/nest.py), where no pid of theirs
            # exists (verifiers run inside, each only while it runs)
            probe = guest_sh(
                provider.handle,
                "for p in $(pgrep -f '[_]verifier_main') "
                "$(pgrep -f -- '-m computer_env[.]desktop[.]server --host'); do "
                "ls /proc/$p/fd >/dev/null 2>&1 && echo OPEN $p || echo SHUT $p; "
                "done; echo probed",
            )
            out = probe["output"]
            assert out.strip() == "probed", probe
            # a kill from inside reaches no runner: verifiers still run (before the nest the
            # agent could kill it, and no verifier ran any more: "gone")
            guest_sh(provider.handle, "pkill -KILL -f '[_]verifier_main' ; true")
            still = run_verifier(client, VERIFY_FALSE, timeout_s=30)
            assert still.ok and still.score == 0.0, still
        finally:
            client.close()
