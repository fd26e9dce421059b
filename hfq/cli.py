"""The ``hfq`` command.

Examples
--------
::

    hfq demo --rows-per-day 2000000
    hfq synth taq data/ --days 5 --rows-per-day 1000000
    hfq create quotes --schema TAQ --partition date --hash symbol:100 --sort symbol,time
    hfq ingest quotes 'data/taq_*.csv'
    hfq tables
    hfq partitions quotes
    hfq scan quotes --dates 2007-08-01 --symbols IBM,MSFT --out ibm.csv
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from hfq.errors import HfqError
    try:
        return args.func(args) or 0
    except HfqError as exc:
        print(f"hfq: error: {exc}", file=sys.stderr)
        return 1


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hfq", description="Financial tick data, stored as "
                                "partitioned Arrow and computed where it lives.")
    p.add_argument("--root", default=None,
                   help="database directory or fsspec URL (default: $HFQ_ROOT or ./hfq_data)")
    sub = p.add_subparsers(metavar="COMMAND")

    d = sub.add_parser("demo", help="synthetic TAQ week -> CSV -> hfq; reads, a point query, "
                                    "timings against pickle")
    d.add_argument("--dir", default="hfq_demo", help="working directory (default ./hfq_demo)")
    d.add_argument("--days", type=int, default=5)
    d.add_argument("--rows-per-day", type=int, default=2_000_000)
    d.add_argument("--symbols", type=int, default=8000)
    d.set_defaults(func=_demo)

    s = sub.add_parser("synth", help="write synthetic data as CSV")
    s.add_argument("kind", choices=["taq", "readings"])
    s.add_argument("directory")
    s.add_argument("--days", type=int, default=1)
    s.add_argument("--rows-per-day", type=int, default=1_000_000)
    s.add_argument("--symbols", type=int, default=8000)
    s.add_argument("--devices", type=int, default=3000)
    s.set_defaults(func=_synth)

    c = sub.add_parser("create", help="create a table")
    c.add_argument("table")
    c.add_argument("--schema", required=True, help="TAQ, TRADES, L2, READINGS or DEVICE_INFO")
    c.add_argument("--partition", required=True, help="VALUE column, e.g. date")
    c.add_argument("--hash", default=None, help="second level COLUMN:BUCKETS, e.g. symbol:100")
    c.add_argument("--sort", default="", help="sort columns, comma separated")
    c.set_defaults(func=_create)

    i = sub.add_parser("ingest", help="load CSV files (paths, globs, URLs) into a table")
    i.add_argument("table")
    i.add_argument("paths", nargs="+")
    i.add_argument("--on-error", choices=["raise", "skip"], default="raise")
    i.add_argument("--rejects", default=None, help="where skipped rows go (with --on-error skip)")
    i.add_argument("--no-progress", action="store_true")
    i.set_defaults(func=_ingest)

    t = sub.add_parser("tables", help="list tables")
    t.set_defaults(func=_tables)

    pt = sub.add_parser("partitions", help="one line per partition of a table")
    pt.add_argument("table")
    pt.set_defaults(func=_partitions)

    sc = sub.add_parser("scan", help="read rows: print the plan, the first rows, or write CSV")
    sc.add_argument("table")
    sc.add_argument("--dates", default=None, help="DATE or FIRST,LAST")
    sc.add_argument("--symbols", default=None, help="comma separated")
    sc.add_argument("--columns", default=None, help="comma separated")
    sc.add_argument("--explain", action="store_true", help="print the plan only")
    sc.add_argument("--out", default=None, help="write the rows to this CSV file")
    sc.set_defaults(func=_scan)

    v = sub.add_parser("verify", help="check every file's checksum against the catalog")
    v.add_argument("table")
    v.set_defaults(func=_verify)

    va = sub.add_parser("vacuum", help="remove files of writers that died; forget old versions")
    va.add_argument("table")
    va.add_argument("--keep-versions", type=int, default=None)
    va.set_defaults(func=_vacuum)
    return p


def _db(args):
    import hfq
    return hfq.connect(args.root)


def _split(text: str | None) -> list[str] | None:
    return None if text is None else [x for x in text.split(",") if x]


def _create(args: argparse.Namespace) -> int:
    import hfq
    schema = getattr(hfq.schemas, args.schema.upper(), None)
    if not isinstance(schema, hfq.schema.Schema):
        raise hfq.errors.InvalidNameError(f"unknown schema {args.schema!r}; choose TAQ, TRADES, "
                                          "L2, READINGS or DEVICE_INFO")
    scheme: hfq.Value | hfq.Compo = hfq.Value(args.partition)
    if args.hash:
        column, _, buckets = args.hash.partition(":")
        scheme = hfq.Compo(hfq.Value(args.partition), hfq.Hash(column, int(buckets or 100)))
    _db(args).create_table(args.table, schema, partition_by=scheme,
                           sort_by=_split(args.sort) or ())
    print(f"created {args.table}")
    return 0


def _ingest(args: argparse.Namespace) -> int:
    report = _db(args).load_csv(args.table, args.paths, on_error=args.on_error,
                                reject_path=args.rejects,
                                progress=False if args.no_progress else None)
    print(report)
    return 0


def _tables(args: argparse.Namespace) -> int:
    db = _db(args)
    for name in db.tables():
        print(repr(db[name]))
    return 0


def _partitions(args: argparse.Namespace) -> int:
    import polars as pl
    with pl.Config(tbl_rows=-1, fmt_str_lengths=60):
        print(_db(args)[args.table].partitions())
    return 0


def _scan(args: argparse.Namespace) -> int:
    days = _split(args.dates)
    dates: str | tuple[str, ...] | None = None
    if days is not None:
        dates = days[0] if len(days) == 1 else tuple(days)
    scan = _db(args)[args.table].scan(columns=_split(args.columns), dates=dates,
                                      symbols=_split(args.symbols))
    if args.explain:
        print(scan.explain())
    elif args.out:
        print(f"wrote {scan.to_csv(args.out):,} rows to {args.out}")
    else:
        print(scan.to_polars())
    return 0


def _verify(args: argparse.Namespace) -> int:
    print(f"{_db(args)[args.table].verify()} files match their checksums")
    return 0


def _vacuum(args: argparse.Namespace) -> int:
    print(_db(args)[args.table].vacuum(keep_versions=args.keep_versions))
    return 0


def _synth(args: argparse.Namespace) -> int:
    import datetime as dt
    import os

    from hfq import synth
    os.makedirs(args.directory, exist_ok=True)
    if args.kind == "taq":
        first = dt.date(2007, 8, 1)
        dates = [(first + dt.timedelta(days=k)).isoformat() for k in range(args.days)]
        for written in synth.taq_csv_files(args.directory, dates=dates,
                                           rows_per_day=args.rows_per_day,
                                           symbols=args.symbols):
            print(written)
    else:
        path = os.path.join(args.directory, "readings.csv")
        synth.write_readings_csv(path, days=args.days, devices=args.devices)
        synth.write_device_info_csv(os.path.join(args.directory, "device_info.csv"),
                                    devices=args.devices)
        print(path)
    return 0


def _demo(args: argparse.Namespace) -> int:
    from hfq.demo import run_demo
    run_demo(args.dir, days=args.days, rows_per_day=args.rows_per_day, symbols=args.symbols)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
