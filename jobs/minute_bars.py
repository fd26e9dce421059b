"""Bars (1 minute by default) of a quotes or trades table, computed on the node of each
partition and written back there into a destination table, committed as one version.

On a cluster::

    ray job submit --address http://127.0.0.1:8265 --working-dir . -- \\
        python jobs/minute_bars.py --dest quotes_1m --bar 1m --dates 2007-08-01 2007-08-31

Embedded::

    python jobs/minute_bars.py --address local --root ./hfq_data --dest quotes_5m --bar 5m

Running it again over the same dates and symbols replaces those bars.  Prints one JSON line:
``{"job": "minute_bars", "rows": ..., "dest": ..., "version": ..., "partitions": ...}``.
"""

from __future__ import annotations

import argparse
import time

from common import add_selection_args, connect, job_parser, parse, print_result, selection

from hfq import analytics as ha


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = job_parser(__doc__)
    add_selection_args(p)
    p.add_argument("--dest", default=None, help="destination table (default: <table>_<bar>)")
    p.add_argument("--bar", default="1m", help="bar length: 30s, 1m, 5m, 1h, ...")
    args = parse(p, argv)
    return args


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    dest = args.dest or f"{args.table}_{args.bar}"
    db = connect(args)
    try:
        table = db[args.table]
        db.session.nodes_for(start=True).alive()
        started = time.perf_counter()
        rows = ha.minute_bars(table, dest, bar=args.bar, progress=False, **selection(args))
        seconds = time.perf_counter() - started
        bars = db[dest]
        print(bars.to_polars().head(10))
        return print_result({
            "job": "minute_bars", "table": args.table, "dest": dest, "bar": args.bar,
            "rows": rows, "dest_rows": len(bars), "version": bars.version,
            "partitions": len(bars.snapshot().partitions), "seconds": round(seconds, 3)})
    finally:
        db.close()


if __name__ == "__main__":
    main()
