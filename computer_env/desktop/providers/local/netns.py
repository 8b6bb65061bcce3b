"""One network namespace per sandbox: a veth pair, a private /30 and a host-side firewall.

A *slot* is a small integer owned through an exclusive ``flock`` on ``<LOCK_DIR>/slot-N.lock``
for the whole life of a desktop. Everything a slot creates carries its number (and the owner pid
in the netns name): netns ``celocal-<slot>-<pid>``, host veth ``cel<slot>h``, guest veth
``cel<slot>g``, iptables chain ``CELOCAL-<slot>``, subnet ``10.213.<slot//64>.<slot%64*4>/30``
(host .1, guest .2). A slot whose lock nobody holds belongs to a dead run, so its leftovers are
swept by whoever takes it (and by :func:`sweep_stale`).
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from computer_env.errors import ConfigurationError, VMStartError

log = logging.getLogger(__name__)

LOCK_DIR = Path("/run/computer-env-local")
MAX_SLOTS = 1024
NETNS_PREFIX = "celocal-"
IFACE_PREFIX = "cel"
CHAIN_PREFIX = "CELOCAL-"
SANDBOX_UID_BASE = 231000  # outside uid of slot N's processes: SANDBOX_UID_BASE + N


def _run(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(list(argv), capture_output=True, text=True, check=False)
    if check and res.returncode != 0:
        raise VMStartError(f"{' '.join(argv)} failed ({res.returncode}): {res.stderr.strip()}")
    return res


def _try_lock(slot: int) -> int | None:
    """Open and flock slot ``slot``'s lock file; the fd, or None if another process holds it."""
    LOCK_DIR.mkdir(parents=True, exist_ok=True)
    fd = os.open(LOCK_DIR / f"slot-{slot}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


@dataclass
class NetSlot:
    """A claimed slot and the network objects created for it."""

    slot: int
    lock_fd: int
    owner_pid: int = field(default_factory=os.getpid)
    allowed_ports: set[int] = field(default_factory=set)
    created: bool = False

    @property
    def netns(self) -> str:
        return f"{NETNS_PREFIX}{self.slot}-{self.owner_pid}"

    @property
    def host_if(self) -> str:
        return f"{IFACE_PREFIX}{self.slot}h"

    @property
    def guest_if(self) -> str:
        return f"{IFACE_PREFIX}{self.slot}g"

    @property
    def chain(self) -> str:
        return f"{CHAIN_PREFIX}{self.slot}"

    @property
    def sandbox_uid(self) -> int:
        return SANDBOX_UID_BASE + self.slot

    def _addr(self, host_part: int) -> str:
        return f"10.213.{self.slot // 64}.{(self.slot % 64) * 4 + host_part}"

    @property
    def host_addr(self) -> str:
        return self._addr(1)

    @property
    def guest_addr(self) -> str:
        return self._addr(2)

    # -- lifecycle -------------------------------------------------------------------------
    def create(self) -> None:
        """Create netns, veth pair, addresses and the firewall chain (sandbox -> host: drop)."""
        _sweep_slot(self.slot)
        ns, h, g = self.netns, self.host_if, self.guest_if
        self.created = True
        _run("ip", "netns", "add", ns)
        _run("ip", "link", "add", h, "type", "veth", "peer", "name", g, "netns", ns)
        _disable_ipv6(h)
        _run("ip", "addr", "add", f"{self.host_addr}/30", "dev", h)
        _run("ip", "link", "set", h, "up")
        script = (f"link set lo up\naddr add {self.guest_addr}/30 dev {g}\nlink set {g} up\n")
        res = subprocess.run(["ip", "-n", ns, "-batch", "-"], input=script, text=True,
                             capture_output=True, check=False)
        if res.returncode != 0:
            raise VMStartError(f"configuring netns {ns} failed: {res.stderr.strip()}")
        _run("ip", "netns", "exec", ns, "sysctl", "-q", "-w",
             "net.ipv6.conf.all.disable_ipv6=1")
        self._write_chain()
        _run("iptables", "-w", "-I", "INPUT", "1", "-i", h, "-m", "comment", "--comment",
             f"{NETNS_PREFIX}{self.slot}-{self.owner_pid}", "-j", self.chain)

    def _write_chain(self) -> None:
        chain = self.chain
        if _run("iptables", "-w", "-n", "-L", chain, check=False).returncode != 0:
            _run("iptables", "-w", "-N", chain)
        _run("iptables", "-w", "-F", chain)
        _run("iptables", "-w", "-A", chain, "-m", "conntrack", "--ctstate",
             "ESTABLISHED,RELATED", "-j", "ACCEPT")
        for port in sorted(self.allowed_ports):
            _run("iptables", "-w", "-A", chain, "-p", "tcp", "--dport", str(port), "-j", "ACCEPT")
        _run("iptables", "-w", "-A", chain, "-j", "DROP")

    def allow_port(self, port: int) -> None:
        """Let the sandbox reach TCP ``port`` on the host (at :attr:`host_addr`)."""
        if port in self.allowed_ports:
            return
        self.allowed_ports.add(port)
        if self.created:
            _run("iptables", "-w", "-I", self.chain, "2", "-p", "tcp", "--dport", str(port),
                 "-j", "ACCEPT")

    def destroy(self) -> None:
        """Remove everything this slot created and release the lock (idempotent)."""
        if self.lock_fd < 0:
            return
        try:
            _sweep_slot(self.slot)
        finally:
            os.close(self.lock_fd)
            self.lock_fd = -1


def _disable_ipv6(iface: str) -> None:
    path = Path(f"/proc/sys/net/ipv6/conf/{iface}/disable_ipv6")
    if path.exists():
        path.write_text("1")


def _sweep_slot(slot: int) -> None:
    """Delete any netns, veth and iptables chain of ``slot`` (the caller owns its lock)."""
    chain = f"{CHAIN_PREFIX}{slot}"
    host_if = f"{IFACE_PREFIX}{slot}h"
    rules = _run("iptables", "-w", "-S", "INPUT", check=False).stdout.splitlines()
    for rule in rules:
        if re.search(rf"-j {re.escape(chain)}(\s|$)", rule):
            _run("iptables", "-w", *shlex.split(rule.replace("-A INPUT", "-D INPUT", 1)),
                 check=False)
    if _run("iptables", "-w", "-n", "-L", chain, check=False).returncode == 0:
        _run("iptables", "-w", "-F", chain, check=False)
        _run("iptables", "-w", "-X", chain, check=False)
    for name in _list_netns():
        if name.startswith(f"{NETNS_PREFIX}{slot}-"):
            _run("ip", "netns", "del", name, check=False)
    if Path(f"/sys/class/net/{host_if}").exists():
        _run("ip", "link", "del", host_if, check=False)


def _list_netns() -> list[str]:
    try:
        return sorted(os.listdir("/run/netns"))
    except FileNotFoundError:
        return []


def owner_pids() -> list[int]:
    """The pids that own a local desktop network namespace now (from the names)."""
    pids: set[int] = set()
    for name in _list_netns():
        m = re.fullmatch(rf"{NETNS_PREFIX}\d+-(\d+)", name)
        if m:
            pids.add(int(m.group(1)))
    return sorted(pids)


def _stale_slots() -> set[int]:
    slots: set[int] = set()
    for name in _list_netns():
        m = re.fullmatch(rf"{NETNS_PREFIX}(\d+)-\d+", name)
        if m:
            slots.add(int(m.group(1)))
    for iface in os.listdir("/sys/class/net"):
        m = re.fullmatch(rf"{IFACE_PREFIX}(\d+)h", iface)
        if m:
            slots.add(int(m.group(1)))
    for line in _run("iptables", "-w", "-S", check=False).stdout.splitlines():
        m = re.match(rf"-N {CHAIN_PREFIX}(\d+)$", line)
        if m:
            slots.add(int(m.group(1)))
    return slots


def sweep_stale() -> list[int]:
    """Remove leftovers of every slot no live process owns; the slots swept."""
    swept: list[int] = []
    for slot in sorted(_stale_slots()):
        fd = _try_lock(slot)
        if fd is None:
            continue
        try:
            _sweep_slot(slot)
            swept.append(slot)
        finally:
            os.close(fd)
    if swept:
        log.info("swept network leftovers of dead desktops: slots %s", swept)
    return swept


def check_available() -> None:
    """Raise ConfigurationError unless we can create network namespaces and iptables rules."""
    if os.geteuid() != 0:
        raise ConfigurationError(
            "the local desktop sandbox needs root (network namespaces, veth, iptables); run as "
            "root or use LocalSandboxProvider(unsandboxed=True)")
    for tool in ("ip", "iptables"):
        if _run("sh", "-c", f"command -v {tool}", check=False).returncode != 0:
            raise ConfigurationError(f"the local desktop sandbox needs `{tool}` (iproute2/"
                                     "iptables) on PATH")


def claim_slot() -> NetSlot:
    """Claim the lowest free slot (sweeping its leftovers) and create its network."""
    sweep_stale()
    for slot in range(MAX_SLOTS):
        fd = _try_lock(slot)
        if fd is None:
            continue
        net = NetSlot(slot=slot, lock_fd=fd)
        try:
            net.create()
        except BaseException:
            net.destroy()
            raise
        return net
    raise VMStartError(f"all {MAX_SLOTS} local desktop slots are in use")
