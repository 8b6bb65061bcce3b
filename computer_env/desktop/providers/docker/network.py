"""One Docker network per desktop container, and the host-side firewall around it.

On Docker's default bridge every container shares one segment with inter-container traffic on
and the host open on every port: a desktop reached another's token-less DevTools forward (9222)
and host ports on 0.0.0.0 that local desktops are firewalled from. Each desktop container of the
docker provider gets instead (:class:`DesktopNet`):

- its own bridge network, named as its container (``holo-<worker>-<pid>-<hex>``) and labelled
  like it (run id, worker, controller pid, owner pid, creation time, host), inter-container
  traffic off, a /29 of :data:`SUBNETS` (host ``.1``, container ``.2``), bridge ``hbd<hex>``
  with IPv6 off on the host side;
- two iptables chains named with the owner pid, ``HOLO-D-<pid>-<hex>-IN`` and ``-FW``, jumped to
  for traffic that enters from that bridge (each jump's comment names the run and the owner):
  ``INPUT`` (to this host): replies, then the host ports the desktop may reach
  (:meth:`DesktopNet.allow_port`, the provider's ``allow_host_port``), then DROP, as the local
  provider's chain (:mod:`computer_env.desktop.providers.local.netns`); ``DOCKER-USER``
  (forwarded): replies and DNS to the host's name servers pass, every private, shared,
  link-local, loopback and multicast destination is dropped (other desktops of any provider,
  the LAN, a cluster's nodes), the public internet stays reachable (OSWorld's VM needs it for
  its tasks).

The guest server, DevTools and VLC ports stay published on the host's 127.0.0.1 only, which no
desktop reaches: only this host's processes (the worker, OSWorld's gateway) do.

The firewall needs root, ``iptables`` and a daemon whose bridges live in this host's network
namespace (not a remote or rootless daemon); without them a desktop still has its own network
(no neighbour on it) and the provider's preflight warns that host ports stay open to it.

Whose is what: the owner pid (the process that made it) and the controller pid are in the
network's labels, the owner pid in each chain's name. :func:`sweep_dead_networks` removes the
networks and chains whose owner or controller is gone; :func:`sweep_run_networks` a run's own.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import re
import secrets
import shlex
import shutil
import subprocess
import threading
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from computer_env.desktop.providers.docker.containers import (
    LABEL_CHAINS,
    LABEL_NET,
    LABEL_OWNER,
    LABEL_PID,
    LABEL_RUN,
    alive,
    here,
    owner_gone,
)
from computer_env.errors import VMStartError
from computer_env.procs import running_since

log = logging.getLogger(__name__)

#: where the desktop networks' /29 subnets are taken from (env ``HOLO_DOCKER_SUBNETS``)
SUBNETS = os.environ.get("HOLO_DOCKER_SUBNETS", "10.214.0.0/16")
PREFIX_LEN = 29
CHAIN_PREFIX = "HOLO-D-"
BRIDGE_PREFIX = "hbd"
_CHAIN_RE = re.compile(rf"{re.escape(CHAIN_PREFIX)}(\d+)-([0-9a-f]+)-(IN|FW)")
#: forwarded destinations a desktop may not reach: everything that is not the public internet
BLOCKED_DESTINATIONS = (
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.0.0.0/24",
    "192.168.0.0/16",
    "198.18.0.0/15",
    "224.0.0.0/4",
    "240.0.0.0/4",
)
_create_lock = threading.Lock()  # one subnet choice at a time in this process


def _iptables(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(["iptables", "-w", *argv], capture_output=True, text=True, check=False)
    if check and res.returncode != 0:
        raise VMStartError(
            f"iptables {' '.join(argv)} failed ({res.returncode}): {res.stderr.strip()}"
        )
    return res


def firewall_missing() -> str | None:
    """Why this process cannot firewall desktop bridges (None: it can)."""
    if os.geteuid() != 0:
        return "the host firewall of Docker desktops needs root"
    if shutil.which("iptables") is None:
        return "the host firewall of Docker desktops needs `iptables` on PATH"
    return None


def new_tag() -> str:
    """A random tag for a new desktop network whose bridge name no interface here has (Docker
    would put a second network on an existing bridge of that name)."""
    while True:
        tag = secrets.token_hex(3)
        if not Path(f"/sys/class/net/{BRIDGE_PREFIX}{tag}").exists():
            return tag


def resolvers() -> list[str]:
    """The host's IPv4 name servers (those Docker's embedded DNS forwards to), loopback ones
    left out (Docker replaces them)."""
    found: list[str] = []
    for conf in (Path("/etc/resolv.conf"), Path("/run/systemd/resolve/resolv.conf")):
        try:
            lines = conf.read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            if len(parts) < 2 or parts[0] != "nameserver":
                continue
            try:
                addr = ipaddress.ip_address(parts[1])
            except ValueError:
                continue
            if addr.version == 4 and not addr.is_loopback and str(addr) not in found:
                found.append(str(addr))
    return found


def chain_names(owner_pid: int, tag: str) -> tuple[str, str]:
    """The INPUT and forward chains of the network ``tag`` made by ``owner_pid``."""
    return f"{CHAIN_PREFIX}{owner_pid}-{tag}-IN", f"{CHAIN_PREFIX}{owner_pid}-{tag}-FW"


def _comment(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.:=/ -]", "_", text)[:250]


@dataclass
class DesktopNet:
    """One desktop container's network and firewall (see the module's docstring)."""

    name: str
    tag: str
    bridge: str
    subnet: str
    owner_pid: int
    run_id: str
    allowed_ports: set[int] = field(default_factory=set)
    firewalled: bool = False
    network_id: str | None = None

    @property
    def chains(self) -> tuple[str, str]:
        return chain_names(self.owner_pid, self.tag)

    @property
    def gateway(self) -> str:
        """The host's address on this network (where the desktop reaches allowed host ports)."""
        return str(next(ipaddress.ip_network(self.subnet).hosts()))

    # -- lifecycle -------------------------------------------------------------------------
    @classmethod
    def create(
        cls,
        client: Any,
        *,
        name: str,
        tag: str,
        labels: dict[str, str],
        allowed: Iterable[int],
        firewall: bool,
    ) -> DesktopNet:
        """Create the network (a free /29 of :data:`SUBNETS`) and, with ``firewall``, its
        chains, before any container joins it. Raises ``VMStartError`` (nothing left behind)."""
        net = cls(
            name=name,
            tag=tag,
            bridge=f"{BRIDGE_PREFIX}{tag}",
            subnet="",
            owner_pid=os.getpid(),
            run_id=labels.get(LABEL_RUN, ""),
            allowed_ports=set(allowed),
        )
        in_chain, fw_chain = net.chains
        full = {
            **labels,
            LABEL_OWNER: str(net.owner_pid),
            LABEL_NET: "1",
            LABEL_CHAINS: f"{in_chain},{fw_chain}" if firewall else "",
        }
        try:
            network = _create_network(client, name, net.bridge, full)
            net.network_id = network.id
            net.subnet = _subnet_of(network)
            _disable_ipv6(net.bridge)
            if firewall:
                net._write_firewall()
        except BaseException:
            net.remove(client)
            raise
        log.info(
            "desktop network %s (%s, bridge %s%s)",
            name,
            net.subnet,
            net.bridge,
            ", firewalled" if net.firewalled else "",
        )
        return net

    def _write_firewall(self) -> None:
        if not Path(f"/sys/class/net/{self.bridge}").exists():
            raise VMStartError(
                f"the bridge {self.bridge} of network {self.name} is not in this "
                "host's network namespace (a remote or rootless Docker daemon?)"
            )
        self.firewalled = True  # from here on remove() takes the chains down
        in_chain, fw_chain = self.chains
        for chain in (in_chain, fw_chain):
            if _iptables("-n", "-L", chain, check=False).returncode != 0:
                _iptables("-N", chain)
            _iptables("-F", chain)
        _iptables(
            "-A", in_chain, "-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "ACCEPT"
        )
        for port in sorted(self.allowed_ports):
            _iptables("-A", in_chain, "-p", "tcp", "--dport", str(port), "-j", "ACCEPT")
        _iptables("-A", in_chain, "-j", "DROP")
        _iptables(
            "-A", fw_chain, "-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "RETURN"
        )
        for resolver in resolvers():  # Docker's embedded DNS asks them from the container
            for proto in ("udp", "tcp"):
                _iptables(
                    "-A", fw_chain, "-d", resolver, "-p", proto, "--dport", "53", "-j", "RETURN"
                )
        for cidr in dict.fromkeys((SUBNETS, *BLOCKED_DESTINATIONS)):
            _iptables("-A", fw_chain, "-d", cidr, "-j", "DROP")
        comment = _comment(f"holo-bench run={self.run_id} owner={self.owner_pid} net={self.name}")
        _iptables(
            "-I",
            "INPUT",
            "1",
            "-i",
            self.bridge,
            "-m",
            "comment",
            "--comment",
            comment,
            "-j",
            in_chain,
        )
        _iptables(
            "-I",
            _forward_chain(),
            "1",
            "-i",
            self.bridge,
            "-m",
            "comment",
            "--comment",
            comment,
            "-j",
            fw_chain,
        )

    def allow_port(self, port: int) -> None:
        """Let the desktop reach TCP ``port`` on this host (at :attr:`gateway`)."""
        if port in self.allowed_ports:
            return
        self.allowed_ports.add(port)
        if self.firewalled:
            _iptables("-I", self.chains[0], "2", "-p", "tcp", "--dport", str(port), "-j", "ACCEPT")

    def remove(self, client: Any) -> None:
        """Remove the network (its container must be gone) and then its chains; idempotent,
        failures are logged."""
        if self.network_id is not None:
            _remove_network(client, self.network_id, self.name)
            self.network_id = None
        if self.firewalled:
            remove_chains(self.chains)
            self.firewalled = False


def _forward_chain() -> str:
    """``DOCKER-USER`` (Docker's place for the user's forward rules), or ``FORWARD`` when the
    daemon manages no iptables rules."""
    return (
        "DOCKER-USER"
        if _iptables("-n", "-L", "DOCKER-USER", check=False).returncode == 0
        else "FORWARD"
    )


def _disable_ipv6(iface: str) -> None:
    """No IPv6 on the host side of the bridge: a link-local address would let the desktop reach
    host services listening on ``::``, past the IPv4 firewall."""
    path = Path(f"/proc/sys/net/ipv6/conf/{iface}/disable_ipv6")
    try:
        if path.exists():
            path.write_text("1")
    except OSError as exc:  # not root: the firewall is off too, and the preflight says so
        log.debug("cannot disable IPv6 on %s: %s", iface, exc)


def _used_subnets(client: Any) -> list[ipaddress.IPv4Network]:
    used = []
    for net in client.networks.list():
        for cfg in (net.attrs.get("IPAM") or {}).get("Config") or []:
            try:
                found = ipaddress.ip_network(cfg.get("Subnet", ""), strict=False)
            except ValueError:
                continue
            if isinstance(found, ipaddress.IPv4Network):
                used.append(found)
    return used


def _free_subnets(
    client: Any, refused: Collection[ipaddress.IPv4Network] = ()
) -> Iterable[ipaddress.IPv4Network]:
    """The /29s of :data:`SUBNETS` that no Docker network overlaps now and Docker has not
    ``refused`` in this choice, lowest first."""
    pool = ipaddress.ip_network(SUBNETS)
    if not isinstance(pool, ipaddress.IPv4Network) or pool.prefixlen > PREFIX_LEN:
        raise VMStartError(
            f"HOLO_DOCKER_SUBNETS={SUBNETS!r}: an IPv4 range of /{PREFIX_LEN} or larger is needed"
        )
    used = _used_subnets(client)
    for candidate in pool.subnets(new_prefix=PREFIX_LEN):
        if candidate not in refused and not any(candidate.overlaps(u) for u in used):
            yield candidate


CREATE_TRIES = 64
"""How many subnets one network creation tries when Docker refuses them as overlapping: another
process took the same one first, or a network being removed elsewhere still holds its pool
while the network list no longer shows it (both seen with three test workers on one host)."""


def _create_network(client: Any, name: str, bridge: str, labels: dict[str, str]) -> Any:
    """Create the bridge network on the lowest free /29. Another process may take the same one
    first, or a network being removed may still hold it: Docker refuses the overlap, and the
    next free one is tried (the refused one is skipped for this network)."""
    from docker.types import IPAMConfig, IPAMPool

    options = {
        "com.docker.network.bridge.name": bridge,
        "com.docker.network.bridge.enable_icc": "false",
    }
    refused: set[ipaddress.IPv4Network] = set()
    last: Exception | None = None
    with _create_lock:
        while len(refused) < CREATE_TRIES:
            subnet = next(iter(_free_subnets(client, refused)), None)
            if subnet is None:
                raise VMStartError(
                    f"no free /{PREFIX_LEN} left in {SUBNETS} for a desktop "
                    "network (HOLO_DOCKER_SUBNETS sets the range)"
                )
            gateway = str(next(subnet.hosts()))
            ipam = IPAMConfig(pool_configs=[IPAMPool(subnet=str(subnet), gateway=gateway)])
            try:
                return client.networks.create(
                    name,
                    driver="bridge",
                    options=options,
                    ipam=ipam,
                    labels=labels,
                    check_duplicate=True,
                )
            except Exception as exc:  # noqa: BLE001 - docker.errors.APIError
                if "overlap" not in str(exc).lower():
                    raise VMStartError(f"could not create network {name}: {exc}") from exc
                last = exc
                refused.add(subnet)  # taken meanwhile, or still held: the next one
    raise VMStartError(
        f"could not create network {name}: Docker refused {len(refused)} free-looking "
        f"subnets of {SUBNETS} as overlapping; the last: {last}"
    )


def _subnet_of(network: Any) -> str:
    network.reload()
    configs = (network.attrs.get("IPAM") or {}).get("Config") or []
    return str(configs[0]["Subnet"]) if configs else ""


def _remove_network(client: Any, network_id: str, name: str) -> None:
    try:
        client.networks.get(network_id).remove()
        log.info("removed network %s", name)
    except Exception as exc:  # noqa: BLE001 - already gone is fine
        if "404" not in str(exc) and "not found" not in str(exc).lower():
            log.warning("could not remove network %s: %s", name, exc)


def remove_chains(chains: Iterable[str]) -> None:
    """Delete every jump to ``chains`` (INPUT, DOCKER-USER, FORWARD), then the chains."""
    names = set(chains)
    if not names:
        return
    for rule in _iptables("-S", check=False).stdout.splitlines():
        parts = shlex.split(rule)
        if (
            len(parts) > 2
            and parts[0] == "-A"
            and "-j" in parts
            and parts[parts.index("-j") + 1] in names
        ):
            _iptables("-D", *parts[1:], check=False)
    for chain in sorted(names):
        if _iptables("-n", "-L", chain, check=False).returncode == 0:
            _iptables("-F", chain, check=False)
            _iptables("-X", chain, check=False)


def _remove_listed(client: Any, network: Any) -> str:
    labels = network.attrs.get("Labels") or {}
    for container in network.attrs.get("Containers") or {}:
        try:
            client.containers.get(container).remove(force=True, v=True)
        except Exception:  # noqa: BLE001 - already gone
            pass
    _remove_network(client, network.id, network.name)
    chains = [c for c in labels.get(LABEL_CHAINS, "").split(",") if c]
    if chains and firewall_missing() is None:
        remove_chains(chains)
    return str(network.name)


def _desktop_networks(client: Any, *labels: str) -> list[Any]:
    """This host's desktop networks (with their attached containers) carrying ``labels``."""
    found = []
    for network in client.networks.list(filters={"label": [LABEL_NET, *labels]}):
        try:
            network.reload()  # the listing leaves out the attached containers
        except Exception:  # noqa: BLE001 - removed meanwhile
            continue
        if here(network.attrs.get("Labels") or {}):
            found.append(network)
    return found


def sweep_dead_networks(client: Any) -> list[str]:
    """Remove this host's desktop networks (and their chains) whose owner or controller
    process is gone, then any desktop chain whose owner pid is gone. Returns what was
    removed."""
    removed = []
    for network in _desktop_networks(client):
        if owner_gone(network.attrs.get("Labels") or {}):
            removed.append(_remove_listed(client, network))
            log.warning("swept desktop network %s: its owner is gone", network.name)
    removed += sweep_dead_chains()
    return removed


def sweep_run_networks(client: Any, run_id: str, controller_pid: int) -> list[str]:
    """Remove the desktop networks of run ``run_id`` under controller ``controller_pid`` whose
    owner is gone (the run's end: its workers have closed theirs)."""
    removed = []
    for network in _desktop_networks(
        client, f"{LABEL_RUN}={run_id}", f"{LABEL_PID}={controller_pid}"
    ):
        if not alive(network.attrs.get("Labels") or {}, LABEL_OWNER):
            removed.append(_remove_listed(client, network))
            log.warning("swept desktop network %s of this run: its owner is gone", network.name)
    return removed


def desktop_chains() -> dict[str, int]:
    """Every desktop chain on this host and the owner pid its name carries."""
    found = {}
    for line in _iptables("-S", check=False).stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "-N" and (m := _CHAIN_RE.fullmatch(parts[1])):
            found[parts[1]] = int(m.group(1))
    return found


def sweep_dead_chains() -> list[str]:
    """Remove the desktop chains (and their jumps) whose owner pid is gone."""
    if firewall_missing() is not None:
        return []
    dead = [chain for chain, pid in desktop_chains().items() if not running_since(pid)]
    remove_chains(dead)
    if dead:
        log.warning("swept firewall chains of dead owners: %s", ", ".join(sorted(dead)))
    return sorted(dead)


__all__ = [
    "BLOCKED_DESTINATIONS",
    "DesktopNet",
    "SUBNETS",
    "chain_names",
    "desktop_chains",
    "firewall_missing",
    "new_tag",
    "remove_chains",
    "resolvers",
    "sweep_dead_chains",
    "sweep_dead_networks",
    "sweep_run_networks",
]
