"""``hfq publish`` and ``hfq tail``: a live feed from CSV files, and the rows as they arrive
(:mod:`hfq.live`)."""

from __future__ import annotations

import argparse
import sys

from hfq.cli.args import Command, positive, split
from hfq.cli.database import open_table
from hfq.cli.render import emit_json
from hfq.live.feed import publish_csv, tail

__all__ = ["PUBLISH", "TAIL"]


def _publish_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("table", help="the table to publish into (live rows)")
    p.add_argument("files", nargs="+", help="CSV files with a header naming the columns")
    p.add_argument("--rate", type=float, default=None, metavar="N",
                   help="rows per second (default: as fast as they go)")
    p.add_argument("--batch-rows", type=positive, default=1000, metavar="N",
                   help="rows per published batch (default 1000)")
    p.add_argument("--name", default=None,
                   help="the publisher's name: run again under it, numbering continues")


def _publish(args: argparse.Namespace) -> int:
    """``hfq publish quotes ticks.csv --rate 5000``: each batch durable before the next."""
    fed = publish_csv(open_table(args), args.files, rate=args.rate,
                      batch_rows=args.batch_rows, name=args.name)
    if args.json:
        emit_json({"rows": fed.rows, "batches": fed.batches, "seconds": fed.seconds,
                   "last_batch": fed.seq})
    else:
        print(f"published {fed.rows:,} rows in {fed.batches:,} batches in "
              f"{fed.seconds:.2f} s (last batch {fed.seq})")
    return 0


def _tail_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("table", help="the table whose live rows to print")
    p.add_argument("--symbols", type=split, default=None, metavar="A,B",
                   help="only these symbols (default: all)")
    p.add_argument("--start", default="now",
                   help="'now' (default), 'sod' (every live row of the day) or an offset "
                        "such as feed:120")
    p.add_argument("--batches", type=positive, default=None, metavar="N",
                   help="stop after N published batches (default: run until interrupted)")
    p.add_argument("--idle", type=float, default=None, metavar="S",
                   help="stop once nothing came for S seconds (default: never)")


def _tail(args: argparse.Namespace) -> int:
    """``hfq tail quotes --symbols IBM``: one line per row, as batches are acknowledged."""
    sub = open_table(args).subscribe(symbols=args.symbols, start=args.start, wait_s=0.2)
    write = print if not args.json else (lambda line: sys.stdout.write(line + "\n"))
    try:
        tail(sub, write, batches=args.batches, idle_s=args.idle)
    except KeyboardInterrupt:
        pass
    if args.json:
        emit_json({"offset": sub.offset})
    else:
        print(f"offset {','.join(f'{p}:{s}' for p, s in sorted(sub.offset.items()))}",
              file=sys.stderr)
    return 0


PUBLISH = Command("publish", "publish CSV rows into a table's live side, at a rate",
                  _publish_arguments, _publish)
TAIL = Command("tail", "print a table's rows as they are published", _tail_arguments, _tail)
