"""``--spare-desktop``: the pool hands out a desktop made fresh in the background and resets the
used one to become the next spare. Real local sandbox desktops throughout; the provider is the
real ``LocalSandboxProvider``, subclassed only to note which thread started or reset it."""

from __future__ import annotations

import http.server
import os
import shutil
import threading
from collections.abc import Iterator

import psutil
import pytest

from computer_env.desktop.providers.base import DesktopHandle, DesktopProvider
from computer_env.desktop.providers.local.provider import LocalSandboxProvider
from computer_env.errors import VMStartError
from fixtures.cases.desktops.pool import VMPool
from tests.harness.helpers.localdesk import guest_sh
from tests.harness.helpers.polling import wait_for

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(
        os.geteuid() != 0 or not shutil.which("bwrap"),
        reason="the local sandbox needs root and bubblewrap",
    ),
]

MARKER = "~/written-by-the-last-task"


class _Noted(LocalSandboxProvider):
    """The real local provider; notes (method, thread name) of each start and reset."""

    def __init__(self, ready_timeout: float = 60.0) -> None:
        super().__init__(width=640, height=480, ready_timeout=ready_timeout)
        self.calls: list[tuple[str, str]] = []

    def start(self) -> DesktopHandle:
        self.calls.append(("start", threading.current_thread().name))
        return super().start()

    def reset(self) -> DesktopHandle:
        self.calls.append(("reset", threading.current_thread().name))
        return super().reset()


@pytest.fixture()
def host_port() -> Iterator[int]:
    """A real HTTP server on the host (all interfaces) that the desktops may be allowed."""
    server = http.server.ThreadingHTTPServer(("0.0.0.0", 0), http.server.SimpleHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def _reaches(handle: DesktopHandle, port: int) -> bool:
    out = guest_sh(
        handle, f"curl -s -o /dev/null -w '%{{http_code}}' -m 10 http://{handle.guest_host}:{port}/"
    )
    return out["output"].strip() == "200"


def _has_marker(handle: DesktopHandle) -> bool:
    return guest_sh(handle, f"test -e {MARKER}")["returncode"] == 0


def _closed(provider: LocalSandboxProvider, pids: list[int]) -> bool:
    return (
        provider.handle is None
        and provider.pids() == []
        and not any(
            psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
            for pid in pids
        )
    )


def test_spare_is_handed_out_at_once_fresh_and_the_used_one_becomes_the_next(
    host_port: int,
) -> None:
    made: list[_Noted] = []

    def factory() -> DesktopProvider:
        made.append(_Noted())
        return made[-1]

    pool = VMPool(factory, spare=True)
    pids: list[int] = []
    try:
        first = pool.acquire()  # nothing to hand out yet: started here, the spare behind
        pool.allow_host_port(host_port)  # as the asset server: while the spare starts
        assert _reaches(first, host_port)
        used = pool.provider
        assert used is made[0] and used.handle == first
        assert guest_sh(first, f"echo task1 > {MARKER}")["returncode"] == 0
        assert _has_marker(first)
        wait_for(pool.spare_prepared, "the spare desktop", timeout=120)
        second = pool.acquire()
        assert pool.provider is made[1] and made[1].handle == second != first
        # at once: the main thread started nothing, the spare was started behind
        assert made[1].calls == [("start", "spare-desktop")], "the spare started behind"
        assert not _has_marker(second) and _reaches(second, host_port)
        assert guest_sh(second, f"echo task2 > {MARKER}")["returncode"] == 0
        wait_for(pool.spare_prepared, "the used desktop's reset", timeout=120)
        third = pool.acquire()  # the first desktop again, reset behind: the file is gone
        assert pool.provider is made[0] and made[0].handle == third
        assert made[0].calls == [("start", "MainThread"), ("reset", "spare-desktop")]
        assert not _has_marker(third) and _reaches(third, host_port)
        assert len(made) == 2 and pool.replacements == 0
        wait_for(pool.spare_prepared, "the second desktop's reset", timeout=120)
        pids = [pid for p in made for pid in p.pids()]
        assert pids
    finally:
        pool.close()
    assert all(_closed(p, pids) for p in made)


def test_close_while_the_spare_starts_closes_both() -> None:
    made: list[_Noted] = []

    def factory() -> DesktopProvider:
        made.append(_Noted())
        return made[-1]

    pool = VMPool(factory, spare=True)
    try:
        pool.acquire()
        wait_for(lambda: len(made) == 2, "the spare's provider", timeout=60)
        assert not pool.spare_prepared()  # its start is in flight
    finally:
        pool.close()
    assert all(_closed(p, []) for p in made)
    assert not [t for t in threading.enumerate() if t.name == "spare-desktop"]
    with pytest.raises(VMStartError):
        pool.acquire()


def test_a_spare_that_failed_to_start_falls_back_to_resetting_the_one_in_use() -> None:
    made: list[_Noted] = []

    def factory() -> DesktopProvider:
        # the second desktop gives up waiting for its server at once: a start that fails
        made.append(_Noted(ready_timeout=0.0) if len(made) == 1 else _Noted())
        return made[-1]

    pool = VMPool(factory, spare=True)
    try:
        first = pool.acquire()
        assert guest_sh(first, f"echo task1 > {MARKER}")["returncode"] == 0
        wait_for(pool.spare_prepared, "the failing spare", timeout=120)
        again = pool.acquire()  # no error: the desktop in use is reset here, as without spare
        assert pool.provider is made[0] and made[0].calls == [
            ("start", "MainThread"),
            ("reset", "MainThread"),
        ]
        assert not _has_marker(again)
        assert made[1].handle is None and made[1].pids() == []  # the failed spare is closed
        wait_for(pool.spare_prepared, "a new spare", timeout=120)
        third = pool.acquire()
        assert pool.provider is made[2] and made[2].handle == third
    finally:
        pool.close()
    assert all(_closed(p, []) for p in made)


@pytest.mark.parametrize(
    "choice, provider, workers, cores, memory, kept",
    [
        ("auto", "local", 1, 2, 8000.0, True),  # two cores for one worker: a spare
        ("auto", "local", 2, 2, 8000.0, True),  # a core per worker: a spare each
        ("auto", "local", 3, 2, 8000.0, False),  # fewer cores than workers: none
        ("auto", "local", 2, 2, 1500.0, False),  # too little memory for two spares
        ("auto", "docker", 4, 16, 64000.0, True),
        ("auto", "local", 4, 16, 3000.0, False),  # too little memory for four spares
        ("auto", "remote", 1, 64, 64000.0, False),  # a remote server is the only desktop
        ("on", "local", 8, 2, 100.0, True),  # forced
        ("on", "remote", 1, 2, 8000.0, False),
        ("off", "local", 1, 64, 64000.0, False),
    ],
)
def test_auto_keeps_a_spare_only_where_the_host_has_room(
    choice, provider, workers, cores, memory, kept
) -> None:
    from fixtures.cases.desktops.spare_choice import keep_spare

    spare, why = keep_spare(choice, provider, workers=workers, cores=cores, available_mib=memory)
    assert spare is kept, why
    assert why  # the reason is logged
