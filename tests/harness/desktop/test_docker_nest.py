"""The Docker desktop's nest (computer_env/desktop/server/commands/nest_root.py) on a real
dockerd: what its docstring claims, checked from inside (every command the server runs, as the agent's are)
and from outside (``docker exec`` as the container's root, beside the server)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from computer_env.desktop.client import DesktopClient
from computer_env.desktop.providers.docker.provider import DockerProvider
from tests.harness.helpers.dockerd import IMAGE, docker_client  # noqa: F401 (fixture)

pytestmark = [pytest.mark.docker, pytest.mark.desktop]
SUDO = "echo password | sudo -S -p '' "


@pytest.fixture(scope="module")
def desk(docker_client: Any) -> Iterator[tuple[DockerProvider, DesktopClient]]:  # noqa: F811
    provider = DockerProvider(IMAGE, worker="t-nest", prewarm=False, ready_timeout=90)
    try:
        handle = provider.start()
        with DesktopClient.from_handle(handle) as client:
            yield provider, client
    finally:
        provider.close()


def _inside(client: DesktopClient, script: str) -> tuple[int, str]:
    result = client.execute(["bash", "-c", script])
    return result.returncode, result.output + result.error


def _outside(provider: DockerProvider, script: str) -> str:
    code, out = provider._container.exec_run(["bash", "-c", script], user="root")
    return out.decode(errors="replace")


def test_inside_sees_only_the_nest_and_sudo_is_real(desk: tuple[DockerProvider, Any]) -> None:
    provider, client = desk
    rc, out = _inside(client, "ps -eo user,comm --no-headers; " + SUDO + "id -u")
    names = out.split()
    assert rc == 0, out
    assert "openbox" in names and "dbus-daemon" in names, out  # the session is inside
    assert "Xvfb" not in names, out
    assert not any("computer_env.desktop.server" in line for line in out.splitlines()), out
    assert out.strip().splitlines()[-1] == "0", out  # sudo gives real root inside
    outside = _outside(provider, "ps -eo user,args --no-headers")
    assert "python -s -m computer_env.desktop.server" in outside and "Xvfb" in outside


def test_root_inside_cannot_undo_the_nest(desk: tuple[DockerProvider, Any]) -> None:
    provider, client = desk
    rc, out = _inside(
        client,
        SUDO + "bash -c '"
        "grep CapEff /proc/self/status; "
        "umount /etc/ld.so.preload && echo UNMOUNTED; "
        "mount -t tmpfs none /mnt && echo MOUNTED; "
        "unshare -U true && echo UNSHARED; "
        "echo x > /etc/ld.so.preload && echo PRELOAD; "
        "echo x > /proc/sys/kernel/core_pattern && echo SYSCTL; "
        "kill -9 1; kill -9 -1 2>/dev/null; true'",
    )
    for done in ("UNMOUNTED", "MOUNTED", "UNSHARED", "PRELOAD", "SYSCTL"):
        assert done not in out, out
    cap_eff = int(out.split("CapEff:")[1].split()[0], 16)
    assert not cap_eff >> 21 & 1 and not cap_eff >> 19 & 1, out  # no CAP_SYS_ADMIN, SYS_PTRACE
    # the server answered through all of it and still runs commands in the nest
    rc, out = _inside(client, "echo alive")
    assert (rc, out.strip()) == (0, "alive")
    assert (
        _outside(provider, "cat /etc/ld.so.preload; cat /proc/sys/kernel/core_pattern").strip()
        == "core"
    )


def test_system_folders_written_inside_stay_inside(desk: tuple[DockerProvider, Any]) -> None:
    provider, client = desk
    rc, out = _inside(
        client,
        SUDO + "bash -c 'echo planted > /opt/venv/planted.py && "
        "echo planted > /usr/lib/planted && useradd -M charles && echo ok'",
    )
    assert rc == 0 and out.strip().endswith("ok"), out
    assert _inside(client, "cat /opt/venv/planted.py")[1].strip() == "planted"
    outside = _outside(
        provider, "ls /opt/venv/planted.py /usr/lib/planted 2>&1; getent passwd charles"
    )
    assert "No such file" in outside and outside.count("No such file") == 2, outside
    assert "charles:" in outside  # /etc is shared (users, sudoers): as on OSWorld's VM
    # the server's file routes read what the nest sees (what a getter must score)
    assert client.read_file("/opt/venv/planted.py") == b"planted\n"
    names = [c["name"] for c in client.list_directory("/opt/venv")["children"]]
    assert "planted.py" in names and "bin" in names, names
    # what the agent's user writes to its home is what the server reads
    assert _inside(client, "echo mine > ~/mine.txt")[0] == 0
    assert client.read_file("/home/user/mine.txt") == b"mine\n"
