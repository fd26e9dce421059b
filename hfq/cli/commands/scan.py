"""``hfq scan``: a table's rows (``--dates``, ``--symbols``, ``--where``) -- the first ones as a
table, every one as CSV, or the plan.

``--where`` is a SQL condition, compiled by the SQL compiler as the ``WHERE`` of
``SELECT * FROM <table> WHERE <it>`` would be (:func:`hfq.engine.sql.where.compile_where`):
one filter language with ``hfq sql``, and the same errors, with their line and column.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import cast

import polars as pl
import pyarrow as pa

from hfq.cli.args import Command, UsageError, dates, non_negative, split
from hfq.cli.database import open_table
from hfq.cli.render import cell, columns_that_fit, emit_json, grid, show, width
from hfq.errors import SqlError
from hfq.schema import Schema

__all__ = ["SCAN"]


def _arguments(sc: argparse.ArgumentParser) -> None:
    sc.add_argument("table", help="the table")
    sc.add_argument("--dates", default=None, type=dates, metavar="DATE[,LAST]",
                    help="one date, or an inclusive FIRST,LAST range (either may be empty), "
                         "YYYY-MM-DD or YYYYMMDD (default: all)")
    sc.add_argument("--symbols", default=None, metavar="SYMS",
                    help="comma separated (default: all)")
    sc.add_argument("--columns", default=None, metavar="COLS",
                    help="comma separated, in this order (default: all)")
    sc.add_argument("--where", default=None, metavar="EXPR",
                    help="a row filter in SQL, as after WHERE in hfq sql: comparisons, AND, OR, "
                         "NOT, arithmetic, IN (...), BETWEEN, LIKE, IS NULL, CASE, functions; "
                         "e.g. \"bid > 0 AND ofr > bid\" or \"symbol IN ('IBM','MSFT') AND "
                         "time >= '09:30'\" (default: none)")
    sc.add_argument("--at-version", type=non_negative, default=None,
                    metavar="N", help="read committed version N (default: the newest)")
    sc.add_argument("--limit", type=non_negative, default=10,
                    help="rows to show (with --json: to include as 'head')")
    sc.add_argument("--explain", action="store_true",
                    help="print the plan (partitions and batches kept/pruned) only")
    sc.add_argument("--out", default=None, metavar="FILE",
                    help="write every matching row to this CSV file (default: none)")


def _scan(args: argparse.Namespace) -> int:
    t = open_table(args)
    schema = t.schema if args.at_version is None else t.snapshot(args.at_version).schema
    where = None if args.where is None else _where(args.where, schema)
    scan = t.scan(columns=split(args.columns), where=where, dates=args.dates,
                  symbols=split(args.symbols), version=args.at_version)
    version = t.version if args.at_version is None else args.at_version
    head = {"table": t.name, "version": version}
    if args.explain:
        plan = scan.explain()
        if args.json:
            emit_json({**head, "plan": plan})
        else:
            print(plan)
        return 0
    if args.out:
        rows = scan.to_csv(args.out)
        if args.json:
            emit_json({**head, "rows": rows, "out": args.out})
        else:
            print(f"wrote {rows:,} rows to {args.out}")
        return 0
    first = _head(scan.iter_arrow(), args.limit)
    rows = scan.count()
    frame = pl.from_arrow(first) if first is not None else pl.DataFrame()
    assert isinstance(frame, pl.DataFrame)
    if args.json:
        emit_json({**head, "rows": rows, "columns": frame.columns or
                   split(args.columns) or schema.names,
                   "head": frame.to_dicts()})
        return 0
    shown = f" (first {frame.height:,} shown)" if 0 < frame.height < rows else ""
    if not frame.height:
        print(f"{rows:,} rows{shown}")
        return 0
    cells = [[cell(v) for v in row] for row in frame.iter_rows()]
    numeric = [name for name, dtype in frame.schema.items() if dtype.is_numeric()]
    table = grid(frame.columns, cells, right=numeric)
    fits = columns_that_fit(table, width())
    hidden = len(frame.columns) - fits
    if hidden:
        table = grid(frame.columns[:fits], [row[:fits] for row in cells], right=numeric)
        shown += f"; {hidden} more columns not shown (choose with --columns, or --json)"
    show(table, f"{rows:,} rows{shown}")
    return 0


def _where(text: str, schema: Schema) -> pl.Expr:
    """``--where`` compiled over the table's columns; a filter that cannot be is a usage
    error naming where in the text."""
    from hfq.engine.sql.where import compile_where  # sqlglot loads only for a --where
    columns = cast(pl.DataFrame, pl.from_arrow(schema.arrow.empty_table())).schema
    try:
        return compile_where(text, columns)
    except SqlError as exc:
        raise UsageError(f"--where: {exc}") from exc


def _head(batches: Iterable[pa.Table], limit: int) -> pa.Table | None:
    """The first ``limit`` rows of a stream of tables, reading no further than needed."""
    got: list[pa.Table] = []
    have = 0
    for table in batches:
        if have >= limit:
            break
        got.append(table.slice(0, limit - have))
        have += got[-1].num_rows
        if have >= limit:
            break
    if not got:
        return None
    return pa.concat_tables(got)


SCAN = Command("scan", "read rows (--dates, --symbols, --where): the first rows, the plan, or CSV",
               _arguments, _scan)
