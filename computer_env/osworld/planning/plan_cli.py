"""The ``plan`` subcommand: per domain, how many tasks can run here (see :mod:`.plan`)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from computer_env.desktop.client import DesktopClient
from computer_env.desktop.providers.local.provider import LocalSandboxProvider
from computer_env.desktop.providers.remote import split_url_token
from computer_env.errors import ConfigurationError, InfraError
from computer_env.osworld.catalog.tasks import load_builtin_tasks, load_tasks
from computer_env.osworld.errors import TaskLoadError
from computer_env.osworld.planning.needs_check import DesktopNeedsChecker, OnlineProbe
from computer_env.osworld.planning.plan import EMBEDDED_DIFFERENCES, evaluation_support, make_plan
from computer_env.osworld.upstream.loader import osworld_source, use_checkout


def add_plan_parser(sub: Any) -> None:
    """Register ``plan`` on the subcommand parsers of ``python -m computer_env.osworld``."""
    p = sub.add_parser("plan", help="how many tasks of a list can run here, and why not")
    p.add_argument(
        "--osworld-root",
        type=Path,
        default=None,
        help="OSWorld checkout or evaluation_examples folder (default: built-in)",
    )
    p.add_argument(
        "--task-list",
        default="test_all",
        help="test_all|test_nogdrive|test_small|test_infeasible or a JSON file",
    )
    p.add_argument("--domain", action="append", default=None, help="only this domain")
    p.add_argument(
        "--cache-dir",
        type=Path,
        default=Path("results/.cache"),
        help="the suite's cache dir (downloads in DIR/downloads; default "
        "results/.cache, as the suite's default --cache-dir)",
    )
    p.add_argument(
        "--vm-url",
        default=None,
        metavar="URL[#TOKEN]",
        help="ask this running desktop what it has (default: start a local one)",
    )
    p.add_argument(
        "--unsandboxed",
        action="store_true",
        help="start the local desktop without the bubblewrap sandbox",
    )
    net = p.add_mutually_exclusive_group()
    net.add_argument(
        "--online",
        dest="online",
        action="store_true",
        default=None,
        help="count tasks as if the internet were reachable while they run",
    )
    net.add_argument(
        "--offline",
        dest="online",
        action="store_false",
        help="count tasks as if this machine were offline",
    )
    p.add_argument(
        "--net-probe-url",
        default="http://example.com/",
        help="URL fetched to decide whether this machine is online",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="also print the counts as one JSON object on the last line",
    )


def load_args_tasks(args: argparse.Namespace) -> list[Any] | None:
    """The tasks ``--osworld-root``, ``--task-list`` and ``--domain`` name (built-in ones without a
    root); None, the error printed, when they do not load."""
    try:
        return (
            load_tasks(args.osworld_root, args.task_list, args.domain)
            if args.osworld_root
            else load_builtin_tasks(args.task_list, args.domain)
        )
    except TaskLoadError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return None


def run_plan(args: argparse.Namespace) -> int:
    """Load the tasks, ask a desktop what it has, print the table (and the JSON line). Tasks
    are judged by the OSWorld code a run would use: the checkout under ``--osworld-root`` when
    it has ``desktop_env/``, else the installed package (the first line says which)."""
    tasks = load_args_tasks(args)
    if tasks is None:
        return 2
    use_checkout(args.osworld_root)
    online = args.online if args.online is not None else OnlineProbe(args.net_probe_url)()
    print(
        f"{len(tasks)} tasks; asking the desktop what it has; {'online' if online else 'offline'}",
        file=sys.stderr,
        flush=True,
    )
    try:
        with _desktop(args) as (client, key, embedded):
            plan = make_plan(
                tasks,
                lambda needs: DesktopNeedsChecker().probe(client, key, needs),
                download_cache=args.cache_dir / "downloads",
                online=online,
                unsupported=evaluation_support(embedded),
            )
    except (ConfigurationError, InfraError) as exc:
        print(f"error: no desktop to ask: {exc}", file=sys.stderr)
        return 1
    print(plan.table())
    print(f"judged with OSWorld's setup, getters and metrics: {osworld_source()}")
    if embedded:
        print(
            "embedded desktop: comparable between runs, not with published OSWorld numbers; "
            "where it differs from OSWorld's VM:"
        )
        print("\n".join(f"  - {line}" for line in EMBEDDED_DIFFERENCES))
    if args.json:
        print(json.dumps(plan.to_json(), sort_keys=False))
    return 0


@contextmanager
def _desktop(args: argparse.Namespace) -> Iterator[tuple[Any, str, bool]]:
    """(client, key, embedded) for ``--vm-url``, or for a local desktop started (and closed)
    here; ``embedded``: one of this project's desktops (they want a token)."""
    provider: Any = None
    if args.vm_url:
        url, token = split_url_token(args.vm_url)
    else:
        provider = LocalSandboxProvider(unsandboxed=args.unsandboxed)
    try:
        if provider is not None:
            handle = provider.start()
            url, token = handle.url, handle.token
        with DesktopClient(url, token, timeout=90.0) as client:
            yield client, url, token is not None
    finally:
        if provider is not None:
            provider.close()


__all__ = ["add_plan_parser", "run_plan"]
