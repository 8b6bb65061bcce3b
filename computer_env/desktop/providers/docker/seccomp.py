"""The seccomp profile of the project's desktop containers: what lets the desktop make its nest.

Docker's default profile refuses ``unshare``, ``setns`` and ``mount`` to a container without
``CAP_SYS_ADMIN``, and the nest (:mod:`computer_env.desktop.server.commands.nest_root`) needs
all three: a user, pid and mount namespace made by the container's root for the desktop user,
entered by the server with ``nsenter``. This profile lets those through and refuses, with ``EPERM``, the
calls Docker's documentation names as the significant ones its default blocks (kernel modules
and kexec, keyrings, BPF, perf, ``userfaultfd``, file handles, clocks, swap, reboot, accounting,
the new mount API, ``io_uring``). The container keeps Docker's default capabilities, so those
calls stay gated by capabilities too; root inside the nest gets no more than that set.

Only the project's own desktop image runs under it (``--provider docker`` with that image),
with ``/proc`` unmasked (the CLI's ``systempaths=unconfined``; :func:`run_container`): the kernel mounts a fresh ``/proc`` (the nest's) only
where the container's own is not partly hidden, so Docker's masks are redone inside the nest.
"""

from __future__ import annotations

import json
from typing import Any

#: refused with EPERM (Docker's "significant syscalls blocked by the default profile", less the
#: namespace calls the nest needs, plus what newer kernels added in the same families)
BLOCKED = (
    "acct",
    "add_key",
    "bpf",
    "clock_adjtime",
    "clock_settime",
    "create_module",
    "delete_module",
    "finit_module",
    "get_kernel_syms",
    "get_mempolicy",
    "init_module",
    "ioperm",
    "iopl",
    "kcmp",
    "kexec_file_load",
    "kexec_load",
    "keyctl",
    "lookup_dcookie",
    "mbind",
    "move_pages",
    "name_to_handle_at",
    "nfsservctl",
    "open_by_handle_at",
    "perf_event_open",
    "pivot_root",
    "query_module",
    "quotactl",
    "quotactl_fd",
    "reboot",
    "request_key",
    "set_mempolicy",
    "settimeofday",
    "stime",
    "swapoff",
    "swapon",
    "sysfs",
    "_sysctl",
    "uselib",
    "userfaultfd",
    "ustat",
    "vm86",
    "vm86old",
    "fsconfig",
    "fsmount",
    "fsopen",
    "fspick",
    "mount_setattr",
    "move_mount",
    "open_tree",
    "io_uring_enter",
    "io_uring_register",
    "io_uring_setup",
)
_EPERM = 1
#: an option of :func:`run_container` (not docker-py's): unmask the container's /proc
UNMASKED_PROC = "unmasked_proc"


def profile() -> dict[str, object]:
    """The profile as Docker's JSON format: allow by default, refuse :data:`BLOCKED`."""
    return {
        "defaultAction": "SCMP_ACT_ALLOW",
        "syscalls": [{"names": list(BLOCKED), "action": "SCMP_ACT_ERRNO", "errnoRet": _EPERM}],
    }


def security_options() -> list[str]:
    """``containers.run(security_opt=...)`` for the project's desktop image (the unmasked
    ``/proc``, which the CLI spells ``systempaths=unconfined``, is :func:`run_container`'s)."""
    return ["seccomp=" + json.dumps(profile(), separators=(",", ":"))]


def run_container(client: Any, options: dict[str, Any]) -> Any:
    """``client.containers.run(**options)`` (detached); with :data:`UNMASKED_PROC` in
    ``options``, the container's ``/proc`` and ``/sys`` unmasked as ``systempaths=unconfined``
    does: docker-py has no argument for those two host-config fields, so the container is
    created through its low-level API with them added, then started (removed if it will not)."""
    opts = dict(options)
    if not opts.pop(UNMASKED_PROC, False):
        return client.containers.run(**opts)
    from docker.models.containers import _create_container_args

    opts.pop("detach", None)
    opts.setdefault("command", None)
    opts["version"] = client.api._version
    create = _create_container_args(opts)
    create["host_config"]["MaskedPaths"] = []
    create["host_config"]["ReadonlyPaths"] = []
    container = client.containers.get(client.api.create_container(**create)["Id"])
    try:
        container.start()
    except Exception:
        container.remove(force=True)
        raise
    return container


__all__ = ["BLOCKED", "UNMASKED_PROC", "profile", "run_container", "security_options"]
