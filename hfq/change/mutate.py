"""Deleting, updating, overwriting and upserting rows: each one commit touching only the
partitions it must (:mod:`hfq.change.rewrite`).

* :func:`delete` -- the rows matching ``where`` and ``dates``/``symbols`` go;
* :func:`update` -- columns of the matching rows set to expressions of the row;
* :func:`overwrite` -- the slice ``dates``/``symbols`` replaced by a frame's rows (exactly
  that slice: a row of the frame outside it is an error);
* :func:`upsert` -- a frame's rows added, replacing (``keep="last"``) or yielding to
  (``keep="first"``) stored rows of the same key.

Each reads and rewrites only the partitions its ``dates``/``symbols`` (and, for the frame
operations, the frame's rows) can reach; a ``where`` without them reads every partition, as a
scan with that filter would.  A change that matches nothing commits nothing and says so
(:class:`~hfq.change.rewrite.ChangeReport`); an empty or reversed range is an
:class:`~hfq.errors.ArgumentError`.  Every change applies to the newest version, whatever a
handle is pinned to.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from hfq.catalog.keys import keep_policy, known_at_column
from hfq.catalog.records import Manifest
from hfq.change.dedup import Dedup, dedup_key, key_frame, settle
from hfq.change.rewrite import Change, ChangeReport, Outcome, commit_changed
from hfq.errors import ArgumentError, DuplicateKeyError, SchemaMismatchError
from hfq.query.plan import Filters, make_plan
from hfq.query.read import where_mask
from hfq.session import check_where, read_filters
from hfq.write import Write

if TYPE_CHECKING:
    from hfq.session import TableLike

__all__ = ["delete", "overwrite", "slice_predicate", "update", "upsert"]


def _filters(m: Manifest, dates: Any, symbols: Any, op: str) -> Filters:
    """``dates=``/``symbols=`` checked: reversed ranges raise (:func:`read_filters`), and so
    do empty ones -- an empty symbol list, ``dates=(None, None)``."""
    if symbols is not None and not isinstance(symbols, str):
        try:
            if len(list(symbols)) == 0:
                raise ArgumentError(f"{op}: symbols=[] is an empty range; name the symbols "
                                    "(or leave symbols= out)", argument="symbols")
        except TypeError:
            pass   # read_filters names the problem
    if isinstance(dates, (tuple, list)) and len(dates) == 2 and dates[0] is None and \
            dates[1] is None:
        raise ArgumentError(f"{op}: dates=(None, None) is no range; give a first or last "
                            "date (or leave dates= out)", argument="dates")
    return read_filters(m, dates=dates, symbols=symbols)


def slice_predicate(m: Manifest, f: Filters) -> pl.Expr | None:
    """The rows ``f``'s dates and symbols select, as a polars expression (None: all)."""
    parts = []
    if f.date_column and (f.date_lo or f.date_hi):
        col = pl.col(f.date_column)
        if m.schema[f.date_column].name != "DATE":
            col = col.dt.date()
        if f.date_lo:
            parts.append(col >= dt.date.fromisoformat(f.date_lo))
        if f.date_hi:
            parts.append(col <= dt.date.fromisoformat(f.date_hi))
    if f.symbol_column and f.symbols is not None:
        parts.append(pl.col(f.symbol_column).cast(pl.String).is_in(list(f.symbols)))
    if not parts:
        return None
    out = parts[0]
    for p in parts[1:]:
        out = out & p
    return out


def _and(a: pl.Expr | None, b: pl.Expr | None) -> pl.Expr | None:
    return b if a is None else a if b is None else a & b


def _select(filters: Filters) -> Any:
    """The partitions whose keys and per-batch statistics can hold rows of ``filters``."""
    def select(head: Manifest) -> dict[str, Any]:
        plan = make_plan(head, [], filters, None)
        return {u.partition: head.partitions[u.partition] for u in plan.units}
    return select


def _mask(table: pa.Table, predicate: pl.Expr | None) -> np.ndarray:
    """Rows of ``table`` where ``predicate`` holds (nulls: no), as numpy booleans."""
    if predicate is None:
        return np.ones(table.num_rows, dtype=bool)
    names = [n for n in dict.fromkeys(predicate.meta.root_names()) if n in table.column_names]
    frame = pl.from_arrow(table.select(names))
    assert isinstance(frame, pl.DataFrame)
    got = where_mask(frame, predicate, table.num_rows)
    if isinstance(got, bool):
        return np.full(table.num_rows, got)
    return got.to_numpy()


@dataclass(frozen=True)
class Delete(Change):
    predicate: pl.Expr | None

    def __call__(self, partition: str, old: pa.Table, new: pa.Table) -> Outcome:
        hit = _mask(old, self.predicate)
        n = int(hit.sum())
        if not n:
            return Outcome()
        return Outcome(rows=old.filter(pa.array(~hit)), removed=n)


@dataclass(frozen=True)
class Update(Change):
    predicate: pl.Expr | None
    sets: tuple[tuple[str, pl.Expr], ...]
    schema: Any
    key: tuple[str, ...] = ()

    def __call__(self, partition: str, old: pa.Table, new: pa.Table) -> Outcome:
        hit = _mask(old, self.predicate)
        n = int(hit.sum())
        if not n:
            return Outcome()
        names = list(dict.fromkeys(c for _, e in self.sets for c in e.meta.root_names()))
        frame = pl.from_arrow(old.select(names)) if names else pl.DataFrame()
        assert isinstance(frame, pl.DataFrame)
        frame = frame.with_columns(pl.Series("__hit", hit)) if frame.width else \
            pl.DataFrame({"__hit": hit})
        rows = old
        for column, expr in self.sets:
            try:
                values = frame.select(pl.when(pl.col("__hit")).then(expr)
                                      .otherwise(pl.lit(None)).alias(column)).to_series()
            except pl.exceptions.PolarsError as exc:
                raise SchemaMismatchError(f"update, partition {partition}: set {column}="
                                          f"{expr}: {str(exc).splitlines()[0]}") from exc
            fresh = self.schema.select([column]).conform(
                pa.table({column: values.to_arrow()}), where=f"update of column {column!r}")
            merged = _merge(rows.column(column), fresh.column(0), hit)
            rows = rows.set_column(rows.schema.get_field_index(column), column, merged)
        if self.key and any(c in self.key for c, _ in self.sets):
            dup = key_frame(rows, self.key).filter(pl.struct(list(self.key)).is_duplicated())
            if dup.height:
                raise DuplicateKeyError(f"update, partition {partition}: {dup.height} rows "
                                        f"would share their key ({', '.join(self.key)}), e.g. "
                                        f"{dup.row(0)}; nothing was committed")
        return Outcome(rows=rows, added=n, removed=n)


def _merge(old: pa.ChunkedArray, fresh: pa.ChunkedArray, hit: np.ndarray) -> pa.ChunkedArray:
    """``fresh`` where ``hit``, ``old`` elsewhere (same type)."""
    old_a = old.combine_chunks() if old.num_chunks != 1 else old.chunk(0)
    fresh_a = fresh.combine_chunks() if fresh.num_chunks != 1 else fresh.chunk(0)
    if pa.types.is_dictionary(old_a.type):   # by value: the two dictionaries differ
        value = old_a.type.value_type
        merged = pc.if_else(pa.array(hit), fresh_a.cast(value), old_a.cast(value))
        return pa.chunked_array([merged.dictionary_encode().cast(old_a.type)])
    return pa.chunked_array([pc.if_else(pa.array(hit), fresh_a, old_a)])


@dataclass(frozen=True)
class Overwrite(Change):
    """The stored rows of the slice go; the staged rows (all inside it) come, deduped by the
    table's key first when it has one."""

    predicate: pl.Expr | None
    dedup: Dedup | None = None

    def __call__(self, partition: str, old: pa.Table, new: pa.Table) -> Outcome:
        hit = _mask(old, self.predicate) if old.num_rows else np.zeros(0, dtype=bool)
        n = int(hit.sum())
        if self.dedup is not None and new.num_rows:
            inner = self.dedup(partition, old.slice(0, 0), new)
            new = inner.new if inner.new is not None else new
        if not n and not new.num_rows:
            return Outcome()
        kept = old.filter(pa.array(~hit)) if n else old
        if self.dedup is not None and kept.num_rows and new.num_rows:
            # the rows outside the slice stay; a new row clashing with one is the policy's
            outcome = self.dedup(partition, kept, new)
            if outcome.rows is not None:
                return Outcome(rows=outcome.rows, added=outcome.added,
                               removed=n + outcome.removed)
            new = outcome.new if outcome.new is not None else new
        if not n:
            return Outcome(new=new, added=new.num_rows)
        return Outcome(rows=pa.concat_tables([kept, new]), added=new.num_rows, removed=n)


# -- the operations ------------------------------------------------------------------------------
def delete(table: TableLike, *, where: pl.Expr | None = None, dates: Any = None,
           symbols: Iterable[str] | str | None = None,
           message: str | None = None) -> ChangeReport:
    """Delete the rows matching ``where`` and ``dates``/``symbols``, in one commit."""
    session, name = table.session, table.name
    base = session.snapshot(name)
    if where is None and dates is None and symbols is None:
        raise ArgumentError("delete() needs where=, dates= or symbols= (every row: "
                            "where=pl.lit(True))", argument="where")
    filters = _filters(base, dates, symbols, "delete")
    check_where(base, where)
    predicate = _and(slice_predicate(base, filters), where)
    args = {"where": where, "dates": dates, "symbols": symbols}
    with Write(session, base) as write:
        committed, report = commit_changed(write, "delete", Delete(predicate),
                                           _select(filters), args=args, message=message)
        if committed is None:
            write.abort()
    return report


def update(table: TableLike, *, set: Mapping[str, Any], where: pl.Expr | None = None,
           dates: Any = None, symbols: Iterable[str] | str | None = None,
           message: str | None = None) -> ChangeReport:
    """Set columns of the rows matching ``where`` and ``dates``/``symbols``: ``set`` maps a
    column to a polars expression of the row (or a value), in one commit."""
    session, name = table.session, table.name
    base = session.snapshot(name)
    if not isinstance(set, Mapping) or not set:
        raise ArgumentError("update() needs set={column: expression or value, ...}",
                            argument="set")
    parts = {lvl.column for lvl in base.partition_by.levels()}
    sets = []
    for column, value in set.items():
        if column not in base.schema:
            raise ArgumentError(f"set=: table {name!r} has no column {column!r}; the columns "
                                f"are {', '.join(base.schema.names)}", argument="set")
        if column in parts:
            raise ArgumentError(f"set=: {column!r} is a partition column (the rows would move "
                                "to other partitions): delete them and append the changed "
                                "rows instead", argument="set")
        expr = value if isinstance(value, pl.Expr) else pl.lit(value)
        check_where(base, expr.is_null())   # its columns exist
        sets.append((column, expr))
    filters = _filters(base, dates, symbols, "update")
    check_where(base, where)
    predicate = _and(slice_predicate(base, filters), where)
    args = {"set": dict(set), "where": where, "dates": dates, "symbols": symbols}
    change = Update(predicate, tuple(sets), base.schema, dedup_key(base.options))
    with Write(session, base) as write:
        committed, report = commit_changed(write, "update", change, _select(filters),
                                           args=args, message=message)
        if committed is None:
            write.abort()
    return report


def _conformed(base: Manifest, data: Iterable[pa.Table | pa.RecordBatch], op: str
               ) -> list[pa.Table]:
    out = []
    for batch in data:
        if isinstance(batch, pa.RecordBatch):
            batch = pa.Table.from_batches([batch])
        out.append(base.schema.conform(batch, where=f"{op} to {base.table!r}"))
    return out


def overwrite(table: TableLike, data: Iterable[pa.Table | pa.RecordBatch], *,
              dates: Any = None,
              symbols: Iterable[str] | str | None = None,
              message: str | None = None) -> ChangeReport:
    """Replace exactly the slice ``dates``/``symbols`` by the rows of ``data`` (Arrow tables
    or batches, every row inside the slice), in one commit."""
    session, name = table.session, table.name
    base = session.snapshot(name)
    if dates is None and symbols is None:
        raise ArgumentError("overwrite() needs dates= and/or symbols= (the slice it "
                            "replaces)", argument="dates")
    filters = _filters(base, dates, symbols, "overwrite")
    predicate = slice_predicate(base, filters)
    batches = _conformed(base, data, "overwrite")
    for batch in batches:
        inside = _mask(batch, predicate)
        if not inside.all():
            row = batch.filter(pa.array(~inside)).slice(0, 1).to_pylist()[0]
            raise ArgumentError(f"overwrite: {int((~inside).sum())} rows lie outside the slice "
                                f"(dates={dates!r}, symbols={symbols!r}), e.g. {row}; only "
                                "the slice is replaced", argument="data")
    key = dedup_key(base.options)
    change = Overwrite(predicate, Dedup(key, keep_policy(base.options)) if key else None)
    args = {"rows": sum(b.num_rows for b in batches), "dates": dates, "symbols": symbols}
    with Write(session, base) as write, write.rows() as rows:
        for batch in batches:
            rows.write(batch)
        write.stage_all(rows.flush())
        committed, report = commit_changed(write, "overwrite", change, _select(filters),
                                           args=args, message=message)
        if committed is None:
            write.abort()
    return report


def upsert(table: TableLike, data: Iterable[pa.Table | pa.RecordBatch], *,
           on: Sequence[str] | str | None = None,
           keep: str = "last", message: str | None = None) -> ChangeReport:
    """Add the rows of ``data`` (Arrow tables or batches); a row whose ``on`` key is stored
    already replaces the stored row (``keep="last"``), or is dropped (``keep="first"``), or
    fails the write (``keep="error"``); of rows of one key within ``data``, the last (first)
    stays.  ``on`` defaults to the table's dedup key; it must hold every partition column,
    and the table's ``known_at`` column is added to it (a correction is a new row of a later
    knowledge time, never an overwrite of what was known)."""
    session, name = table.session, table.name
    base = session.snapshot(name)
    if keep not in ("first", "last", "error"):
        raise ArgumentError(f"keep={keep!r}: use 'last', 'first' or 'error'", argument="keep")
    key = dedup_key(base.options) if on is None else \
        ((on,) if isinstance(on, str) else tuple(on))
    if not key:
        raise ArgumentError(f"upsert: table {name!r} has no dedup key; pass on=(columns...)",
                            argument="on")
    for column in key:
        if column not in base.schema:
            raise ArgumentError(f"on=: table {name!r} has no column {column!r}; the columns "
                                f"are {', '.join(base.schema.names)}", argument="on")
    missing = [lvl.column for lvl in base.partition_by.levels() if lvl.column not in key]
    if missing:
        raise ArgumentError(f"on={key!r}: the key must hold every partition column (missing "
                            f"{', '.join(missing)}), so that a key's stored rows are in the "
                            "partition its new row goes to", argument="on")
    known = known_at_column(base.options)
    if known is not None and known not in key:
        key = (*key, known)
    batches = _conformed(base, data, "upsert")
    with Write(session, base) as write, write.rows() as rows:
        for batch in batches:
            rows.write(batch)
        write.stage_all(rows.flush())
        committed = settle(write, "upsert",
                           args={"rows": sum(b.num_rows for b in batches), "on": list(key),
                                 "keep": keep},
                           message=message, key=key, keep=keep)
    return _report("upsert", committed)


def _report(op: str, committed: Manifest) -> ChangeReport:
    info = committed.info
    return ChangeReport(op, committed.table, committed.version, True,
                        int(info.get("rows_added") or 0), int(info.get("rows_removed") or 0),
                        int(info.get("partitions") or 0))
