"""``python -m holo_agent.replay DIR [--self-contained]``: write DIR/replay.html."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from holo_agent.replay.page import render_replay


def main(argv: list[str] | None = None) -> int:
    """CLI: render the replay page of a task folder."""
    ap = argparse.ArgumentParser(
        prog="python -m holo_agent.replay", description="Render a task folder's replay page."
    )
    ap.add_argument("task_dir", type=Path)
    ap.add_argument("--self-contained", action="store_true", help="inline images as data URLs")
    args = ap.parse_args(argv)
    if not args.task_dir.is_dir():
        print(f"not a folder: {args.task_dir}", file=sys.stderr)
        return 2
    print(render_replay(args.task_dir, self_contained=args.self_contained))
    return 0


if __name__ == "__main__":
    sys.exit(main())
