"""One network namespace per sandbox: a veth pair, a private /30 and a host-side firewall.

A *slot* is a small integer owned through an exclusive ``flock`` on ``<LOCK_DIR>/slot-N.lock``
for the whole life of a desktop. Everything a slot creates carries its number (and the owner pid
in the netns name): netns ``celocal-<slot>-<pid>``, host veth ``cel<slot>h``, guest veth
``cel<slot>g``, iptables chain ``CELOCAL-<slot>``, subnet ``10.213.<slot//64>.<slot%64*4>/30``
(host .1, guest .2). The lock file also records the slot's run and owner pid
(:mod:`.ownership`): a slot whose lock nobody holds was left by a dead owner, and its leftovers
are removed only by a process of the same run or once that run is gone too (by whoever claims
the slot, by :func:`sweep_stale`); a slot another live run left is skipped, for that run's end.
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

from computer_env.desktop.providers.local import ownership
from computer_env.desktop.providers.local.ownership import Sweeper
from computer_env.errors import ConfigurationError, VMStartError

log = logging.getLogger(__name__)

LOCK_DIR = ownership.STATE_DIR
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


def _read_run(fd: int) -> str | None:
    """The run id a locked slot's file records (its last owner's run), or None."""
    try:
        words = os.pread(fd, 256, 0).decode(errors="replace").split()
    except OSError:
        return None
    return words[0] if words else None


def _write_owner(fd: int, run_id: str, pid: int) -> None:
    """Record the slot's run and owner pid in its (locked) file; an empty record (``""``) says
    the slot holds nothing (a clean release, a sweep)."""
    os.ftruncate(fd, 0)
    if run_id:
        os.pwrite(fd, f"{run_id} {pid}\n".encode(), 0)


@dataclass
class NetSlot:
    """A claimed slot and the network objects created for it."""

    slot: int
    lock_fd: int
    owner_pid: int = field(default_factory=os.getpid)
    run_id: str = ""
    """the run whose desktop holds the slot (:mod:`.ownership`)"""
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
        if self.run_id:
            _write_owner(self.lock_fd, self.run_id, self.owner_pid)
        ns, h, g = self.netns, self.host_if, self.guest_if
        self.created = True
        _run("ip", "netns", "add", ns)
        _run("ip", "link", "add", h, "type", "veth", "peer", "name", g, "netns", ns)
        _disable_ipv6(h)
        _run("ip", "addr", "add", f"{self.host_addr}/30", "dev", h)
        _run("ip", "link", "set", h, "up")
        script = f"link set lo up\naddr add {self.guest_addr}/30 dev {g}\nlink set {g} up\n"
        res = subprocess.run(
            ["ip", "-n", ns, "-batch", "-"],
            input=script,
            text=True,
            capture_output=True,
            check=False,
        )
        if res.returncode != 0:
            raise VMStartError(f"configuring netns {ns} failed: {res.stderr.strip()}")
        _run("ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1")
        self._write_chain()
        _run(
            "iptables",
            "-w",
            "-I",
            "INPUT",
            "1",
            "-i",
            h,
            "-m",
            "comment",
            "--comment",
            f"{NETNS_PREFIX}{self.slot}-{self.owner_pid}",
            "-j",
            self.chain,
        )

    def _write_chain(self) -> None:
        chain = self.chain
        if _run("iptables", "-w", "-n", "-L", chain, check=False).returncode != 0:
            _run("iptables", "-w", "-N", chain)
        _run("iptables", "-w", "-F", chain)
        _run(
            "iptables",
            "-w",
            "-A",
            chain,
            "-m",
            "conntrack",
            "--ctstate",
            "ESTABLISHED,RELATED",
            "-j",
            "ACCEPT",
        )
        for port in sorted(self.allowed_ports):
            _run("iptables", "-w", "-A", chain, "-p", "tcp", "--dport", str(port), "-j", "ACCEPT")
        _run("iptables", "-w", "-A", chain, "-j", "DROP")

    def allow_port(self, port: int) -> None:
        """Let the sandbox reach TCP ``port`` on the host (at :attr:`host_addr`)."""
        if port in self.allowed_ports:
            return
        self.allowed_ports.add(port)
        if self.created:
            _run(
                "iptables",
                "-w",
                "-I",
                self.chain,
                "2",
                "-p",
                "tcp",
                "--dport",
                str(port),
                "-j",
                "ACCEPT",
            )

    def destroy(self) -> None:
        """Remove everything this slot created and release the lock (idempotent)."""
        if self.lock_fd < 0:
            return
        try:
            _sweep_slot(self.slot)
            _write_owner(self.lock_fd, "", self.owner_pid)  # nothing left: no run's slot
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
            _run(
                "iptables", "-w", *shlex.split(rule.replace("-A INPUT", "-D INPUT", 1)), check=False
            )
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


def _sweep_if_allowed(slot: int, fd: int, by: Sweeper) -> bool:
    """Remove ``slot``'s leftovers (its lock held on ``fd``) when ``by`` may; whether it did."""
    if not ownership.may_sweep(_read_run(fd), by):
        return False
    _sweep_slot(slot)
    _write_owner(fd, "", 0)
    return True


def sweep_stale(by: Sweeper | None = None) -> list[int]:
    """Remove the leftovers of every slot no live process holds that ``by`` (default: this
    process, as part of its run) may remove (:func:`.ownership.may_sweep`); the slots swept."""
    by = by or ownership.sweeper()
    swept: list[int] = []
    kept: list[int] = []
    for slot in sorted(_stale_slots()):
        fd = _try_lock(slot)
        if fd is None:
            continue
        try:
            (swept if _sweep_if_allowed(slot, fd, by) else kept).append(slot)
        finally:
            os.close(fd)
    if swept:
        log.info("swept network leftovers of dead desktops: slots %s", swept)
    if kept:
        log.debug("left network leftovers of live runs' dead desktops: slots %s", kept)
    return swept


def check_available() -> None:
    """Raise ConfigurationError unless we can create network namespaces and iptables rules."""
    if os.geteuid() != 0:
        raise ConfigurationError(
            "the local desktop sandbox needs root (network namespaces, veth, iptables); run as "
            "root or use LocalSandboxProvider(unsandboxed=True)"
        )
    for tool in ("ip", "iptables"):
        if _run("sh", "-c", f"command -v {tool}", check=False).returncode != 0:
            raise ConfigurationError(
                f"the local desktop sandbox needs `{tool}` (iproute2/iptables) on PATH"
            )


def claim_slot() -> NetSlot:
    """Claim the lowest free slot and create its network, for this process's run. The
    leftovers of dead runs (and this run's) are swept first; a free slot whose record names
    another live run (its desktop died without releasing it) is skipped: that run's end
    removes what it left. The record is read under the slot's lock, so a desktop that dies
    while this runs is never mistaken for a free slot."""
    by = ownership.sweeper()
    assert by.run is not None
    ownership.record(by.run)
    sweep_stale(by)
    for slot in range(MAX_SLOTS):
        fd = _try_lock(slot)
        if fd is None:
            continue
        if not ownership.may_sweep(_read_run(fd), by):  # a live run's dead desktop left it
            os.close(fd)
            continue
        net = NetSlot(slot=slot, lock_fd=fd, run_id=by.run.id)
        try:
            net.create()
        except BaseException:
            net.destroy()
            raise
        return net
    raise VMStartError(f"all {MAX_SLOTS} local desktop slots are in use")
