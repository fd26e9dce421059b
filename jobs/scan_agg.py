"""A compute job: row count, sum of bid and mean quoted spread of a TAQ table, where the data is.

Each partition is reduced on a node that holds it (``Table.map_reduce``); only four numbers per
partition travel.  On a cluster::

    ray job submit --address http://127.0.0.1:8265 --working-dir . -- \\
        python jobs/scan_agg.py --dates 2007-08-01 2007-08-31

Embedded, without a cluster (starts a one-node Ray in this process)::

    python jobs/scan_agg.py --address local --root ./hfq_data

Prints one JSON line: ``{"job": "scan_agg", "rows": ..., "sum_bid": ..., "quoted_rows": ...,
"mean_spread": ..., "partitions": ..., "seconds": ...}``.  The spread ``ofr - bid`` (dollars)
is averaged over the clean quotes (``quoted_rows``): ``hfq.quality.clean_quotes()``, the
filter every analytics example uses -- positive prices, no sentinel offers (214748.3647),
not crossed, ``ofr/bid < 1.2``.  Without it, the sentinel offers that real TAQ files (and
``hfq.synth``) carry make the mean spread hundreds of dollars.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import polars as pl
from common import connect, job_parser, parse, print_result

from hfq import reduce as hr
from hfq.quality import clean_quotes


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = job_parser(__doc__)
    p.add_argument("--table", default="quotes")
    p.add_argument("--dates", nargs=2, metavar=("FIRST", "LAST"),
                   help="inclusive ISO date range (default: every date)")
    args = parse(p, argv)
    return args


def partial(df: pl.DataFrame) -> np.ndarray:
    """One partition -> [rows, sum of bid, clean quotes, sum of their spreads]."""
    quoted = df.filter(clean_quotes())
    spread = (quoted["ofr"] - quoted["bid"]).sum()
    return np.array([df.height, df["bid"].sum(), quoted.height, spread], dtype=np.float64)


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    db = connect(args)
    try:
        table = db[args.table]
        version = table.version                 # plan and compute on the same snapshot
        dates = tuple(args.dates) if args.dates else None
        columns = ["bid", "ofr"]
        partitions = len(table.scan(columns=columns, dates=dates, version=version).plan.units)
        # (embedded: starts Ray now, not in the timing)
        nodes = db.session.nodes_for(start=True).alive()
        started = time.perf_counter()
        total = table.map_reduce(partial, hr.Sum(), columns=columns, dates=dates,
                                 version=version, progress=False)
        seconds = time.perf_counter() - started
        rows, sum_bid, quoted, sum_spread = (np.zeros(4) if np.isscalar(total) else total)
        result = {
            "job": "scan_agg", "table": args.table, "version": version,
            "dates": list(dates) if dates else None, "rows": int(rows),
            "sum_bid": float(sum_bid), "quoted_rows": int(quoted),
            "mean_spread": float(sum_spread / quoted) if quoted else None,
            "partitions": partitions, "nodes": len(nodes),
            "seconds": round(seconds, 3),
        }
        return print_result(result)
    finally:
        db.close()


if __name__ == "__main__":
    main()
