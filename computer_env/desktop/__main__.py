"""``python -m computer_env.desktop run``: one local desktop in the foreground.

Prints ONE JSON line ``{"url": ..., "token": ..., "display": ...}`` (plus ``guest_host``,
``osworld_url`` and ``osworld_ports``) once the desktop's server answers, then waits until
SIGINT/SIGTERM and removes everything it started. ``osworld_url`` is for OSWorld's own code
(``PythonController(vm_ip, server_port)``, ``SetupController``, getters): no token, reachable
from this host only (``osworld_ports`` gives its ``server``, ``cdp`` and ``vlc`` ports).
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
    p = argparse.ArgumentParser(prog="python -m computer_env.desktop",
                                description="Local OSWorld-compatible desktops.")
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="start a local desktop in the foreground")
    run.add_argument("--width", type=int, default=1920)
    run.add_argument("--height", type=int, default=1080)
    run.add_argument("--allow-port", type=int, action="append", default=[], metavar="PORT",
                     help="host TCP port the desktop may reach (repeatable)")
    run.add_argument("--unsandboxed", action="store_true",
                     help="run WITHOUT the bubblewrap sandbox (actions run on this host)")
    run.add_argument("--log-level", default="WARNING")
    return p


def run(args: argparse.Namespace) -> int:
    """Start, print the JSON line, wait for a signal, clean up."""
    stop = threading.Event()

    def _stop(signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    provider = LocalSandboxProvider(width=args.width, height=args.height,
                                    unsandboxed=args.unsandboxed)
    try:
        for port in args.allow_port:
            provider.allow_host_port(port)
        handle = provider.start()
        line = {"url": handle.url, "token": handle.token, "display": handle.display,
                "guest_host": handle.guest_host, "osworld_url": handle.osworld_url,
                "osworld_ports": handle.osworld_ports}
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
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
