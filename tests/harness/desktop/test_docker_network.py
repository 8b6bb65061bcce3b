"""The Docker desktop network's pure logic, without a daemon: which /29 a new desktop gets (the
lowest free one, the next after another process took it), whose leftovers a sweep may remove.

A fake stands in for the docker SDK's client (only ``networks.list``/``networks.create``); the
real daemon, bridges and firewall are ``test_docker_isolation``'s.
"""

from __future__ import annotations

import ipaddress
import os
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any

import pytest

from computer_env.desktop.providers.docker import network
from computer_env.desktop.providers.docker.containers import (
    LABEL_CREATED,
    LABEL_OWNER,
    LABEL_PID,
    owner_gone,
)
from computer_env.errors import VMStartError


@dataclass
class _Net:
    subnet: str
    name: str = "n"
    id: str = "id"

    @property
    def attrs(self) -> dict[str, Any]:
        return {"IPAM": {"Config": [{"Subnet": self.subnet}]}}

    def reload(self) -> None:
        pass


@dataclass
class _Networks:
    """``client.networks``: refuses a subnet overlapping a listed one, as Docker does; takes
    ``taken_meanwhile`` (another process's network) just before the first create."""

    listed: list[_Net]
    taken_meanwhile: list[str] = field(default_factory=list)
    held_unlisted: list[str] = field(default_factory=list)
    """pools still held by networks being removed: refused, though no longer listed"""
    asked: list[str] = field(default_factory=list)

    def list(self) -> list[_Net]:
        return list(self.listed)

    def create(self, name: str, **kwargs: Any) -> _Net:
        subnet = kwargs["ipam"]["Config"][0]["Subnet"]
        self.asked.append(subnet)
        while self.taken_meanwhile:
            self.listed.append(_Net(self.taken_meanwhile.pop()))
        if any(
            ipaddress.ip_network(subnet).overlaps(ipaddress.ip_network(n.subnet))
            for n in [*self.listed, *map(_Net, self.held_unlisted)]
        ):
            raise RuntimeError(
                "400 Client Error: Pool overlaps with other one on this address space"
            )
        made = _Net(subnet, name=name)
        self.listed.append(made)
        return made


@dataclass
class _Client:
    networks: _Networks


def test_a_new_desktop_network_takes_the_lowest_free_29() -> None:
    client = _Client(
        _Networks([_Net("10.214.0.0/29"), _Net("10.214.0.16/28"), _Net("172.17.0.0/16")])
    )
    made = network._create_network(client, "a", "hbdaaaaaa", {})
    assert made.subnet == "10.214.0.8/29"
    assert network._create_network(client, "b", "hbdbbbbbb", {}).subnet == "10.214.0.32/29"


def test_a_subnet_taken_meanwhile_by_another_process_moves_to_the_next() -> None:
    nets = _Networks([_Net("10.214.0.0/29")], taken_meanwhile=["10.214.0.8/29"])
    made = network._create_network(_Client(nets), "a", "hbdaaaaaa", {})
    assert nets.asked == ["10.214.0.8/29", "10.214.0.16/29"] and made.subnet == "10.214.0.16/29"


def test_pools_held_by_networks_being_removed_are_skipped_not_retried() -> None:
    """A network being removed elsewhere can hold its pool after it left the list: the lowest
    free-looking subnet is refused again and again; each refused one is passed over."""
    held = [f"10.214.0.{8 * i}/29" for i in range(1, 12)]
    nets = _Networks([_Net("10.214.0.0/29")], held_unlisted=held)
    made = network._create_network(_Client(nets), "a", "hbdaaaaaa", {})
    assert nets.asked == [*held, "10.214.0.96/29"] and made.subnet == "10.214.0.96/29"


def test_a_range_docker_keeps_refusing_names_the_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(network, "CREATE_TRIES", 3)
    held = [f"10.214.0.{8 * i}/29" for i in range(0, 8)]
    nets = _Networks([], held_unlisted=held)
    with pytest.raises(VMStartError, match="refused 3 free-looking subnets.*Pool overlaps"):
        network._create_network(_Client(nets), "a", "hbdaaaaaa", {})
    assert len(nets.asked) == 3


def test_a_full_range_says_which_setting_widens_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(network, "SUBNETS", "10.9.0.0/28")
    client = _Client(_Networks([_Net("10.9.0.0/29"), _Net("10.9.0.8/29")]))
    with pytest.raises(VMStartError, match="HOLO_DOCKER_SUBNETS"):
        network._create_network(client, "a", "hbdaaaaaa", {})


def test_names_carry_the_owner_and_fit_the_kernels_limits() -> None:
    tag = network.new_tag()
    inbound, forward = network.chain_names(4194304, tag)  # the largest pid Linux gives
    assert inbound == f"HOLO-D-4194304-{tag}-IN" and forward.endswith("-FW")
    assert len(inbound) <= 28 and len(forward) <= 28  # iptables' chain names
    assert len(network.BRIDGE_PREFIX + tag) <= 15  # interface names
    assert network._comment('run="x" owner=1\n') == "run=_x_ owner=1_"


def _dead_pid() -> int:
    gone = subprocess.Popen(["true"])
    gone.wait()
    return gone.pid


def test_a_sweep_removes_only_what_a_gone_owner_or_controller_made() -> None:
    now = f"{time.time():.3f}"
    me, dead = str(os.getpid()), str(_dead_pid())
    assert not owner_gone({LABEL_PID: me, LABEL_OWNER: me, LABEL_CREATED: now})
    assert owner_gone({LABEL_PID: me, LABEL_OWNER: dead, LABEL_CREATED: now})  # a dead worker
    assert owner_gone({LABEL_PID: dead, LABEL_OWNER: me, LABEL_CREATED: now})  # a dead run
    assert not owner_gone({LABEL_PID: me, LABEL_CREATED: now})  # made before owners were named
    assert not owner_gone({LABEL_OWNER: dead})  # not the provider's: never touched
    assert not owner_gone({LABEL_PID: "not-a-pid", LABEL_OWNER: me})  # unreadable: kept
    # this pid, but the resource is older than this process: the pid was reused, its maker gone
    assert owner_gone({LABEL_PID: me, LABEL_OWNER: me, LABEL_CREATED: "1000.0"})
