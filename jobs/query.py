"""A query job: one SQL SELECT run where the data is (``hfq.Database.sql``).

The node stage (filters, computed columns, windows by symbol-day, partial aggregates, joins
with small tables) runs on the nodes holding each partition; the driver merges.  On a
cluster::

    ray job submit --address http://127.0.0.1:8265 --working-dir . -- \\
        python jobs/query.py "SELECT symbol, count(*) AS n FROM quotes GROUP BY symbol"

Embedded, without a cluster::

    python jobs/query.py --address local --root ./hfq_data "SELECT count(*) FROM quotes"

Prints one JSON line: ``{"job": "query", "rows": ..., "columns": [...], "head": [...],
"partitions": ..., "rows_to_driver": ..., "bytes_to_driver": ..., "seconds": ...}``;
``--out FILE`` also writes every row of the answer as Parquet (or CSV for ``*.csv``), and
``--write TABLE`` stores it as a table through hfq's write path.
"""

from __future__ import annotations

import argparse

from common import connect, job_parser, parse, print_result

from hfq.engine.write import write_frame


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = job_parser(__doc__)
    p.add_argument("query", help="one SQL SELECT over the database's tables")
    p.add_argument("--head", type=int, default=20, help="rows of the answer to print")
    p.add_argument("--out", default=None, help="write the whole answer to this file")
    p.add_argument("--write", default=None, metavar="TABLE",
                   help="store the answer as this new table")
    return parse(p, argv)


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    db = connect(args)
    try:
        query = db.sql(args.query)
        frame = query.collect()
        stats = query.last_run
        if args.out:
            if args.out.endswith(".csv"):
                frame.write_csv(args.out)
            else:
                frame.write_parquet(args.out)
        version = write_frame(query.source.session, query.source.manifest, args.write,
                              frame) if args.write else None
        result = {
            "job": "query", "query": args.query, "rows": frame.height,
            "columns": frame.columns, "head": frame.head(args.head).to_dicts(),
            "partitions": stats.partitions if stats else 0,
            "rows_to_driver": stats.rows_to_driver if stats else 0,
            "bytes_to_driver": stats.bytes_to_driver if stats else 0,
            "seconds": round(stats.seconds, 4) if stats else 0.0,
            "written": {"table": args.write, "version": version} if args.write else None,
        }
        return print_result(result)
    finally:
        db.close()


if __name__ == "__main__":
    main()
