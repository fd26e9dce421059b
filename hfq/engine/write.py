"""Storing a query's answer as a table, through the one write operator (:mod:`hfq.write`)."""

from __future__ import annotations

from typing import Any

import polars as pl

from hfq import schema as hs
from hfq.catalog.records import Manifest
from hfq.errors import QueryError, TableExistsError
from hfq.partition import Compo, Hash, Scheme
from hfq.session import Session
from hfq.write import Write

__all__ = ["column_type", "write_frame"]


def column_type(dtype: pl.DataType) -> hs.ColumnType:
    """The hfq column type that holds a polars type without loss."""
    if isinstance(dtype, (pl.Categorical, pl.Enum)):
        return hs.SYMBOL
    if isinstance(dtype, pl.Datetime):
        return hs.DATETIME if dtype.time_zone else hs.TIMESTAMP
    simple: dict[Any, hs.ColumnType] = {
        pl.String: hs.STRING, pl.Boolean: hs.BOOL, pl.Float64: hs.DOUBLE,
        pl.Float32: hs.FLOAT, pl.Int8: hs.SHORT, pl.Int16: hs.SHORT, pl.Int32: hs.INT,
        pl.Int64: hs.LONG, pl.UInt8: hs.SHORT, pl.UInt16: hs.INT, pl.UInt32: hs.LONG,
        pl.Date: hs.DATE, pl.Time: hs.TIME}
    for k, v in simple.items():
        if dtype == k:
            return v
    raise QueryError(f"a column of type {dtype} cannot be stored in an hfq table")


def write_frame(session: Session, base: Manifest, name: str, frame: pl.DataFrame, *,
                partition_by: Scheme | Compo | None = None,
                sort_by: tuple[str, ...] | None = None, mode: str = "create") -> int:
    """Store ``frame`` as table ``name`` of ``session``'s database; returns the version.

    ``mode="create"`` makes a new table (an error if it exists), ``"append"`` adds to an
    existing one, ``"replace"`` drops it first.  The partition scheme and sort order default
    to those of ``base`` (the table the answer came from) when the answer has their columns,
    else one hash level on the first column."""
    if mode not in ("create", "append", "replace"):
        raise QueryError(f"mode must be 'create', 'append' or 'replace', not {mode!r}")
    if mode == "replace" and session.exists(name):
        session.drop_table(name)
    if mode == "append":
        m = session.snapshot(name)
    else:
        if session.exists(name):
            raise TableExistsError(f"table {name!r} exists; write(..., mode='append') adds "
                                   "to it, mode='replace' replaces it")
        frame = frame.with_columns(pl.col(c).cast(pl.Int64) for c, t in frame.schema.items()
                                   if t in (pl.UInt32, pl.UInt64))
        schema = hs.Schema([(c, column_type(t)) for c, t in frame.schema.items()])
        cols = set(frame.columns)
        if partition_by is None:
            levels = [lvl.column for lvl in base.partition_by.levels()]
            partition_by = base.partition_by if set(levels) <= cols and all(
                schema[c] == base.schema[c] for c in levels) else Hash(frame.columns[0], 8)
        if sort_by is None:
            sort_by = tuple(c for c in base.sort_by if c in cols)
        m = session.create_table(name, schema, partition_by=partition_by, sort_by=sort_by)
    arrow = m.schema.conform(frame.to_arrow(), where=f"write to {name!r}")
    with Write(session, m) as write, write.rows() as rows:
        rows.write(arrow)
        write.stage_all(rows.flush())
        return write.commit("query").version
