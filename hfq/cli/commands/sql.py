"""``hfq sql``: one SQL ``SELECT`` over the tables, run next to the data."""

from __future__ import annotations

import argparse

from hfq.cli.args import Command, non_negative
from hfq.cli.database import open_db
from hfq.cli.render import cell, emit_json, grid, show

__all__ = ["SQL"]


def _arguments(sq: argparse.ArgumentParser) -> None:
    sq.add_argument("query", help="one SELECT, e.g. \"SELECT symbol, count(*) FROM quotes "
                                  "GROUP BY symbol\"")
    sq.add_argument("--limit", type=non_negative, default=20,
                    help="rows to show (with --json: to include)")
    sq.add_argument("--explain", action="store_true",
                    help="print the plan (node and driver stages, partitions) only")
    sq.add_argument("--out", default=None, metavar="FILE",
                    help="write every row of the answer to this CSV file (default: none)")


def _sql(args: argparse.Namespace) -> int:
    """``hfq sql "SELECT ..."``: the answer as a table, JSON, CSV, or the plan."""
    query = open_db(args).sql(args.query)
    if args.explain:
        plan = query.explain()
        if args.json:
            emit_json({"query": args.query, "plan": plan})
        else:
            print(plan)
        return 0
    frame = query.collect()
    if args.out:
        frame.write_csv(args.out)
        if args.json:
            emit_json({"rows": frame.height, "out": args.out})
        else:
            print(f"wrote {frame.height:,} rows to {args.out}")
        return 0
    head = frame.head(args.limit)
    if args.json:
        emit_json({"rows": frame.height, "columns": frame.columns,
                   "rows_shown": head.height, "head": head.to_dicts()})
        return 0
    shown = f" (first {head.height:,} shown)" if head.height < frame.height else ""
    if not head.height:
        print(f"{frame.height:,} rows")
        return 0
    cells = [[cell(v) for v in row] for row in head.iter_rows()]
    numeric = [name for name, dtype in head.schema.items() if dtype.is_numeric()]
    show(grid(head.columns, cells, right=numeric), f"{frame.height:,} rows{shown}")
    return 0


SQL = Command("sql", "run one SQL SELECT over the tables (DuckDB/Postgres flavour), next to the "
              "data", _arguments, _sql)
