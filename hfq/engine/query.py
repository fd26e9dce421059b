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
import functools
import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import polars as pl
import pyarrow as pa

from hfq.catalog.records import Manifest
from hfq.engine.execute import (
    RunStats,
    Staged,
    empty_frame,
    explain,
    hints,
    run,
    run_rows,
    run_selective,
    stage,
)
from hfq.engine.exprs import Bucket, empty_lazy
from hfq.engine.joins import AsofJoin, Join, WindowJoin
from hfq.engine.ops import (
    Aggregate,
    Filter,
    Op,
    Rename,
    Select,
    Slice,
    Sort,
    Unique,
    WithColumns,
    plain_name,
)
from hfq.engine.read import PlainRead, pandas_ready, plain_schema
from hfq.engine.reshape import Fill, Pivot, Sample, Unpivot
from hfq.engine.rowid import ROWID
from hfq.errors import QueryError
from hfq.query.plan import Filters, Plan
from hfq.query.read import polars_message
from hfq.session import Session, TablePolicy, check_columns, check_where, read_filters

if TYPE_CHECKING:
    import pandas

    from hfq.runtime.nodes import Nodes

__all__ = ["FrameSource", "GroupBy", "Query", "TableSource", "make_query", "plain_query", "reuse"]

IntoExpr = Any
"""A polars expression, a column name, or :func:`hfq.bucket`."""


@dataclass
class TableSource:
    """The table a query reads: one pinned version, the ``dates=``/``symbols=`` of the query,
    and the session whose nodes run it -- and whose reader's :class:`~hfq.session.TablePolicy`
    decides the rows and columns there are to read (hidden columns are not in ``schema``;
    the row predicate applies where the partitions are read)."""

    session: Session
    name: str
    manifest: Manifest
    date_column: str | None
    symbol_column: str | None
    date_lo: str | None = None
    date_hi: str | None = None
    symbols: tuple | None = None
    rowid: bool = False
    """The rows carry their ``rowid`` (column :data:`~hfq.engine.rowid.ROWID`)."""
    live: Any = None
    """The table's rows not in its files yet (:class:`hfq.live.snapshot.LiveView`):
    ``live.bind(units, filters)`` adds them to a plan's units when it is made, pinned with
    this version; such a query is never a plain read."""

    @functools.cached_property
    def policy(self) -> TablePolicy:
        """What the session's reader may see of this table (pinned with the query)."""
        return self.session.table_policy(self.name, self.manifest)

    @functools.cached_property
    def schema(self) -> pl.Schema:
        full = empty_frame(self.manifest.schema.arrow).schema
        hidden = self.policy.hidden
        schema = pl.Schema({n: t for n, t in full.items() if n not in hidden}) if hidden \
            else full
        if self.rowid:
            schema = pl.Schema({**schema, ROWID: pl.Int64()})
        return schema

    def filters(self) -> Filters:
        """The query's ``dates=``/``symbols=`` as read filters."""
        return Filters(self.date_column, self.date_lo, self.date_hi, self.symbol_column,
                       self.symbols)

    def nodes(self) -> Nodes:
        return self.session.nodes

    def threads(self) -> int:
        return int(self.session.settings.threads)

    def bind_units(self, units: list[Any], filters: Filters | None = None) -> list[Any]:
        return units if self.live is None else self.live.bind(units, filters)


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
    """A lazy query over a table; every method returns a new query, nothing runs until one of
    ``collect``/``to_polars``, ``to_arrow``, ``to_pandas``, ``iter_arrow``, ``count``,
    ``to_csv`` or ``write``.

    A query that only filters rows (row-wise predicates) and keeps columns -- what
    :meth:`hfq.Table.scan` builds, ``t.query(...)`` with nothing chained, ``SELECT a, b FROM
    t WHERE ...`` -- is a *plain read*: it runs through the fast paths of reads (point reads
    in this thread, large reads copied into place, other nodes' files sent as stored).
    Anything else runs as node and driver stages (:meth:`explain` shows which).

    Examples
    --------
    >>> q = quotes.scan(symbols="IBM", columns=["symbol", "time", "bid"])   # a plain read
    >>> q.count(), q.explain().splitlines()[0]
    (41, 'scan quotes @ version 1')
    >>> daily = q.group_by("symbol").agg(hi=pl.col("bid").max())   # node and driver stages
    >>> daily.collect().rows(), daily.explain().splitlines()[0]
    ([('IBM', 62.75)], 'query on quotes @ version 1')
    """

    def __init__(self, source: TableSource | FrameSource, ops: tuple[Op, ...] = (),
                 schema: pl.Schema | None = None, *, fixed: int = 0,
                 read: tuple[list[str], pl.Expr | None] | None = None) -> None:
        self.source = source
        self._ops: tuple[Op, ...] | None = None if read is not None else ops
        self._schema = schema
        self._fixed = fixed
        """The first ``fixed`` ops are the source's ``dates=``/``symbols=`` filters."""
        self._read = read
        """``(columns, where)`` of a query made by ``scan()``: its ops are built on demand."""
        self.last_run: RunStats | None = None
        # the staged plan (or the plain read), made once: the query reads pinned versions
        self._memo: list[Staged | PlainRead] = []

    def __repr__(self) -> str:
        return f"<hfq.Query on {self.source.name}: {len(self.ops)} operation(s)>"

    # -- schema ---------------------------------------------------------------------------------
    @property
    def ops(self) -> tuple[Op, ...]:
        """The logical plan's operations, in order (what :meth:`explain` splits between
        the nodes and the driver).

        Examples
        --------
        >>> [type(op).__name__ for op in quotes.query().filter(pl.col("bid") > 0).ops]
        ['Filter']
        """
        if self._ops is None:
            assert self._read is not None and isinstance(self.source, TableSource)
            columns, where = self._read
            q = _source_query(self.source)
            if where is not None:
                q = q.filter(where)
            if columns != q.columns:
                q = q.select(columns)
            self._ops, self._schema, self._fixed = q.ops, q.schema, q._fixed
        return self._ops

    @property
    def schema(self) -> pl.Schema:
        """The result's column names and polars types.

        Examples
        --------
        >>> quotes.query().select("symbol", "bid").schema
        Schema([('symbol', Categorical), ('bid', Float64)])
        """
        if self._schema is None:
            if self._read is not None and self._ops is None:
                self._schema = self.source.schema
                columns = self._read[0]
                if columns != self._schema.names():
                    self._schema = pl.Schema({c: self._schema[c] for c in columns})
            else:
                self._schema = check_schema_all(self.ops, self.source.schema)
        return self._schema

    @property
    def columns(self) -> list[str]:
        """The result's column names.

        Examples
        --------
        >>> quotes.query().select("symbol", "bid").columns
        ['symbol', 'bid']
        """
        return self.schema.names()

    def _then(self, op: Op) -> Query:
        return Query(self.source, (*self.ops, op), check_schema(op, self.schema),
                     fixed=self._fixed)

    # -- building -------------------------------------------------------------------------------
    def filter(self, *predicates: IntoExpr, **equal: Any) -> Query:
        """Keep the rows where every predicate holds (nulls count as false);
        ``name=value`` tests equality.

        Examples
        --------
        >>> q = quotes.query(dates="2007-08-01", symbols=["IBM", "MSFT"])
        >>> q.filter(pl.col("bid") > 62, symbol="IBM").count()
        3
        """
        parts = list(_exprs(predicates, {}, self.schema))
        parts += [pl.col(k) == v for k, v in equal.items()]
        if not parts:
            raise QueryError("filter() needs at least one predicate")
        pred = parts[0]
        for p in parts[1:]:
            pred = pred & p
        return self._then(Filter(pred))

    where = filter

    def with_columns(self, *exprs: IntoExpr, **named: IntoExpr) -> Query:
        """Add or replace columns; window expressions (``.over(...)``) keep every row.

        Examples
        --------
        >>> q = quotes.query(symbols="IBM").with_columns(mid=(pl.col("bid") + pl.col("ofr")) / 2)
        >>> q.select("symbol", "mid").head(2).collect().rows()
        [('IBM', 62.754999999999995), ('IBM', 62.435)]
        """
        return self._then(WithColumns(_exprs(exprs, named, self.schema)))

    def select(self, *exprs: IntoExpr, **named: IntoExpr) -> Query:
        """Keep these columns or expressions; all aggregates give one row.

        Examples
        --------
        >>> quotes.query().select("symbol", spread=pl.col("ofr") - pl.col("bid")).columns
        ['symbol', 'spread']
        """
        return self._then(Select(_exprs(exprs, named, self.schema)))

    def rename(self, mapping: dict[str, str]) -> Query:
        """Rename columns: ``{"old": "new"}``.

        Examples
        --------
        >>> quotes.query().rename({"bid": "b"}).columns[:5]
        ['symbol', 'date', 'time', 'b', 'ofr']
        """
        return self._then(Rename(tuple(mapping.items())))

    def group_by(self, *keys: IntoExpr, **named: IntoExpr) -> GroupBy:
        """Group by columns, expressions or :func:`hfq.bucket`; then call ``.agg(...)``.

        Examples
        --------
        >>> q = quotes.query(dates="2007-08-01", symbols=["IBM", "MSFT"]).group_by("symbol")
        >>> q.agg(n=pl.len(), hi=pl.col("bid").max()).sort("symbol").collect().rows()
        [('IBM', 32, 62.75), ('MSFT', 111, 23.15)]
        """
        resolved = _exprs(keys, named, self.schema)
        if not resolved:
            raise QueryError("group_by() needs at least one key")
        return GroupBy(self, resolved)

    def agg(self, *aggs: IntoExpr, **named: IntoExpr) -> Query:
        """Aggregates over all rows (one row).

        Examples
        --------
        >>> q = quotes.query(dates="2007-08-01", symbols=["IBM", "MSFT"])
        >>> q.agg(n=pl.len()).collect().rows()
        [(143,)]
        """
        return self._then(Aggregate((), _exprs(aggs, named, self.schema)))

    def sort(self, by: IntoExpr | Sequence[IntoExpr], *more: IntoExpr,
             descending: bool | Sequence[bool] = False,
             nulls_last: bool | Sequence[bool] = False) -> Query:
        """Sort by columns or expressions (stable: ties keep their order).

        Examples
        --------
        >>> q = quotes.query(dates="2007-08-01", symbols=["IBM", "MSFT"])
        >>> q.sort("bid", descending=True).head(1).select("symbol", "bid").collect().rows()
        [('IBM', 62.75)]
        """
        keys = _exprs([by, *more], {}, self.schema)
        desc = _flags(descending, len(keys), "descending")
        last = _flags(nulls_last, len(keys), "nulls_last")
        return self._then(Sort(keys, desc, last))

    def head(self, n: int = 5) -> Query:
        """The first ``n`` rows (in the order the steps before give; sort first for a
        defined order).

        Examples
        --------
        >>> quotes.query(symbols="IBM").head(3).count()
        3
        """
        return self.slice(0, n)

    limit = head

    def slice(self, offset: int, length: int | None = None) -> Query:
        """``length`` rows (None: all the rest) from row ``offset``.

        Examples
        --------
        >>> quotes.query(symbols="IBM").slice(1, 2).select("time").collect()["time"].to_list()
        [datetime.time(9, 37, 58), datetime.time(9, 38, 52)]
        """
        if offset < 0 or (length is not None and length < 0):
            raise QueryError("slice() takes a non-negative offset and length")
        return self._then(Slice(offset, length))

    def unique(self, subset: str | Sequence[str] | None = None) -> Query:
        """Distinct rows (over ``subset`` when given; the first of each kept).

        Examples
        --------
        >>> quotes.query(symbols=["IBM", "MSFT"]).unique("symbol").count()
        2
        """
        cols = None if subset is None else ((subset,) if isinstance(subset, str)
                                            else tuple(subset))
        return self._then(Unique(cols))

    def top_k(self, k: int, *, by: IntoExpr | Sequence[IntoExpr],
              descending: bool | Sequence[bool] = True) -> Query:
        """The ``k`` rows with the largest ``by`` (or smallest, ``descending=False``).

        Examples
        --------
        >>> q = quotes.query(dates="2007-08-01", symbols=["IBM", "MSFT"])
        >>> q.top_k(2, by="ofrsiz").select("symbol", "ofrsiz").collect().rows()
        [('MSFT', 71), ('IBM', 54)]
        """
        return self.sort(by, descending=descending, nulls_last=True).head(k)

    # -- joins ----------------------------------------------------------------------------------
    def join(self, other: Query | pl.DataFrame, on: IntoExpr | Sequence[IntoExpr] = None, *,
             how: str = "inner", left_on: IntoExpr | Sequence[IntoExpr] = None,
             right_on: IntoExpr | Sequence[IntoExpr] = None) -> Query:
        """Join with ``other`` (a query or a polars DataFrame, run once and broadcast to the
        nodes: keep it small): ``how`` is inner, left, full, semi, anti or cross; columns of
        ``other`` that clash get the suffix ``_right``.

        Examples
        --------
        >>> counts = quotes.query(dates="2007-08-01").group_by("symbol").agg(n=pl.len())
        >>> q = quotes.query(dates="2007-08-01").join(counts, on="symbol")
        >>> q.select("symbol", "n").head(1).collect().rows()
        [('A', 13)]
        """
        if how not in ("inner", "left", "full", "semi", "anti", "cross"):
            raise QueryError(f"how={how!r}: use inner, left, full, semi, anti or cross")
        if how == "cross":
            return self._then(Join(other, (), (), "cross"))
        lk = left_on if left_on is not None else on
        rk = right_on if right_on is not None else on
        if lk is None or rk is None:
            raise QueryError("join() needs on= (or left_on= and right_on=)")
        lefts = _exprs([lk], {}, self.schema)
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
                  keep_unmatched: bool = True, known_at: bool | str = False,
                  latency: dt.timedelta | None = None) -> Query:
        """For each row, the row of ``other`` with equal ``by`` keys whose ``on`` value is
        the last at or before it (``strategy="backward"``, kdb+ ``aj``), the first at or
        after it (``"forward"``) or the nearest (``"nearest"``); ``tolerance`` bounds the
        distance; ``keep_unmatched=False`` drops rows without a match (SQL ``ASOF JOIN``).

        ``known_at=True`` (the right table's ``known_at`` column, or a column name): a left
        row at time ``t`` only sees right rows with ``known_at + latency <= t`` -- a quote
        published after the trade, or a correction made later, never leaks backwards
        (:mod:`hfq.engine.known`; backward only, no ``tolerance``).

        Examples
        --------
        >>> trades = quotes.query(symbols="IBM").select("symbol", "time", px="bid").head(2)
        >>> q = trades.join_asof(quotes.query(symbols="IBM"), on="time", by="symbol")
        >>> q.select("time", "px", "ofr").collect().rows()
        [(datetime.time(9, 31, 49), 62.75, 62.76), (datetime.time(9, 37, 58), 62.43, 62.44)]
        """
        if strategy not in ("backward", "forward", "nearest"):
            raise QueryError(f"strategy={strategy!r}: use backward, forward or nearest")
        lo, ro = left_on or on, right_on or on
        if lo is None or ro is None:
            raise QueryError("join_asof() needs on= (or left_on= and right_on=)")
        bl = _names(by_left if by_left is not None else by)
        br = _names(by_right if by_right is not None else by)
        if len(bl) != len(br):
            raise QueryError("join_asof(): by_left and by_right differ in length")
        known, lag = _known_column(other, ro, known_at, latency, "join_asof")
        if known is not None and (strategy != "backward" or tolerance is not None):
            raise QueryError("join_asof(known_at=...): only strategy='backward' without "
                             "tolerance (a forward or nearest match is a row from the future)")
        return self._then(AsofJoin(other, lo, ro, bl, br, strategy, tolerance,
                                   allow_exact_matches, keep_unmatched, known, lag))

    def window_join(self, other: Query | pl.DataFrame, on: str | None = None, *,
                    window: tuple[Any, Any], aggs: dict[str, tuple[str, str]],
                    left_on: str | None = None, right_on: str | None = None,
                    by: str | Sequence[str] | None = None, kind: str = "wj",
                    known_at: bool | str = False, latency: dt.timedelta | None = None
                    ) -> Query:
        """kdb+'s window join: for each row at time ``t``, aggregates of the rows of
        ``other`` with equal ``by`` keys and time in ``[t + window[0], t + window[1]]``
        (timedeltas or ints in the column's unit).  ``aggs``: ``{"name": ("sum", "size")}``
        with sum, count, mean, min, max, first or last.  ``kind="wj"`` also counts the row
        in effect at the window's start; ``"wj1"`` only rows inside the window.

        Examples
        --------
        >>> import datetime as dt
        >>> ibm = quotes.query(symbols="IBM", dates="2007-08-01")
        >>> q = ibm.window_join(quotes.query(symbols="IBM"), on="time", by="symbol",
        ...                     window=(dt.timedelta(minutes=-5), dt.timedelta(0)),
        ...                     aggs={"n": ("count", "bid")})
        >>> q.select("time", "n").head(2).collect().rows()
        [(datetime.time(9, 31, 49), 1), (datetime.time(9, 37, 58), 2)]
        """
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
        known, lag = _known_column(other, ro_col, known_at, latency, "window_join")
        op = WindowJoin(other, lo_col, ro_col, keys, keys, ticks[0], ticks[1],
                        tuple((n, h, s) for n, (h, s) in aggs.items()), kind == "wj",
                        known, lag)
        return self._then(op)

    # -- reshaping --------------------------------------------------------------------------------
    def pivot(self, on: str, *, index: str | Sequence[str], values: str,
              columns: Sequence[Any], aggregate: str = "first") -> Query:
        """One row per ``index``, one column per value of ``on`` listed in ``columns`` (in
        that order), holding ``aggregate`` (first, last, sum, mean, min, max, len) of
        ``values``; runs on the driver.

        Examples
        --------
        >>> days = quotes.query(symbols=["IBM", "MSFT"]).group_by("date", "symbol")
        >>> q = days.agg(n=pl.len()).pivot("symbol", index="date", values="n",
        ...                                columns=["IBM", "MSFT"])
        >>> q.sort("date").collect().rows()
        [(datetime.date(2007, 8, 1), 32, 111), (datetime.date(2007, 8, 2), 9, 85)]
        """
        if aggregate not in ("first", "last", "sum", "mean", "min", "max", "len", "median"):
            raise QueryError(f"aggregate={aggregate!r} is not supported")
        return self._then(Pivot(on, _names(index), values, tuple(columns), aggregate))

    def unpivot(self, on: str | Sequence[str], *, index: str | Sequence[str],
                variable_name: str = "variable", value_name: str = "value") -> Query:
        """Columns ``on`` become rows of (``variable_name``, ``value_name``).

        Examples
        --------
        >>> q = quotes.query(symbols="IBM").select("time", "bid", "ofr").head(1)
        >>> q.unpivot(["bid", "ofr"], index="time").collect().rows()
        [(datetime.time(9, 31, 49), 'bid', 62.75), (datetime.time(9, 31, 49), 'ofr', 62.76)]
        """
        return self._then(Unpivot(_names(on), _names(index), variable_name, value_name))

    def fill(self, on: str, every: str, *, by: str | Sequence[str] = (),
             columns: str | Sequence[str], method: str = "forward", value: Any = None
             ) -> Query:
        """The rows on a regular grid of ``every`` over ``on`` (per ``by`` group, from its
        first to its last bucket), the last value of each bucket, gaps filled ``forward``,
        ``backward``, ``linear`` or with a ``constant`` ``value``.

        Examples
        --------
        >>> q = quotes.query(symbols="IBM", dates="2007-08-01")
        >>> q.fill("time", "1h", by="symbol", columns="bid").head(2).collect().rows()
        [('IBM', datetime.time(9, 0), 61.73), ('IBM', datetime.time(10, 0), 61.66)]
        """
        if method not in ("forward", "backward", "linear", "constant"):
            raise QueryError(f"method={method!r}: use forward, backward, linear or constant")
        return self._then(Fill(on, every, _names(by), _names(columns), method, value))

    def sample(self, fraction: float, *, seed: int = 0) -> Query:
        """About ``fraction`` of the rows, the same ones for the same seed and data
        wherever each partition runs.

        Examples
        --------
        >>> quotes.query().sample(0.1, seed=1).count()
        984
        """
        if not 0.0 <= fraction <= 1.0:
            raise QueryError(f"fraction must be in [0, 1], not {fraction!r}")
        return self._then(Sample(fraction, seed))

    def pipe(self, fn: Callable[..., Query], *args: Any, **kwargs: Any) -> Query:
        """``fn(self, *args, **kwargs)``: a step of your own in a chain.

        Examples
        --------
        >>> quotes.query().pipe(lambda q, n: q.head(n), 3).count()
        3
        """
        return fn(self, *args, **kwargs)

    # -- running --------------------------------------------------------------------------------
    def _plain(self) -> PlainRead | None:
        """This query as a plain read (see the class), or None."""
        if self._memo:
            got = self._memo[0]
            return got if isinstance(got, PlainRead) else None
        src = self.source
        if isinstance(src, FrameSource) or src.rowid:   # rows given, not read (they run on
            return None                                  # the driver), or numbered: staged
        if src.live is not None:   # files and live rows: read by the node stage
            return None
        if self._read is not None:
            columns, where = self._read
            if where is not None and src.policy.rows is not None:
                return None   # the caller's filter runs after the policy's: a query
            read = src.session.plan_read(src.manifest, columns=columns, where=where,
                                         filters=src.filters())
        else:
            found = _plain_parts(self.ops[self._fixed:], self.source.schema.names())
            if found is None:
                return None
            columns, where = found
            if where is not None and src.policy.rows is not None:
                return None
            lo, hi, symbols = hints(self.ops[self._fixed:], src)
            filters = Filters(src.date_column, lo, hi, src.symbol_column, symbols)
            read = src.session.plan_read(src.manifest, columns=columns, where=where,
                                         filters=filters)
        plain = PlainRead(src.session, read)
        self._memo.append(plain)
        return plain

    def _staged(self) -> Staged:
        if not self._memo:
            if self._plain() is None:
                self._memo.append(stage(self))
        got = self._memo[0]
        return got if isinstance(got, Staged) else stage(self)

    @property
    def plan(self) -> Plan:
        """The partitions this query reads, kept and pruned (the read of its node stage).

        Examples
        --------
        >>> plan = quotes.scan(dates="2007-08-01", symbols="IBM").plan
        >>> len(plan.units), plan.partitions_total, plan.rows
        (1, 4, 3126)
        """
        plain = self._plain()
        return plain.plan if plain is not None else self._staged().plan

    def explain(self) -> str:
        """What runs: for a plain read, the partitions and record batches kept and pruned,
        rows and bytes; otherwise the node stage, the driver stage and an estimate of the
        bytes that travel to the driver.

        Examples
        --------
        >>> q = quotes.scan(columns=["time", "bid"], dates="2007-08-01", symbols="IBM")
        >>> print(q.explain())                    # doctest: +ELLIPSIS
        scan quotes @ version 1
          columns: time, bid
          partitions: 1 kept, 3 pruned of 4
          record batches: 1 kept of 4
          rows to read: 3,126 (before row filters); bytes on disk: ...
          dates: 2007-08-01 .. 2007-08-01 on date
          symbols: 'IBM' on symbol
            date=v2007-08-01/symbol=h0: 3,126 rows, 1 file(s)
        >>> print(quotes.query().group_by("symbol").agg(pl.len()).explain())  # doctest: +ELLIPSIS
        query on quotes @ version 1
        node stage (each partition, on a node holding it):
        ...
        """
        if isinstance(self.source, FrameSource):
            return "driver stage (no table):\n" + "\n".join(f"  {op.describe()}"
                                                             for op in self.ops)
        if self.source.policy.restricted:
            return _restricted_explain(self)
        plain = self._plain()
        return plain.explain() if plain is not None else explain(self._staged())

    def collect(self, *, progress: bool = False) -> pl.DataFrame:
        """Run the query; the answer as a polars DataFrame (SYMBOL and CHAR columns
        categorical).

        Examples
        --------
        >>> df = quotes.scan(symbols="IBM", columns=["symbol", "date", "bid"]).collect()
        >>> df.shape, df.schema["symbol"], df["date"].n_unique()
        ((41, 3), Categorical, 2)
        """
        if isinstance(self.source, FrameSource):
            return run_rows(self.source.frame, self.ops)
        plain = self._plain()
        if plain is not None:
            started = time.perf_counter()
            fast = run_selective(self, plain.plan)
            frame = fast if fast is not None else plain.to_polars()
            self.last_run = RunStats(len(plain.plan.units), frame.height,
                                     int(frame.estimated_size()),
                                     time.perf_counter() - started)
            return frame
        frame, self.last_run = run(self._staged(), progress=progress)
        return frame

    to_polars = collect

    def to_arrow(self) -> pa.Table:
        """The answer as one Arrow table (a plain read: chunked by partition).

        Examples
        --------
        >>> day = quotes.scan(dates="2007-08-02", columns=["symbol", "bid"]).to_arrow()
        >>> day.num_rows, day["bid"].num_chunks, day.schema.field("bid").type   # 2 partitions
        (5000, 2, DataType(double))
        """
        plain = self._plain()
        return plain.to_arrow() if plain is not None else self.collect().to_arrow()

    def to_pandas(self) -> pandas.DataFrame:
        """The answer as pandas, with no per-row Python objects: SYMBOL and CHAR columns
        categoricals, DATE columns ``datetime64``, times of day (SECOND, TIME)
        ``timedelta64`` since midnight.

        Examples
        --------
        >>> df = quotes.scan(symbols="IBM", columns=["symbol", "date", "time"]).to_pandas()
        >>> df.dtypes.astype(str).to_dict()
        {'symbol': 'category', 'date': 'datetime64[ms]', 'time': 'timedelta64[s]'}
        """
        plain = self._plain()
        if plain is not None:
            return plain.to_pandas()
        return pandas_ready(self.collect().to_arrow()).to_pandas(date_as_object=False)

    def iter_arrow(self) -> Iterator[pa.Table]:
        """The answer piece by piece: a plain read yields one Arrow table per partition, in
        partition order, reading ahead in parallel; any other query runs first and yields
        its answer.

        Examples
        --------
        >>> for part in quotes.scan(dates="2007-08-01", columns=["symbol"]).iter_arrow():
        ...     print(part.num_rows, part["symbol"][0])
        3126 A
        1874 AAPL
        """
        plain = self._plain()
        if plain is not None:
            yield from plain.iter_arrow()
        else:
            yield self.collect().to_arrow()

    def iter_batches(self) -> Iterator[pa.RecordBatch]:
        """The answer as Arrow record batches (see :meth:`iter_arrow`).

        Examples
        --------
        >>> sum(b.num_rows for b in quotes.scan(dates="2007-08-01").iter_batches())
        5000
        """
        for table in self.iter_arrow():
            yield from table.to_batches()

    def count(self) -> int:
        """The number of rows of the answer, reading only what it needs: a plain read without
        a row filter whose partitions match as a whole is answered by the catalog.

        Examples
        --------
        >>> quotes.scan(dates="2007-08-02").count()           # from the catalog
        5000
        >>> quotes.scan(where=pl.col("bid") > 0).count()      # reads the bid column
        9941
        >>> quotes.query().filter(pl.col("bid") > 0).unique("symbol").count()
        48
        """
        plain = self._plain()
        if plain is not None:
            return plain.count()
        return int(self.agg(pl.len().alias("n")).collect()["n"][0])

    def to_csv(self, path: str) -> int:
        """Write the answer as CSV (ISO dates and times; what hfq writes, a CSV load reads
        back unchanged), streaming a plain read; returns the rows written.

        Examples
        --------
        >>> ibm = quotes.scan(symbols="IBM", columns=["date", "time", "bid", "ofr"])
        >>> ibm.to_csv(f"{tmp}/ibm.csv")
        41
        >>> from pathlib import Path
        >>> print(*Path(f"{tmp}/ibm.csv").read_text().splitlines()[:3], sep="\\n")
        "date","time","bid","ofr"
        2007-08-01,09:31:49,62.75,62.76
        2007-08-01,09:37:58,62.43,62.44
        """
        plain = self._plain()
        if plain is not None:
            return plain.to_csv(path)
        import pyarrow.csv as pacsv
        table = self.collect().to_arrow()
        schema = plain_schema(table.schema)
        with pacsv.CSVWriter(path, schema) as writer:
            writer.write_table(table.cast(schema))
        return table.num_rows

    def write(self, name: str, **options: Any) -> int:
        """Run the query and store the answer as table ``name`` through the one write path
        (created when missing; see :func:`hfq.engine.write.write_frame`); returns its
        version.

        Examples
        --------
        >>> mydb = hfq.connect(tmp)
        >>> t = mydb.create_table("q", hfq.schemas.TAQ, partition_by=hfq.Value("date"))
        >>> _ = t.append(quotes.to_arrow(symbols="IBM"))
        >>> t.query().group_by("date").agg(n=pl.len()).write("daily")
        1
        >>> mydb["daily"].to_polars().sort("date").rows()
        [(datetime.date(2007, 8, 1), 32), (datetime.date(2007, 8, 2), 9)]
        """
        from hfq.engine.write import write_frame
        if not isinstance(self.source, TableSource):
            raise QueryError("write(): a query without a table (SELECT without FROM) has no "
                             "database to write to")
        return write_frame(self.source.session, self.source.manifest, name, self.collect(),
                           **options)


def _restricted_explain(query: Query) -> str:
    """The plan of a query whose reader is under a policy: its operations only.  The
    partitions, rows and bytes a read would meet, and the policy's predicate, are about rows
    the reader may not see, so they are not shown."""
    src = cast(TableSource, query.source)
    lines = [f"query on {src.name} @ version {src.manifest.version}",
             "  (the reader's row policy and column masks apply where the table is read; "
             "partition statistics are not shown)"]
    lines += [f"  {op.describe()}" for op in query.ops]
    return "\n".join(lines)


def reuse(query: Query) -> Query:
    """The same query with its own ``last_run``, sharing the plan made already (what a cache
    of compiled statements hands out).

    Examples
    --------
    >>> q = quotes.scan(symbols="IBM")
    >>> q.count() == reuse(q).count() and reuse(q)._memo is q._memo
    True
    """
    q = Query(query.source, query._ops or (), query._schema, fixed=query._fixed,
              read=query._read if query._ops is None else None)
    if getattr(query.source, "live", None) is None:   # live rows: pinned anew when planned
        q._memo = query._memo
    return q


def _source_query(src: TableSource) -> Query:
    """The query of ``src`` alone: its ``dates=``/``symbols=`` also as row filters (pruning
    alone keeps whole batches)."""
    q = Query(src)
    if src.date_lo or src.date_hi:
        col = pl.col(cast(str, src.date_column))
        if isinstance(src.schema[cast(str, src.date_column)], pl.Datetime):
            col = col.dt.date()
        if src.date_lo:
            q = q.filter(col >= dt.date.fromisoformat(src.date_lo))
        if src.date_hi:
            q = q.filter(col <= dt.date.fromisoformat(src.date_hi))
    if src.symbols is not None:
        q = q.filter(pl.col(cast(str, src.symbol_column)).is_in(list(src.symbols)))
    q._fixed = len(q.ops)
    return q


def _plain_parts(ops: Sequence[Op], names: list[str]
                 ) -> tuple[list[str], pl.Expr | None] | None:
    """``(columns, where)`` when ``ops`` are row-wise filters, then at most a projection of
    distinct source columns; None otherwise."""
    where: pl.Expr | None = None
    columns = list(names)
    for i, op in enumerate(ops):
        if isinstance(op, Filter) and op.local(frozenset()):
            where = op.predicate if where is None else where & op.predicate
            continue
        if isinstance(op, Select) and i == len(ops) - 1:
            picked = [plain_name(e) for e in op.exprs]
            if all(p is not None and p in names for p in picked) and \
                    len(set(picked)) == len(picked) and picked:
                columns = cast(list[str], picked)
                continue
        return None
    return columns, where


def check_schema_all(ops: Sequence[Op], schema: pl.Schema) -> pl.Schema:
    for op in ops:
        schema = check_schema(op, schema)
    return schema


def check_schema(op: Op, schema: pl.Schema) -> pl.Schema:
    """The schema after ``op``, or a :class:`QueryError` naming the step and the problem."""
    try:
        return op.apply(empty_lazy(schema)).collect_schema()
    except pl.exceptions.ColumnNotFoundError as exc:
        m = re.search(r'unable to find column "([^"]*)"', str(exc))
        name = repr(m.group(1)) if m else polars_message(exc)
        raise QueryError(f"{op.describe()}: unknown column {name}; columns: "
                         f"{', '.join(schema.names())}") from exc
    except (pl.exceptions.PolarsError, TypeError, ValueError) as exc:
        raise QueryError(f"{op.describe()}: {polars_message(exc)}") from exc




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


def _known_column(other: Query | pl.DataFrame, on: str, known_at: bool | str,
                  latency: dt.timedelta | None, what: str) -> tuple[str | None, int]:
    """The right side's knowledge-time column a ``known_at=`` join uses (None: none asked)
    and the latency in the ticks of ``on``; a :class:`QueryError` says what is missing."""
    if known_at is False or known_at is None:
        if latency is not None:
            raise QueryError(f"{what}(latency=...) needs known_at=")
        return None, 0
    if known_at is True:
        source = getattr(other, "source", None)
        column = (source.manifest.options.get("known_at") if source is not None else None)
        if column is None:
            raise QueryError(f"{what}(known_at=True): the right side is not a table that "
                             "declares a known_at column; pass known_at='column'")
    elif isinstance(known_at, str):
        column = known_at
    else:
        raise QueryError(f"{what}(known_at={known_at!r}): True or a column name")
    schema = other.schema
    for name in (column, on):
        if name not in schema:
            raise QueryError(f"{what}(known_at=...): no column {name!r} on the right; "
                             f"columns: {', '.join(schema.names())}")
        if not isinstance(schema[name], pl.Datetime):
            raise QueryError(f"{what}(known_at=...): {name!r} is {schema[name]}; knowledge "
                             "time is compared with timestamps (TIMESTAMP or DATETIME columns)")
    lag = 0 if latency is None else _ticks(latency, schema[on])
    if lag < 0:
        raise QueryError(f"{what}(latency={latency!r}): a latency is not negative")
    return str(column), lag


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
    """The groups of a query (what :meth:`Query.group_by` returns): :meth:`agg` or :meth:`len`
    makes the aggregate query, one row per group, computed next to the data.

    Examples
    --------
    >>> import hfq, polars as pl
    >>> ibm = quotes.query(dates="2007-08-01", symbols="IBM")
    >>> hourly = ibm.group_by(hfq.bucket("time", "1h", anchor="09:30"))
    >>> mid = ((pl.col("bid") + pl.col("ofr")) / 2).mean().round(2)
    >>> hourly.agg(quotes=pl.len(), mid=mid).sort("time").head(2).collect().rows()
    [(datetime.time(9, 30), 8, 62.05), (datetime.time(10, 30), 5, 61.69)]
    """

    def __init__(self, query: Query, keys: tuple[pl.Expr, ...]) -> None:
        self.query = query
        self.keys = keys

    def agg(self, *aggs: IntoExpr, **named: IntoExpr) -> Query:
        """One row per group: the keys, then the aggregates, groups in order of first
        appearance (partition order, then row order).

        Examples
        --------
        >>> import polars as pl
        >>> by_symbol = quotes.query(dates="2007-08-01").group_by("symbol")
        >>> q = by_symbol.agg(pl.len(), pl.col("bid").max(), low_ofr=pl.col("ofr").min())
        >>> q.sort("symbol").head(2).collect().rows()
        [('A', 13, 12.53, 12.22), ('AA', 46, 16.08, 15.7)]
        """
        exprs = _exprs(aggs, named, self.query.schema)
        if not exprs:
            raise QueryError("agg() needs at least one aggregate")
        return self.query._then(Aggregate(self.keys, exprs))

    def len(self, name: str = "len") -> Query:
        """The rows of each group, in column ``name``.

        Examples
        --------
        >>> q = quotes.query().group_by("symbol").len().sort("len", descending=True)
        >>> q.head(1).collect().rows()
        [('WMT', 4733)]
        """
        return self.agg(pl.len().alias(name))


def plain_query(session: Session, name: str, manifest: Manifest, *,
                columns: Sequence[str] | None = None, where: pl.Expr | None = None,
                dates: Any = None, symbols: Iterable[str] | str | None = None,
                live: Any = None) -> Query:
    """The plain read of ``columns`` of the rows passing ``where``/``dates``/``symbols``
    (what :meth:`hfq.Table.scan` returns); bad arguments raise
    :class:`~hfq.errors.ArgumentError` naming the argument."""
    filters = read_filters(manifest, dates=dates, symbols=symbols)
    src = TableSource(session, name, manifest, filters.date_column, filters.symbol_column,
                      filters.date_lo, filters.date_hi, filters.symbols, live=live)
    cols = check_columns(manifest, columns, hidden=src.policy.hidden)
    check_where(manifest, where, hidden=src.policy.hidden)
    return Query(src, read=(cols, where))


def make_query(session: Session, name: str, manifest: Manifest, *, dates: Any = None,
               symbols: Iterable[str] | str | None = None, rowid: bool = False,
               live: Any = None) -> Query:
    """A query over one pinned version of a table (what :meth:`hfq.Table.query` returns);
    bad ``dates=``/``symbols=`` raise :class:`~hfq.errors.ArgumentError`.  ``rowid``: the
    rows carry their position in the version's storage order (see :mod:`hfq.engine.rowid`)
    in column :data:`~hfq.engine.rowid.ROWID`.  ``live``: the table's live rows (see
    :class:`TableSource`)."""
    filters = read_filters(manifest, dates=dates, symbols=symbols)
    src = TableSource(session, name, manifest, filters.date_column, filters.symbol_column,
                      filters.date_lo, filters.date_hi, filters.symbols, rowid, live)
    if rowid and src.policy.rows is not None:
        # the numbering counts every stored row: its gaps would tell hidden rows apart
        raise QueryError(f"rowid is not available on table {name!r} to a reader under a row "
                         "policy (its numbering would reveal the rows the policy hides)")
    return _source_query(src)
