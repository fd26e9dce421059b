"""``rowid``: each row's position in its table version's storage order (SQL's arrival-order
pseudo-column, as DuckDB's ``rowid``).

The storage order of a version: its partitions in the planner's order (partition groups --
days under the default scheme -- in key order, then the partitions of a group in path order),
each partition's files in commit order, each file's rows in file order.  ``rowid`` counts rows
in that order from 0.  It is unique and stable for a version (a later version -- an append, a
compaction -- may number rows differently), and it does not depend on the query: the filters,
``dates=``/``symbols=`` and pruned partitions or record batches change which rows are read,
never their numbers.

It is computed on the nodes, before any row filter: the plan knows where each partition starts
(the row counts of the partitions before it, from the version's manifest) and, per file, where
each record batch starts (the batches' row counts); a partition's reader numbers the rows of
the batches it reads, then merges its files by the table's sort order as every read does.

Examples
--------
>>> import hfq, tempfile
>>> db = hfq.connect(tempfile.mkdtemp())
>>> t = db.create_table("quotes", hfq.schemas.TAQ, partition_by=hfq.Value("date"),
...                     sort_by=("symbol", "time"))
>>> _ = t.append(hfq.synth.taq_table(dates=["2007-08-01", "2007-08-02"], rows_per_day=50,
...                                   symbols=3))
>>> db.sql("SELECT date, min(rowid) AS lo, max(rowid) AS hi FROM quotes GROUP BY date "
...        "ORDER BY date").collect().rows()
[(datetime.date(2007, 8, 1), 0, 49), (datetime.date(2007, 8, 2), 50, 99)]
>>> db.sql("SELECT rowid, symbol FROM quotes WHERE symbol = 'IBM' AND rowid > 50 "
...        "ORDER BY rowid LIMIT 1").collect().rows()   # filtered rows keep their numbers
[(58, 'IBM')]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from hfq.catalog.records import Manifest, Partitions, group_of
from hfq.query.plan import Filters, Unit
from hfq.query.read import ReadSpec, read_unit
from hfq.storage.sort import sort_rows

__all__ = ["ROWID", "partition_offsets", "read_with_rowid"]

ROWID = "__rowid"
"""The frame column holding ``rowid`` (SQL names it ``rowid``)."""


def partition_offsets(manifest: Manifest, paths: Iterable[str]) -> dict[str, int]:
    """The ``rowid`` of the first row of each partition in ``paths`` (paths of
    ``manifest``'s partitions): the rows of every partition before it in storage order.  A
    format-2 version reads the pieces of the groups holding ``paths`` only (the others count
    by their references' totals).

    Examples
    --------
    >>> m = quotes.snapshot()
    >>> offsets = partition_offsets(m, m.partitions)
    >>> [(p, offsets[p], m.partitions[p].rows) for p in list(m.partitions)[:3]]
    [('date=v2007-08-01/symbol=h0', 0, 3126), ('date=v2007-08-01/symbol=h1', 3126, 1874), \
('date=v2007-08-02/symbol=h0', 5000, 3619)]
    """
    wanted = set(paths)
    parts = manifest.partitions
    out: dict[str, int] = {}
    if isinstance(parts, Partitions):
        groups = {group_of(p) for p in wanted}
        base = 0
        for group, ref in parts.refs.items():
            if group in groups:
                _count(parts.group(group).items(), wanted, base, out)
            base += ref.rows
    else:
        _count(parts.items(), wanted, 0, out)
    missing = wanted - set(out)
    if missing:
        raise KeyError(f"partitions not in version {manifest.version} of "
                       f"{manifest.table!r}: {', '.join(sorted(missing))}")
    return out


def _count(items: Iterable[tuple[str, Any]], wanted: set[str], start: int,
           out: dict[str, int]) -> None:
    offset = start
    for path, entry in items:
        if path in wanted:
            out[path] = offset
        offset += entry.rows


def read_with_rowid(node: Any, spec: ReadSpec, unit: Unit, first: int) -> pl.DataFrame:
    """The rows of ``unit`` (a partition whose first row is ``first``) in the order every
    read gives them, with their :data:`ROWID`: every row of the batches kept, before the
    ``dates=``/``symbols=``/``where`` filters (the query applies them as row filters)."""
    f = spec.filters
    columns = list(dict.fromkeys([*spec.columns, *spec.sort_by]))
    plain = dataclasses.replace(spec, columns=columns, where=None, where_columns=[],
                                filters=Filters(f.date_column, None, None, f.symbol_column,
                                                None))
    tables: list[pa.Table] = []
    offset = first
    for fragment, batches in zip(unit.fragments, unit.batches):
        sizes = [b.rows for b in fragment.batches]
        if batches is None or batches:
            one = dataclasses.replace(unit, fragments=(fragment,), batches=(batches,),
                                      exact=True)
            table = read_unit(node.store, plain, one, node.name,
                              cache=getattr(node, "cache", None))
            if not sizes:   # no batch statistics: the whole file, in order
                ids = np.arange(offset, offset + table.num_rows, dtype=np.int64)
            else:
                starts = np.concatenate([[0], np.cumsum(sizes)])
                kept = range(len(sizes)) if batches is None else batches
                ids = np.concatenate([np.arange(offset + starts[b], offset + starts[b + 1],
                                                dtype=np.int64) for b in kept]) \
                    if len(kept) else np.zeros(0, dtype=np.int64)
            if len(ids) != table.num_rows:
                raise ValueError(f"rowid: partition {unit.partition} file {fragment.file} "
                                 f"gave {table.num_rows:,} rows, its batches hold {len(ids):,}")
            tables.append(table.append_column(ROWID, pa.array(ids)))
        offset += fragment.rows
    if not tables:
        schema = spec.schema.select(columns).arrow.append(pa.field(ROWID, pa.int64()))
        table = schema.empty_table()
    elif len(tables) == 1:
        table = tables[0]
    else:   # the files merged by the table's order, as every read merges them
        table = sort_rows(pa.concat_tables(tables), spec.sort_by)
    frame = pl.from_arrow(table.select([*spec.columns, ROWID]))
    assert isinstance(frame, pl.DataFrame)
    return frame
