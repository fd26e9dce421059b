"""Load TAQ quote CSV files into an hfq table, on a Ray cluster or embedded.

On a cluster (submitted from the repository, so the job ships this code)::

    ray job submit --address http://127.0.0.1:8265 --working-dir . -- \\
        python jobs/ingest.py --csv '/shared/taq/taq_*.csv'

Synthetic data first (deterministic; ``--out`` must be readable by every node)::

    python jobs/ingest.py --synth-days 2 --rows-per-day 20000 --out /shared/taq

Embedded, without a cluster::

    python jobs/ingest.py --address local --root ./hfq_data --csv data/taq_*.csv

Prints the load report, then one JSON line: ``{"job": "ingest", "rows": ..., "version": ...}``.
CSV paths are read by the nodes: give absolute paths (a job runs in a copy of the working
directory), globs or URLs.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import time

from common import check_connection_args, connect, job_parser, print_result

import hfq


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = job_parser(__doc__)
    p.add_argument("--table", default="quotes")
    p.add_argument("--csv", nargs="+", default=[], metavar="PATH",
                   help="CSV files, globs or URLs to load")
    p.add_argument("--synth-days", type=int, default=0, metavar="N",
                   help="first write N weekdays of synthetic TAQ CSV to --out, and load them")
    p.add_argument("--rows-per-day", type=int, default=1_000_000, metavar="R")
    p.add_argument("--symbols", type=int, default=500, help="distinct symbols of synthetic data")
    p.add_argument("--start", default="2007-08-01", help="first synthetic day (ISO)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", help="directory for the synthetic CSV files")
    p.add_argument("--replicas", type=int,
                   help="copies of each partition for a new table (default: min(2, nodes))")
    p.add_argument("--buckets", type=int, default=8, help="symbol hash buckets of a new table")
    args = p.parse_args(argv)
    if not args.csv and not args.synth_days:
        p.error("give --csv paths or --synth-days N (with --out)")
    if args.synth_days and not args.out:
        p.error("--synth-days needs --out, a directory every node can read")
    check_connection_args(p, args)
    return args


def weekdays(start: str, n: int) -> list[dt.date]:
    day, out = dt.date.fromisoformat(start), []
    while len(out) < n:
        if day.weekday() < 5:
            out.append(day)
        day += dt.timedelta(days=1)
    return out


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    paths = list(args.csv)
    if args.synth_days:
        out = os.path.abspath(args.out)
        os.makedirs(out, exist_ok=True)
        started = time.perf_counter()
        written = hfq.synth.taq_csv_files(out, dates=weekdays(args.start, args.synth_days),
                                          rows_per_day=args.rows_per_day,
                                          symbols=args.symbols, seed=args.seed)
        paths += [str(p) for p in written]
        print(f"wrote {len(written)} synthetic CSV files to {out} in "
              f"{time.perf_counter() - started:.2f} s", flush=True)

    db = connect(args)
    try:
        if args.table not in db:
            db.create_table(args.table, hfq.schemas.TAQ,
                            partition_by=hfq.Compo(hfq.Value("date"),
                                                   hfq.Hash("symbol", args.buckets)),
                            sort_by=("symbol", "time"), replicas=args.replicas)
        report = db.load_csv(args.table, paths, progress=False)
        print(report, flush=True)
        parts = db[args.table].partitions(version=report.version)
        copies = [len(set(nodes)) for nodes in parts["nodes"].to_list()]
        result = {
            "job": "ingest", "table": args.table, "rows": report.rows,
            "version": report.version, "files": len(report.files), "bytes": report.bytes,
            "seconds": round(report.seconds, 3), "rows_per_s": round(report.rows_per_s),
            "table_rows": len(db[args.table]), "partitions": parts.height,
            "min_copies": min(copies, default=0),
            "nodes": sorted({n for nodes in parts["nodes"].to_list() for n in nodes}),
        }
        return print_result(result)
    finally:
        db.close()


if __name__ == "__main__":
    main()
