"""A lazy scan: planned against one snapshot, executed by ``to_arrow`` / ``to_polars`` / ...

Partitions are read in parallel threads (pyarrow and numpy release the GIL), each from a
memory-mapped local file, only the needed columns and record batches; filters run per
partition, so raw rows that do not match never leave the partition's reader.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from hfq.config import Settings
from hfq.errors import SchemaMismatchError
from hfq.query.plan import Filters, Plan, Unit, make_plan
from hfq.schema import Schema
from hfq.storage.fragment import read_fragment
from hfq.storage.sort import sort_rows

if TYPE_CHECKING:
    import pandas

    from hfq.catalog import Manifest
    from hfq.runtime.nodes import Nodes
    from hfq.storage.store import Store

__all__ = ["ReadSpec", "Scan", "read_unit"]


class Scan:
    """What to read; nothing is read until a ``to_*`` method runs.

    Build one with :meth:`hfq.Table.scan`.
    """

    def __init__(self, nodes: Nodes, manifest: Manifest, settings: Settings, *,
                 columns: Sequence[str] | None, where: pl.Expr | None, filters: Filters) -> None:
        schema = manifest.schema
        self.columns = list(columns) if columns is not None else schema.names
        for name in self.columns:
            schema[name]  # raises listing the valid columns
        if where is not None and not isinstance(where, pl.Expr):
            raise TypeError(f"where must be a polars expression such as pl.col('bid') > 0, "
                            f"not {type(where).__name__}")
        self._where_columns = [] if where is None else list(dict.fromkeys(where.meta.root_names()))
        for name in self._where_columns:
            if name not in schema:
                raise SchemaMismatchError(f"where= uses column {name!r}, which table "
                                          f"{manifest.table!r} does not have; columns: "
                                          f"{', '.join(schema.names)}")
        self.nodes = nodes
        self.manifest = manifest
        self.settings = settings
        self.where = where
        self.filters = filters
        self.plan: Plan = make_plan(manifest, self.columns, filters, where)
        self.spec = ReadSpec(manifest.schema, manifest.sort_by, self.columns, where,
                             self._where_columns, filters)

    def __repr__(self) -> str:
        return self.explain()

    def explain(self) -> str:
        """What will be read: partitions kept and pruned, record batches, rows, bytes."""
        return self.plan.explain()

    # -- execution ----------------------------------------------------------------------------
    def iter_arrow(self, *, lookahead: int | None = None) -> Iterator[pa.Table]:
        """One Arrow table per partition, in partition order, reading ahead in parallel.

        Partitions held by this process's node are read from the memory-mapped files here;
        the others by their nodes' servers, in parallel, arriving as Arrow.
        """
        depth = lookahead or self.settings.threads * 2
        yield from self.nodes.read_units(self.spec, self.plan.units,
                                         threads=self.settings.threads, window=depth)

    def to_arrow(self) -> pa.Table:
        """Every matching row as one Arrow table, chunked by partition."""
        schema = self.manifest.schema.select(self.columns).arrow
        units = self.plan.units
        if not units:
            return schema.empty_table()
        tables = list(self.iter_arrow(lookahead=len(units)))
        return tables[0] if len(tables) == 1 else pa.concat_tables(tables)

    def to_polars(self) -> pl.DataFrame:
        return pl.from_arrow(self.to_arrow())

    def to_pandas(self) -> pandas.DataFrame:
        """As pandas, with no per-row Python objects.

        SYMBOL and CHAR columns become categoricals, DATE columns ``datetime64``, and times of
        day (SECOND, TIME) ``timedelta64`` since midnight.
        """
        # consolidated blocks measured faster than split_blocks=True here (0.36 s vs 0.87 s
        # for a 20 M-row TAQ day)
        return _pandas_ready(self.to_arrow()).to_pandas(date_as_object=False)

    def count(self) -> int:
        """Matching rows, reading only what the filters need."""
        if self.where is None and all(u.exact for u in self.plan.units):
            return self.plan.rows
        return sum(t.num_rows for t in self.iter_arrow())

    def to_csv(self, path: str) -> int:
        """Write the matching rows as CSV (ISO dates and times), streaming; returns rows."""
        import pyarrow.csv as pacsv
        rows = 0
        schema = _plain(self.manifest.schema.select(self.columns).arrow)
        with pacsv.CSVWriter(path, schema) as writer:
            for table in self.iter_arrow():
                writer.write_table(table.cast(schema))
                rows += table.num_rows
        return rows

@dataclass(frozen=True)
class ReadSpec:
    """What to read from each partition; small and picklable, shipped to the nodes."""

    schema: Schema
    sort_by: tuple[str, ...]
    columns: list[str]
    where: pl.Expr | None
    where_columns: list[str]
    filters: Filters


def read_unit(store: Store, spec: ReadSpec, unit: Unit) -> pa.Table:
    """One partition's matching rows, from the files under ``store`` (the node's root)."""
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
    parts = [read_fragment(store, frag, logical, columns=read_cols, batches=batches)
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
        mask = where_mask(pl.from_arrow(table.select(spec.where_columns)), spec.where,
                          table.num_rows)
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
        cond = pa.chunked_array([pc.is_in(c.dictionary, value_set=values).take(c.indices)
                                 if pa.types.is_dictionary(c.type) else
                                 pc.is_in(c, value_set=values) for c in col.chunks],
                                type=pa.bool_())
        mask = cond if mask is None else pc.and_(mask, cond)
    if mask is None:
        return table
    return table.filter(pc.fill_null(mask, False))


def _pandas_ready(table: pa.Table) -> pa.Table:
    """Times of day as durations: pandas has no time dtype and would make Python objects."""
    for i, f in enumerate(table.schema):
        if pa.types.is_time(f.type):
            width = pa.int32() if f.type.bit_width == 32 else pa.int64()
            col = pa.chunked_array([c.view(width).cast(pa.int64()).view(pa.duration(f.type.unit))
                                    for c in table.column(i).chunks], pa.duration(f.type.unit))
            table = table.set_column(i, f.name, col)
    return table


def _plain(schema: pa.Schema) -> pa.Schema:
    return pa.schema([pa.field(f.name, f.type.value_type if pa.types.is_dictionary(f.type)
                               else f.type) for f in schema])

