"""``hfq history``: what each commit of a table did, by whom, when and why."""

from __future__ import annotations

import argparse

from hfq.cli.args import Command, positive
from hfq.cli.database import open_table
from hfq.cli.render import cell, emit_json, grid, show

__all__ = ["HISTORY"]


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("table", help="the table")
    p.add_argument("--last", type=positive, default=None, metavar="N",
                   help="only the newest N commits (default: every version on record)")
    p.add_argument("--partitions", action="store_true",
                   help="one row per partition each commit touched, with its rows added "
                        "and removed")


def _history(args: argparse.Namespace) -> int:
    frame = open_table(args).history(partitions=args.partitions)
    if args.last is not None:
        versions = frame["version"].unique(maintain_order=True).head(args.last)
        frame = frame.filter(frame["version"].is_in(versions.implode()))
    if args.json:
        emit_json(frame.to_dicts())
        return 0
    if args.partitions:
        columns = ["version", "committed_at", "operation", "partition", "rows_added",
                   "rows_removed"]
    else:
        columns = ["version", "committed_at", "user", "operation", "rows_added",
                   "rows_removed", "partitions", "message", "job", "arguments"]
    show(grid(columns, ([cell(v) for v in row] for row in frame.select(columns).rows()),
              right=["version", "rows_added", "rows_removed", "partitions"]))
    return 0


HISTORY = Command("history", "what each commit did: when (UTC), who, operation, arguments, "
                  "rows added/removed, message, job", _arguments, _history)
