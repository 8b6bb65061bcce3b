"""What a local desktop's owner leaves on the host when it dies by a signal: nothing once the
cleanup has run. SIGTERM and SIGINT clean up at once; after SIGKILL or SIGHUP (no handler runs)
the session cgroups and the network namespace stay until the next desktop start of the same run,
the run's end sweep or, once the run is gone too, the explicit sweep removes them. A live owner's
are never touched, nor what another live run's dead owner left. Owners are real processes with
real desktops, each in a run of the test's own (``localdesk.own_run``): what they leave is swept
by the test alone, so each test sees exactly what its sweep removed."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest

from computer_env.desktop.providers.local import netns, ownership
from computer_env.desktop.providers.local.cgroups import session_cgroups
from computer_env.desktop.providers.local.cleanup import sweep_leftovers
from computer_env.desktop.providers.local.provider import LocalSandboxProvider
from fixtures.cases.desktops.pool import sweep_network_leftovers
from tests.harness.helpers.localdesk import local_desktop, own_run
from tests.harness.helpers.suite import ROOT, as_foreground

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(
        os.geteuid() != 0 or not shutil.which("bwrap"),
        reason="the local sandbox needs root and bubblewrap",
    ),
]

OWNER = """
import signal
from computer_env.desktop.providers.local.provider import LocalSandboxProvider
provider = LocalSandboxProvider(width=640, height=480)
provider.start()
print("READY", flush=True)
while True:
    signal.pause()
"""


class Owner:
    """A process that owns one started local desktop, in the run ``env`` names, until a signal
    ends it."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            as_foreground([sys.executable, "-c", OWNER]),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **env},
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # ends with READY, or EOF when the owner failed
        if line.strip() != "READY":
            self.proc.kill()
            _, err = self.proc.communicate(timeout=30)
            raise AssertionError(f"the desktop owner did not start: {err[-3000:]}")
        self.pid = self.proc.pid
        self.cgroups = session_cgroups(self.pid)
        self.netns = [n for n in os.listdir("/run/netns") if n.endswith(f"-{self.pid}")]
        assert len(self.cgroups) >= 2 and len(self.netns) == 1, (self.cgroups, self.netns)
        self.slot = int(self.netns[0].split("-")[-2])  # <prefix><slot>-<pid>

    def end(self, sig: int) -> None:
        self.proc.send_signal(sig)
        self.proc.communicate(timeout=60)  # reaped: its pid is gone

    def left(self) -> list[str]:
        gone = set(os.listdir("/run/netns"))
        return [str(d) for d in self.cgroups if d.exists()] + [n for n in self.netns if n in gone]


@pytest.fixture()
def owners() -> Iterator[list[Owner]]:
    started: list[Owner] = []
    yield started
    for owner in started:
        if owner.proc.poll() is None:
            owner.end(signal.SIGTERM)


def test_killed_owner_is_swept_at_next_start_and_live_owner_kept(
    owners: list[Owner], monkeypatch: pytest.MonkeyPatch
) -> None:
    run, env = own_run()
    dead, alive = Owner(env), Owner(env)
    owners += [dead, alive]
    dead.end(signal.SIGKILL)
    assert dead.left(), "a SIGKILLed owner ran no cleanup: its cgroups and netns are there"
    monkeypatch.setenv(ownership.RUN_ENV, run.encode())  # the next desktop of the same run
    with local_desktop(width=640, height=480):
        assert dead.left() == []  # the next start swept them
        assert alive.left() == [str(d) for d in alive.cgroups] + alive.netns
    swept = LocalSandboxProvider.sweep_leftovers()
    assert not set(alive.cgroups) & set(swept.cgroups), swept
    assert alive.left() == [str(d) for d in alive.cgroups] + alive.netns  # still alive: kept
    alive.end(signal.SIGTERM)
    assert alive.left() == []  # SIGTERM: its own cleanup removed everything


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGHUP], ids=["SIGINT", "SIGHUP"])
def test_signal_leaves_nothing_after_the_runs_sweep(
    owners: list[Owner], sig: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGINT: the owner's own cleanup; SIGHUP (default action, nothing runs): the sweep the
    run's controller does at its end (``sweep_network_leftovers``), which finds them (no other
    run removes them first: their run lives)."""
    run, env = own_run()
    owner = Owner(env)
    owners.append(owner)
    owner.end(sig)
    before = owner.left()
    monkeypatch.setenv(ownership.RUN_ENV, run.encode())  # the run's controller, at its end
    swept = sweep_network_leftovers(timeout=5.0)
    assert owner.left() == [], (before, swept)
    if sig == signal.SIGINT:
        assert before == [], "SIGINT: the owner's own cleanup removed everything before it exited"
        assert owner.slot not in swept.slots
    else:
        assert owner.slot in swept.slots, (before, swept)
        left_cgroups = {str(d) for d in owner.cgroups} & set(before)
        assert left_cgroups and left_cgroups <= {str(d) for d in swept.cgroups}, (before, swept)
        assert any(netns.NETNS_PREFIX in n for n in before), before


def test_another_live_runs_leftovers_wait_for_that_run_or_its_end(owners: list[Owner]) -> None:
    """What a dead owner of a live run left is kept by every other run (a desktop's start, a
    run's end sweep) and by the explicit sweep; that run's own sweep removes it, and once the
    run's owner process is gone, so does anyone's."""
    keeper = subprocess.Popen(["sleep", "600"])  # owns the run: the run lives while it does
    try:
        run = ownership.new_run(pid=keeper.pid)
        ownership.record(run)
        owner = Owner({ownership.RUN_ENV: run.encode()})
        owners.append(owner)
        owner.end(signal.SIGKILL)
        left = owner.left()
        assert left, "a SIGKILLed owner ran no cleanup"
        with local_desktop(width=640, height=480):  # a desktop of another run starts
            assert owner.left() == left
        assert owner.slot not in sweep_leftovers().slots  # another run's end sweep
        explicit = subprocess.run(
            [sys.executable, "-m", "computer_env.desktop", "sweep"],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
        )
        assert explicit.returncode == 0, explicit.stderr
        assert owner.left() == left, explicit.stdout  # the run lives: not stale
        keeper.kill()
        keeper.wait(timeout=30)
        assert run.alive() is False
        explicit = subprocess.run(
            [sys.executable, "-m", "computer_env.desktop", "sweep"],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
        )
        assert explicit.returncode == 0, explicit.stderr
        assert owner.left() == [], explicit.stdout  # (or another run's sweep got it first)
        assert set(json.loads(explicit.stdout.strip().splitlines()[-1])) == {
            "slots",
            "cgroups",
            "runs",
        }
    finally:
        keeper.kill()
        keeper.wait(timeout=30)
