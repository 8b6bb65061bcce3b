"""``python -m computer_env.desktop run``: one local desktop in the foreground;
``python -m computer_env.desktop sweep``: remove what dead local desktops left on this host.

Prints ONE JSON line ``{"url": ..., "token": ..., "display": ...}`` (plus ``guest_host``,
``osworld_url`` and ``osworld_ports``) once the desktop's server answers, then waits until
SIGINT/SIGTERM and removes everything it started. ``osworld_url`` is for OSWorld's own code
(``PythonController(vm_ip, server_port)``, ``SetupController``, getters): no token, reachable
from this host only (``osworld_ports`` gives its ``server``, ``cdp`` and ``vlc`` ports).

``sweep`` removes the stale leftovers of local desktops whose owner process and run are gone
(network namespaces, veth pairs, firewall chains, session cgroups, run records; see
``computer_env.desktop.providers.local.ownership``), prints what it removed as one JSON line and
never touches a live desktop or what a live run's dead worker left (``--run ID`` removes that
run's too). Needs root, as the sandbox itself.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
from types import FrameType

from computer_env.desktop.providers.local.provider import LocalSandboxProvider
from computer_env.errors import ConfigurationError, InfraError


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m computer_env.desktop", description="Local OSWorld-compatible desktops."
    )
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="start a local desktop in the foreground")
    run.add_argument("--width", type=int, default=1920)
    run.add_argument("--height", type=int, default=1080)
    run.add_argument(
        "--allow-port",
        type=int,
        action="append",
        default=[],
        metavar="PORT",
        help="host TCP port the desktop may reach (repeatable)",
    )
    run.add_argument(
        "--unsandboxed",
        action="store_true",
        help="run WITHOUT the bubblewrap sandbox (actions run on this host)",
    )
    run.add_argument("--log-level", default="WARNING")
    sweep = sub.add_parser("sweep", help="remove what dead local desktops left on this host")
    sweep.add_argument(
        "--run",
        metavar="ID",
        default=None,
        help="also remove what this run's dead desktops left (its id, from a "
        "netns slot's lock file or a cgroup's name) while the run lives",
    )
    sweep.add_argument("--log-level", default="WARNING")
    return p


def sweep(args: argparse.Namespace) -> int:
    """Remove stale leftovers, print what was removed; 2 without root."""
    import os

    from computer_env.desktop.providers.local import ownership
    from computer_env.desktop.providers.local.cleanup import sweep_leftovers

    if os.geteuid() != 0:
        print(
            "sweep needs root (the local desktops' namespaces and cgroups are root's)",
            file=sys.stderr,
        )
        return 2
    by = ownership.explicit_sweeper()
    if args.run:
        if not ownership.RUN_ID.match(args.run):
            print(f"--run {args.run!r}: not a run id (8 to 32 hex digits)", file=sys.stderr)
            return 2
        owner = ownership.lookup(args.run) or ownership.Run(args.run, 0, 0, "")
        by = ownership.Sweeper(owner, foreign_runs_gone=True)
    swept = sweep_leftovers(by)
    print(
        json.dumps(
            {"slots": swept.slots, "cgroups": [str(c) for c in swept.cgroups], "runs": swept.runs}
        ),
        flush=True,
    )
    return 0


def run(args: argparse.Namespace) -> int:
    """Start, print the JSON line, wait for a signal, clean up."""
    stop = threading.Event()

    def _stop(signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    provider = LocalSandboxProvider(
        width=args.width, height=args.height, unsandboxed=args.unsandboxed
    )
    try:
        for port in args.allow_port:
            provider.allow_host_port(port)
        handle = provider.start()
        line = {
            "url": handle.url,
            "token": handle.token,
            "display": handle.display,
            "guest_host": handle.guest_host,
            "osworld_url": handle.osworld_url,
            "osworld_ports": handle.osworld_ports,
        }
        print(json.dumps(line), flush=True)
        while not stop.wait(1.0):
            if not provider.is_alive() and not stop.is_set():
                logging.getLogger(__name__).error("the desktop died")
                return 1
        return 0
    except ConfigurationError as exc:
        print(f"configuration error: {exc}", file=sys.stderr)
        return 2
    except InfraError as exc:
        print(f"desktop failed: {exc}\n{exc.detail or ''}", file=sys.stderr)
        return 1
    finally:
        provider.close()


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    return sweep(args) if args.command == "sweep" else run(args)


if __name__ == "__main__":
    sys.exit(main())
