"""The lazy query: a polars-flavoured API that builds a logical plan over a table.

Build one with :meth:`hfq.Table.query` (or :meth:`hfq.Database.sql`); nothing runs until
:meth:`Query.collect`, :meth:`~Query.to_arrow`, :meth:`~Query.to_pandas` or
:meth:`~Query.write`.  :meth:`~Query.explain` shows what runs on the nodes and on the driver.

Examples
--------
>>> import hfq, tempfile, polars as pl
>>> db = hfq.connect(tempfile.mkdtemp())
>>> t = db.create_table("quotes", hfq.schemas.TAQ,
...                     partition_by=hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 4)),
...                     sort_by=("symbol", "time"))
>>> _ = t.append(hfq.synth.taq_table(rows_per_day=2000, symbols=10))
>>> q = (t.query(symbols=["IBM", "MSFT"])
...       .filter(pl.col("ofr") > pl.col("bid"))
...       .group_by("symbol")
...       .agg(n=pl.len(), bid=pl.col("bid").mean())
...       .sort("symbol"))
>>> q.collect()["symbol"].to_list()
['IBM', 'MSFT']
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import polars as pl

from hfq.catalog.records import Manifest
from hfq.engine.execute import RunStats, Staged, empty_frame, explain, run, run_rows, stage
from hfq.engine.exprs import Bucket, empty_lazy
from hfq.engine.joins import AsofJoin, Join, WindowJoin
from hfq.engine.ops import Aggregate, Filter, Op, Rename, Select, Slice, Sort, Unique, WithColumns
from hfq.engine.reshape import Fill, Pivot, Sample, Unpivot
from hfq.errors import QueryError

if TYPE_CHECKING:
    import pandas
    import pyarrow as pa

    from hfq.runtime.nodes import Nodes

__all__ = ["FrameSource", "GroupBy", "Query", "TableSource"]

IntoExpr = Any
"""A polars expression, a column name, or :func:`hfq.bucket`."""


@dataclass
class TableSource:
    """The table a query reads: one pinned version, the ``dates=``/``symbols=`` of the query,
    and the database (``ctx``) whose nodes run it."""

    ctx: Any
    name: str
    manifest: Manifest
    date_column: str | None
    symbol_column: str | None
    date_lo: str | None = None
    date_hi: str | None = None
    symbols: tuple | None = None
    schema: pl.Schema = field(init=False)

    def __post_init__(self) -> None:
        self.schema = empty_frame(self.manifest.schema.arrow).schema

    def nodes(self) -> Nodes:
        return cast("Nodes", self.ctx.nodes)

    def threads(self) -> int:
        return int(self.ctx.settings.threads)

    def bind_units(self, units: list[Any]) -> list[Any]:
        return units


@dataclass
class FrameSource:
    """Rows given as a frame rather than read from a table (SQL without FROM, VALUES):
    a query over them runs on the driver."""

    frame: pl.DataFrame
    name: str = "(no table)"

    @property
    def schema(self) -> pl.Schema:
        return self.frame.schema


def _resolve(value: IntoExpr, schema: pl.Schema) -> pl.Expr:
    if isinstance(value, Bucket):
        return value.resolve(schema)
    if isinstance(value, str):
        return pl.col(value)
    if isinstance(value, pl.Expr):
        return value
    if isinstance(value, pl.Series):
        return pl.lit(value)
    return pl.lit(value)


def _exprs(args: Sequence[IntoExpr], named: dict[str, IntoExpr], schema: pl.Schema
           ) -> tuple[pl.Expr, ...]:
    flat: list[IntoExpr] = []
    for a in args:
        flat.extend(a if isinstance(a, (list, tuple)) else [a])
    out = [_resolve(a, schema) for a in flat]
    out += [_resolve(v, schema).alias(k) for k, v in named.items()]
    return tuple(out)


class Query:
    """A lazy query over a table; every method returns a new query."""

    def __init__(self, source: TableSource | FrameSource, ops: tuple[Op, ...] = (),
                 schema: pl.Schema | None = None) -> None:
        self.source = source
        self.ops = ops
        self._schema = schema if schema is not None else source.schema
        self.last_run: RunStats | None = None
        # the staged plan, made once: the query reads pinned versions, so it never changes
        self._memo: list[Staged] = []

    def __repr__(self) -> str:
        return f"<hfq.Query on {self.source.name}: {len(self.ops)} operation(s)>"

    # -- schema ---------------------------------------------------------------------------------
    @property
    def schema(self) -> pl.Schema:
        """The result's column names and polars types."""
        return self._schema

    @property
    def columns(self) -> list[str]:
        return self._schema.names()

    def _then(self, op: Op) -> Query:
        return Query(self.source, (*self.ops, op), check_schema(op, self._schema))

    # -- building -------------------------------------------------------------------------------
    def filter(self, *predicates: IntoExpr, **equal: Any) -> Query:
        """Keep the rows where every predicate holds (nulls count as false);
        ``name=value`` tests equality."""
        parts = list(_exprs(predicates, {}, self._schema))
        parts += [pl.col(k) == v for k, v in equal.items()]
        if not parts:
            raise QueryError("filter() needs at least one predicate")
        pred = parts[0]
        for p in parts[1:]:
            pred = pred & p
        return self._then(Filter(pred))

    where = filter

    def with_columns(self, *exprs: IntoExpr, **named: IntoExpr) -> Query:
        """Add or replace columns; window expressions (``.over(...)``) keep every row."""
        return self._then(WithColumns(_exprs(exprs, named, self._schema)))

    def select(self, *exprs: IntoExpr, **named: IntoExpr) -> Query:
        """Keep these columns or expressions; all aggregates give one row."""
        return self._then(Select(_exprs(exprs, named, self._schema)))

    def rename(self, mapping: dict[str, str]) -> Query:
        return self._then(Rename(tuple(mapping.items())))

    def group_by(self, *keys: IntoExpr, **named: IntoExpr) -> GroupBy:
        """Group by columns, expressions or :func:`hfq.bucket`; then call ``.agg(...)``."""
        resolved = _exprs(keys, named, self._schema)
        if not resolved:
            raise QueryError("group_by() needs at least one key")
        return GroupBy(self, resolved)

    def agg(self, *aggs: IntoExpr, **named: IntoExpr) -> Query:
        """Aggregates over all rows (one row)."""
        return self._then(Aggregate((), _exprs(aggs, named, self._schema)))

    def sort(self, by: IntoExpr | Sequence[IntoExpr], *more: IntoExpr,
             descending: bool | Sequence[bool] = False,
             nulls_last: bool | Sequence[bool] = False) -> Query:
        """Sort by columns or expressions (stable: ties keep their order)."""
        keys = _exprs([by, *more], {}, self._schema)
        desc = _flags(descending, len(keys), "descending")
        last = _flags(nulls_last, len(keys), "nulls_last")
        return self._then(Sort(keys, desc, last))

    def head(self, n: int = 5) -> Query:
        return self.slice(0, n)

    limit = head

    def slice(self, offset: int, length: int | None = None) -> Query:
        if offset < 0 or (length is not None and length < 0):
            raise QueryError("slice() takes a non-negative offset and length")
        return self._then(Slice(offset, length))

    def unique(self, subset: str | Sequence[str] | None = None) -> Query:
        """Distinct rows (over ``subset`` when given; the first of each kept)."""
        cols = None if subset is None else ((subset,) if isinstance(subset, str)
                                            else tuple(subset))
        return self._then(Unique(cols))

    def top_k(self, k: int, *, by: IntoExpr | Sequence[IntoExpr],
              descending: bool | Sequence[bool] = True) -> Query:
        """The ``k`` rows with the largest ``by`` (or smallest, ``descending=False``)."""
        return self.sort(by, descending=descending, nulls_last=True).head(k)

    # -- joins ----------------------------------------------------------------------------------
    def join(self, other: Query | pl.DataFrame, on: IntoExpr | Sequence[IntoExpr] = None, *,
             how: str = "inner", left_on: IntoExpr | Sequence[IntoExpr] = None,
             right_on: IntoExpr | Sequence[IntoExpr] = None) -> Query:
        """Join with ``other`` (a query or a polars DataFrame, run once and broadcast to the
        nodes: keep it small): ``how`` is inner, left, full, semi, anti or cross; columns of
        ``other`` that clash get the suffix ``_right``."""
        if how not in ("inner", "left", "full", "semi", "anti", "cross"):
            raise QueryError(f"how={how!r}: use inner, left, full, semi, anti or cross")
        if how == "cross":
            return self._then(Join(other, (), (), "cross"))
        lk = left_on if left_on is not None else on
        rk = right_on if right_on is not None else on
        if lk is None or rk is None:
            raise QueryError("join() needs on= (or left_on= and right_on=)")
        lefts = _exprs([lk], {}, self._schema)
        rights = _exprs([rk], {}, other.schema)
        if len(lefts) != len(rights):
            raise QueryError(f"join(): {len(lefts)} left keys but {len(rights)} right keys")
        return self._then(Join(other, lefts, rights, how))

    def join_asof(self, other: Query | pl.DataFrame, on: str | None = None, *,
                  left_on: str | None = None, right_on: str | None = None,
                  by: str | Sequence[str] | None = None,
                  by_left: str | Sequence[str] | None = None,
                  by_right: str | Sequence[str] | None = None, strategy: str = "backward",
                  tolerance: Any = None, allow_exact_matches: bool = True,
                  keep_unmatched: bool = True) -> Query:
        """For each row, the row of ``other`` with equal ``by`` keys whose ``on`` value is
        the last at or before it (``strategy="backward"``, kdb+ ``aj``), the first at or
        after it (``"forward"``) or the nearest (``"nearest"``); ``tolerance`` bounds the
        distance; ``keep_unmatched=False`` drops rows without a match (SQL ``ASOF JOIN``)."""
        if strategy not in ("backward", "forward", "nearest"):
            raise QueryError(f"strategy={strategy!r}: use backward, forward or nearest")
        lo, ro = left_on or on, right_on or on
        if lo is None or ro is None:
            raise QueryError("join_asof() needs on= (or left_on= and right_on=)")
        bl = _names(by_left if by_left is not None else by)
        br = _names(by_right if by_right is not None else by)
        if len(bl) != len(br):
            raise QueryError("join_asof(): by_left and by_right differ in length")
        return self._then(AsofJoin(other, lo, ro, bl, br, strategy, tolerance,
                                   allow_exact_matches, keep_unmatched))

    def window_join(self, other: Query | pl.DataFrame, on: str | None = None, *,
                    window: tuple[Any, Any], aggs: dict[str, tuple[str, str]],
                    left_on: str | None = None, right_on: str | None = None,
                    by: str | Sequence[str] | None = None, kind: str = "wj") -> Query:
        """kdb+'s window join: for each row at time ``t``, aggregates of the rows of
        ``other`` with equal ``by`` keys and time in ``[t + window[0], t + window[1]]``
        (timedeltas or ints in the column's unit).  ``aggs``: ``{"name": ("sum", "size")}``
        with sum, count, mean, min, max, first or last.  ``kind="wj"`` also counts the row
        in effect at the window's start; ``"wj1"`` only rows inside the window."""
        if kind not in ("wj", "wj1"):
            raise QueryError(f"kind={kind!r}: use 'wj' or 'wj1'")
        lo_col, ro_col = left_on or on, right_on or on
        if lo_col is None or ro_col is None:
            raise QueryError("window_join() needs on= (or left_on= and right_on=)")
        for name, (how, src) in aggs.items():
            if how not in ("sum", "count", "mean", "min", "max", "first", "last"):
                raise QueryError(f"window_join aggregate {name}: {how!r} is not one of sum, "
                                 "count, mean, min, max, first, last")
            if src not in other.schema:
                raise QueryError(f"window_join aggregate {name}: no column {src!r} on the "
                                 f"right; columns: {', '.join(other.schema.names())}")
        ticks = [_ticks(w, other.schema[ro_col]) for w in window]
        keys = _names(by)
        op = WindowJoin(other, lo_col, ro_col, keys, keys, ticks[0], ticks[1],
                        tuple((n, h, s) for n, (h, s) in aggs.items()), kind == "wj")
        return self._then(op)

    # -- reshaping --------------------------------------------------------------------------------
    def pivot(self, on: str, *, index: str | Sequence[str], values: str,
              columns: Sequence[Any], aggregate: str = "first") -> Query:
        """One row per ``index``, one column per value of ``on`` listed in ``columns`` (in
        that order), holding ``aggregate`` (first, last, sum, mean, min, max, len) of
        ``values``; runs on the driver."""
        if aggregate not in ("first", "last", "sum", "mean", "min", "max", "len", "median"):
            raise QueryError(f"aggregate={aggregate!r} is not supported")
        return self._then(Pivot(on, _names(index), values, tuple(columns), aggregate))

    def unpivot(self, on: str | Sequence[str], *, index: str | Sequence[str],
                variable_name: str = "variable", value_name: str = "value") -> Query:
        """Columns ``on`` become rows of (``variable_name``, ``value_name``)."""
        return self._then(Unpivot(_names(on), _names(index), variable_name, value_name))

    def fill(self, on: str, every: str, *, by: str | Sequence[str] = (),
             columns: str | Sequence[str], method: str = "forward", value: Any = None
             ) -> Query:
        """The rows on a regular grid of ``every`` over ``on`` (per ``by`` group, from its
        first to its last bucket), the last value of each bucket, gaps filled ``forward``,
        ``backward``, ``linear`` or with a ``constant`` ``value``."""
        if method not in ("forward", "backward", "linear", "constant"):
            raise QueryError(f"method={method!r}: use forward, backward, linear or constant")
        return self._then(Fill(on, every, _names(by), _names(columns), method, value))

    def sample(self, fraction: float, *, seed: int = 0) -> Query:
        """About ``fraction`` of the rows, the same ones for the same seed and data
        wherever each partition runs."""
        if not 0.0 <= fraction <= 1.0:
            raise QueryError(f"fraction must be in [0, 1], not {fraction!r}")
        return self._then(Sample(fraction, seed))

    def pipe(self, fn: Callable[..., Query], *args: Any, **kwargs: Any) -> Query:
        return fn(self, *args, **kwargs)

    # -- running --------------------------------------------------------------------------------
    def _staged(self) -> Staged:
        if not self._memo:
            self._memo.append(stage(self))
        return self._memo[0]

    def fresh(self) -> Query:
        """The same query with its own ``last_run`` (sharing the staged plan)."""
        q = Query(self.source, self.ops, self._schema)
        q._memo = self._memo
        return q

    def explain(self) -> str:
        """The node stage, the driver stage, partitions kept and pruned, and an estimate of
        the bytes that travel to the driver."""
        if isinstance(self.source, FrameSource):
            return "driver stage (no table):\n" + "\n".join(f"  {op.describe()}"
                                                             for op in self.ops)
        return explain(self._staged())

    def collect(self, *, progress: bool = False) -> pl.DataFrame:
        """Run the query; the answer as a polars DataFrame."""
        if isinstance(self.source, FrameSource):
            return run_rows(self.source.frame, self.ops)
        frame, self.last_run = run(self._staged(), progress=progress)
        return frame

    to_polars = collect

    def to_arrow(self) -> pa.Table:
        return self.collect().to_arrow()

    def to_pandas(self) -> pandas.DataFrame:
        return self.collect().to_pandas()

    def write(self, name: str, **options: Any) -> int:
        """Run the query and store the answer as table ``name`` through the one write path
        (created when missing; see :func:`hfq.engine.write.write_frame`); returns its
        version."""
        from hfq.engine.write import write_frame
        return write_frame(self.source, name, self.collect(), **options)


def check_schema(op: Op, schema: pl.Schema) -> pl.Schema:
    """The schema after ``op``, or a :class:`QueryError` naming the step and the problem."""
    try:
        return op.apply(empty_lazy(schema)).collect_schema()
    except pl.exceptions.ColumnNotFoundError as exc:
        m = re.search(r'unable to find column "([^"]*)"', str(exc))
        name = repr(m.group(1)) if m else _first(exc)
        raise QueryError(f"{op.describe()}: unknown column {name}; columns: "
                         f"{', '.join(schema.names())}") from exc
    except (pl.exceptions.PolarsError, TypeError, ValueError) as exc:
        raise QueryError(f"{op.describe()}: {_first(exc)}") from exc


def _first(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _ticks(value: Any, dtype: pl.DataType) -> int:
    """A window bound in the physical unit of a time column (or as given for integers)."""
    if isinstance(value, int):
        return value
    if not isinstance(value, dt.timedelta):
        raise QueryError(f"window bounds are timedeltas or ints, not {value!r}")
    ns = round(value.total_seconds() * 10**9)
    if isinstance(dtype, pl.Datetime):
        return ns // {"ns": 1, "us": 1000, "ms": 10**6}[dtype.time_unit or "us"]
    if isinstance(dtype, pl.Time):
        return ns
    raise QueryError(f"a timedelta window needs a time column, not {dtype}")


def _names(value: str | Sequence[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


def _flags(value: bool | Sequence[bool], n: int, what: str) -> tuple[bool, ...]:
    if isinstance(value, bool):
        return (value,) * n
    out = tuple(bool(v) for v in value)
    if len(out) != n:
        raise QueryError(f"{what}= has {len(out)} values for {n} sort keys")
    return out


class GroupBy:
    """``query.group_by(keys)``; ``.agg(...)`` makes the aggregate query."""

    def __init__(self, query: Query, keys: tuple[pl.Expr, ...]) -> None:
        self.query = query
        self.keys = keys

    def agg(self, *aggs: IntoExpr, **named: IntoExpr) -> Query:
        """One row per group: the keys, then the aggregates, groups in order of first
        appearance (partition order, then row order)."""
        exprs = _exprs(aggs, named, self.query.schema)
        if not exprs:
            raise QueryError("agg() needs at least one aggregate")
        return self.query._then(Aggregate(self.keys, exprs))

    def len(self, name: str = "len") -> Query:
        return self.agg(pl.len().alias(name))


def day_range(dates: Any) -> tuple[str | None, str | None]:
    from hfq.query.plan import normalize_dates
    try:
        return normalize_dates(dates)
    except ValueError as exc:
        raise QueryError(str(exc)) from exc


def make_query(ctx: Any, name: str, manifest: Manifest, date_column: str | None,
               symbol_column: str | None, *, dates: Any = None,
               symbols: Iterable[str] | str | None = None) -> Query:
    """A query over one pinned version of a table (what :meth:`hfq.Table.query` returns)."""
    lo, hi = day_range(dates)
    if (lo or hi) and date_column is None:
        raise QueryError(f"table {name!r} has no date column for dates=")
    if isinstance(symbols, str):
        symbols = [symbols]
    syms = None if symbols is None else tuple(dict.fromkeys(symbols))
    if syms is not None and symbol_column is None:
        raise QueryError(f"table {name!r} has no symbol column for symbols=")
    src = TableSource(ctx, name, manifest, date_column, symbol_column, lo, hi, syms)
    q = Query(src)
    # the explicit filters are also row filters (pruning alone keeps whole batches)
    if lo or hi:
        col = pl.col(cast(str, date_column))
        dtype = src.schema[cast(str, date_column)]
        if isinstance(dtype, pl.Datetime):
            col = col.dt.date()
        if lo:
            q = q.filter(col >= dt.date.fromisoformat(lo))
        if hi:
            q = q.filter(col <= dt.date.fromisoformat(hi))
    if syms is not None:
        q = q.filter(pl.col(cast(str, symbol_column)).is_in(list(syms)))
    return q
