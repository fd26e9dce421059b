"""Reading one partition where its files are: the read spec, the rows of a unit, and the
per-partition tasks the runtime runs on the nodes (:class:`ReadTask`, :class:`MapTask`).

Everything here works on one node's :class:`~hfq.storage.store.Store`; which node runs what is
the runtime's business.  Tasks are small picklable objects called as ``task(node, unit)``,
where ``node`` is anything with a ``store`` and a ``cache`` (:class:`NodeLike`).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, cast

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from hfq.errors import SchemaMismatchError
from hfq.query.plan import Filters, Unit
from hfq.schema import Schema
from hfq.storage.cache import PartitionCache, read_fragment_cached
from hfq.storage.sort import sort_rows
from hfq.storage.store import Store

__all__ = ["MapTask", "NodeLike", "PartitionFunction", "ReadSpec", "ReadTask", "read_unit",
           "where_mask"]


class NodeLike(Protocol):
    """What a task needs of the node it runs on."""

    @property
    def name(self) -> str | None: ...

    @property
    def store(self) -> Store: ...

    @property
    def cache(self) -> PartitionCache | None: ...


@dataclass(frozen=True)
class ReadSpec:
    """What to read from each partition; small and picklable, shipped to the nodes."""

    schema: Schema
    sort_by: tuple[str, ...]
    columns: list[str]
    where: pl.Expr | None
    where_columns: list[str]
    filters: Filters


INLINE_ROWS = 1 << 17
"""A scan or query planned to read at most this many rows, all held by this process's node,
runs in the calling thread (starting a thread pool costs more than reading a symbol-day) and
reads through this process's cache of decoded batches
(:func:`~hfq.storage.cache.process_cache`)."""


def read_unit(store: Store, spec: ReadSpec, unit: Unit, node: str | None = None, *,
              cache: PartitionCache | None = None) -> pa.Table:
    """One partition's matching rows, from the files under ``store`` (the root of ``node``);
    ``cache``: decoded record batches to serve from, and keep (see
    :func:`~hfq.storage.cache.read_fragment_cached`).

    Every byte decoded is verified against the fragment's checksums first: a damaged,
    short or missing file raises :class:`~hfq.errors.CorruptPartitionError` naming the
    table, partition, file, ``node`` and record batch (the runtime then reads another
    replica, when there is one)."""
    f = spec.filters
    need = list(spec.columns)
    extra = list(spec.where_columns)
    if not unit.exact:
        extra += [c for c in (f.date_column if (f.date_lo or f.date_hi) else None,
                              f.symbol_column if f.symbols is not None else None) if c]
    if len(unit.fragments) > 1:
        extra += list(spec.sort_by)
    read_cols = list(dict.fromkeys(need + extra))
    logical = spec.schema.arrow
    parts = [read_fragment_cached(cache, store, frag, logical, columns=read_cols,
                                  batches=batches, node=node)
             for frag, batches in zip(unit.fragments, unit.batches)
             if batches is None or batches]
    if not parts:
        return spec.schema.select(spec.columns).arrow.empty_table()
    table = parts[0] if len(parts) == 1 else pa.concat_tables(parts)
    if len(parts) > 1:
        table = sort_rows(table, spec.sort_by)
    if not unit.exact:
        table = _filter_rows(table, f)
    if spec.where is not None and table.num_rows:
        frame = cast(pl.DataFrame, pl.from_arrow(table.select(spec.where_columns)))
        mask = where_mask(frame, spec.where, table.num_rows)
        table = table.filter(mask.to_arrow()) if isinstance(mask, pl.Series) else (
            table if mask else table.slice(0, 0))
    return table.select(spec.columns) if table.column_names != spec.columns else table


def where_mask(frame: pl.DataFrame, where: pl.Expr, rows: int) -> pl.Series | bool:
    """``where`` evaluated on ``frame`` (``rows`` rows, at least the expression's columns): a
    boolean Series, nulls counted as False, or one bool for a constant expression."""
    if frame.width == 0:   # a constant expression: evaluate it once per row all the same
        frame = pl.DataFrame({"_": pl.repeat(0, rows, eager=True)})
    mask = frame.select(where.fill_null(False)).to_series()
    if mask.dtype != pl.Boolean:
        raise SchemaMismatchError(f"where= must give booleans, it gave {mask.dtype}")
    if len(mask) == 1 and rows != 1:
        return bool(mask[0])
    return mask


def _filter_rows(table: pa.Table, f: Filters) -> pa.Table:
    mask = None
    if f.date_column and (f.date_lo or f.date_hi):
        col = table.column(f.date_column)
        for bound, op in ((f.date_lo, pc.greater_equal), (f.date_hi, pc.less_equal)):
            if bound is None:
                continue
            day = dt.date.fromisoformat(bound)
            if pa.types.is_timestamp(col.type):
                edge = dt.datetime.combine(day if op is pc.greater_equal else
                                           day + dt.timedelta(days=1), dt.time())
                scalar = pa.scalar(edge, type=pa.timestamp("s")).cast(
                    pa.timestamp(col.type.unit, tz=col.type.tz))
                cond = op(col, scalar) if op is pc.greater_equal else pc.less(col, scalar)
            else:
                cond = op(col, pa.scalar(day, type=pa.date32()))
            mask = cond if mask is None else pc.and_(mask, cond)
    if f.symbol_column and f.symbols is not None:
        col = table.column(f.symbol_column)
        values = pa.array([s for s in f.symbols if isinstance(s, str)], type=pa.string())
        cond = pa.chunked_array([_dictionary_in(c, values) if pa.types.is_dictionary(c.type)
                                 else pc.is_in(c, value_set=values) for c in col.chunks],
                                type=pa.bool_())
        mask = cond if mask is None else pc.and_(mask, cond)
    if mask is None:
        return table
    return table.filter(pc.fill_null(mask, False))


def _dictionary_in(chunk: pa.DictionaryArray, values: pa.Array) -> pa.Array:
    """Rows of a dictionary chunk whose value is in ``values`` (null rows: null), compared
    on the indices -- no per-row take of the dictionary's answer."""
    hits = pc.indices_nonzero(pc.is_in(chunk.dictionary, value_set=values))
    if len(hits) == 1:
        return pc.equal(chunk.indices, hits[0].cast(chunk.indices.type))
    return pc.is_in(chunk.indices, value_set=hits.cast(chunk.indices.type))


@dataclass(frozen=True)
class ReadTask:
    """A unit's matching rows as Arrow (what ``scan().to_arrow()`` gathers)."""

    spec: ReadSpec

    def __call__(self, node: NodeLike, unit: Unit) -> pa.Table:
        return read_unit(node.store, self.spec, unit, node.name)


class PartitionFunction:
    """A map function that also needs its partition and its node -- e.g. to write a result
    next to the data it came from: called as ``fn(frame, unit, node)`` (a polars DataFrame,
    the :class:`~hfq.query.plan.Unit`, the node's context)."""

    def __call__(self, frame: pl.DataFrame, unit: Unit, node: Any) -> Any:
        raise NotImplementedError


@dataclass(frozen=True)
class MapTask:
    """``fn`` on one partition's rows as a polars DataFrame (what ``map_reduce`` runs)."""

    spec: ReadSpec
    fn: Callable[..., Any]

    def __call__(self, node: NodeLike, unit: Unit) -> Any:
        frame = read_frame(node, self.spec, unit)
        if isinstance(self.fn, PartitionFunction):
            return self.fn(frame, unit, node)
        return self.fn(frame)


def read_frame(node: NodeLike, spec: ReadSpec, unit: Unit) -> pl.DataFrame:
    """A unit's rows as one polars DataFrame.  The rows before ``where`` are kept in the
    node's cache as single chunks (numpy views are zero-copy) -- the same files, batches,
    columns and date/symbol filters give the same rows -- and ``where`` is applied on every
    call, so a repeated job does its filtering again, like any other engine would."""
    columns = list(dict.fromkeys([*spec.columns, *spec.where_columns]))
    key = (tuple((f.file, b) for f, b in zip(unit.fragments, unit.batches)),
           tuple(columns), spec.filters)
    cache = node.cache
    frame = cache.get(key) if cache is not None else None
    if frame is None:
        base = dataclasses.replace(spec, columns=columns, where=None, where_columns=[])
        frame = pl.from_arrow(read_unit(node.store, base, unit, node.name)).rechunk()
        if cache is not None:
            cache.put(key, frame)
    assert isinstance(frame, pl.DataFrame)
    if spec.where is not None and frame.height:
        mask = where_mask(frame.select(spec.where_columns), spec.where, frame.height)
        frame = frame.filter(mask) if isinstance(mask, pl.Series) else (
            frame if mask else frame.clear())
    return frame.select(spec.columns) if frame.columns != spec.columns else frame
