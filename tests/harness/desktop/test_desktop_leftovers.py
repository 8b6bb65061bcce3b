"""What a local desktop's owner leaves on the host when it dies by a signal: nothing once the
cleanup has run. SIGTERM and SIGINT clean up at once; after SIGKILL or SIGHUP (no handler runs)
the session cgroups and the network namespace stay until the next desktop start or the run's
sweep removes them. A live owner's are never touched. Owners are real processes with real
desktops."""

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

from computer_env.desktop.providers.local import netns
from computer_env.desktop.providers.local.cgroups import session_cgroups
from computer_env.desktop.providers.local.provider import LocalSandboxProvider
from fixtures.cases.desktops.pool import sweep_network_leftovers
from tests.harness.helpers.localdesk import local_desktop
from tests.harness.helpers.suite import as_foreground

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("bwrap"),
                       reason="the local sandbox needs root and bubblewrap"),
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
    """A process that owns one started local desktop until a signal ends it."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(as_foreground([sys.executable, "-c", OWNER]),
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
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
        return [str(d) for d in self.cgroups if d.exists()] + \
            [n for n in self.netns if n in gone]


@pytest.fixture()
def owners() -> Iterator[list[Owner]]:
    started: list[Owner] = []
    yield started
    for owner in started:
        if owner.proc.poll() is None:
            owner.end(signal.SIGTERM)


def test_killed_owner_is_swept_at_next_start_and_live_owner_kept(owners: list[Owner]) -> None:
    dead, alive = Owner(), Owner()
    owners += [dead, alive]
    dead.end(signal.SIGKILL)
    assert dead.left(), "a SIGKILLed owner ran no cleanup: its cgroups and netns are there"
    with local_desktop(width=640, height=480):
        assert dead.left() == []  # the next start swept them
        assert alive.left() == [str(d) for d in alive.cgroups] + alive.netns
    swept = LocalSandboxProvider.sweep_leftovers()
    assert not set(alive.cgroups) & set(swept.cgroups), swept
    assert alive.left() == [str(d) for d in alive.cgroups] + alive.netns  # still alive: kept
    alive.end(signal.SIGTERM)
    assert alive.left() == []  # SIGTERM: its own cleanup removed everything


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGHUP], ids=["SIGINT", "SIGHUP"])
def test_signal_leaves_nothing_after_the_runs_sweep(owners: list[Owner], sig: int) -> None:
    """SIGINT: the owner's own cleanup; SIGHUP (default action, nothing runs): the sweep the
    run's controller does at its end (``sweep_network_leftovers``).

    Other xdist workers start desktops meanwhile: the freed slot is the lowest free one, so a
    desktop starting elsewhere may take its lock just before our sweep (its claim sweeps the
    slot itself). Then ours skips it, and the leftovers go with that claim a moment later."""
    owner = Owner()
    owners.append(owner)
    owner.end(sig)
    before = owner.left()
    swept = sweep_network_leftovers(timeout=5.0)
    ours = owner.slot in swept.slots
    deadline = time.monotonic() + (0 if ours else 30)
    while owner.left() and time.monotonic() < deadline:  # the other claim finishing its sweep
        time.sleep(0.2)
    assert owner.left() == [], (before, swept)
    if sig == signal.SIGINT:
        assert before == [], "SIGINT: the owner's own cleanup removed everything before it exited"
    elif ours:
        left_cgroups = {str(d) for d in owner.cgroups} & set(before)
        assert left_cgroups and left_cgroups <= {str(d) for d in swept.cgroups}, (before, swept)
        assert any(netns.NETNS_PREFIX in n for n in before), before
