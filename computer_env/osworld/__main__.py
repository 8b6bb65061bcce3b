"""``python -m computer_env.osworld prefetch --osworld-root R --task-list L --cache DIR``:
download every file a task list needs (setup downloads and evaluator ``cloud_file`` gold files)
into the shared cache ``DIR/downloads`` ahead of a run (layout: :mod:`.download`; copy that
folder to an offline machine's cache dir to run there without internet).

``python -m computer_env.osworld plan [--osworld-root DIR] [--task-list L] [--json]``: per
domain, how many tasks can run here, once their files are cached, or not (which app, why)."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from computer_env.osworld.catalog.download import prefetch
from computer_env.osworld.planning.plan_cli import add_plan_parser, load_args_tasks, run_plan


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m computer_env.osworld")
    sub = parser.add_subparsers(dest="command", required=True)
    pre = sub.add_parser(
        "prefetch",
        help="fill the download cache for a task list (setup "
        "downloads and evaluator cloud_file gold files)",
    )
    pre.add_argument(
        "--osworld-root",
        type=Path,
        default=None,
        help="OSWorld checkout or evaluation_examples folder (default: built-in)",
    )
    pre.add_argument(
        "--task-list",
        default="test_all",
        help="test_all|test_nogdrive|test_small|test_infeasible or a JSON file",
    )
    pre.add_argument("--domain", action="append", default=None, help="only this domain")
    pre.add_argument(
        "--cache",
        type=Path,
        required=True,
        help="the cache folder (the suite's cache dir; downloads go to DIR/downloads)",
    )
    add_plan_parser(sub)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    if args.command == "plan":
        return run_plan(args)
    tasks = load_args_tasks(args)
    if tasks is None:
        return 2

    def progress(i: int, n: int, url: str, status: str) -> None:
        print(f"[{i}/{n}] {status:8.60s} {url}", flush=True)
        if status.startswith(("failed", "refused")):
            print(f"error: {status}", file=sys.stderr, flush=True)

    result = prefetch(tasks, args.cache / "downloads", progress=progress)
    print(
        f"{len(tasks)} tasks, {result.total} files: {result.fetched} fetched, "
        f"{result.cached} already cached, {len(result.failed)} failed; "
        f"{result.bytes / 1e6:.1f} MB in {args.cache / 'downloads'}"
    )
    return 1 if result.failed else 0


if __name__ == "__main__":
    sys.exit(main())
