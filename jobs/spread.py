"""The intraday quoted-spread curve of a TAQ table: ``avg((ofr - bid) / (ofr + bid) * 2)`` by
minute of day over the session, computed where the partitions are stored.

On a cluster::

    ray job submit --address http://127.0.0.1:8265 --working-dir . -- \\
        python jobs/spread.py --dates 2007-08-01 2007-08-07

Embedded (a one-node Ray in this process)::

    python jobs/spread.py --address local --root ./hfq_data --plot spread.png

Prints the curve, then one JSON line: ``{"job": "spread", "minutes": ..., "quotes": ...,
"avg_spread": ..., "curve": [[minute, avg_spread, n], ...], "seconds": ...}``.
"""

from __future__ import annotations

import argparse
import time

from common import add_selection_args, connect, job_parser, parse, print_result, selection

from hfq import analytics as ha


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = job_parser(__doc__)
    add_selection_args(p)
    p.add_argument("--start", default="09:30:00", help="session start (inclusive)")
    p.add_argument("--end", default="15:59:59", help="session end (inclusive)")
    p.add_argument("--max-ratio", type=float, default=1.2, help="keep quotes with ofr/bid below")
    p.add_argument("--plot", metavar="PNG", help="also draw the curve into this PNG file")
    args = parse(p, argv)
    return args


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    db = connect(args)
    try:
        table = db[args.table]
        db.session.nodes_for(start=True)      # (embedded: starts Ray now, not in the timing)
        started = time.perf_counter()
        curve = ha.spread_by_minute(table, start=args.start, end=args.end,
                                    max_ratio=args.max_ratio, progress=False, **selection(args))
        seconds = time.perf_counter() - started
        print(curve)
        if args.plot:
            from hfq.demo import plot_spread
            plot_spread(curve, args.plot, title=f"{args.table}: quoted spread by minute")
        quotes = int(curve["n"].sum())
        mean = float((curve["avg_spread"] * curve["n"]).sum() / quotes) if quotes else None
        return print_result({
            "job": "spread", "table": args.table, "minutes": curve.height, "quotes": quotes,
            "avg_spread": mean, "seconds": round(seconds, 3), "plot": args.plot,
            "curve": [[m.isoformat(), a, n] for m, a, n in curve.iter_rows()]})
    finally:
        db.close()


if __name__ == "__main__":
    main()
