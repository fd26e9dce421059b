"""Time bars (1 minute, 5 minutes, 1 hour, ...) computed where each partition is stored and
written back there, into a destination table with the same partitioning.

Quotes (``bid``/``ofr`` columns) give the published bars -- average bid and offer -- plus the
open, high, low and close of the mid and the quote count; trades (``price``/``size``) give
open, high, low, close, volume, VWAP and the trade count.  Null and NaN prices are missing
values: left out of the averages, the OHLC and the VWAP, but counted (a bar of only such rows
has null prices).  Bars are keyed by the source's
partition, date and symbol columns and the bar's start time (same type as the source's time).

Each partition's bars are encoded on its node and put on the nodes that hold the source
partition (placement permitting), then the driver commits every partition in one version of
the destination: readers see all the bars of a run or none.  Running again over the same dates
and symbols replaces those bars (other dates in a destination partition are kept), so a rerun
never duplicates rows.  If anything fails, the files this run wrote are removed and nothing is
committed.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import polars as pl
import pyarrow as pa

from hfq.catalog.records import Fragment
from hfq.errors import SchemaMismatchError
from hfq.query.plan import Unit, filter_columns
from hfq.query.read import PartitionFunction
from hfq.runtime.task import NodeContext
from hfq.schema import DOUBLE, LONG, Schema
from hfq.session import map_reduce
from hfq.write import FileWriter, Write

if TYPE_CHECKING:
    from hfq.session import TableLike

__all__ = ["minute_bars"]

_UNITS = {"s": 1, "m": 60, "min": 60, "h": 3600}
_QUOTE_BARS = ("bid", "ofr", "open", "high", "low", "close", "count")
_TRADE_BARS = ("open", "high", "low", "close", "volume", "vwap", "count")


def bar_seconds(bar: str) -> int:
    """``"1m"`` -> 60; ``"30s"``, ``"5m"``/``"5min"``, ``"1h"``."""
    match = re.fullmatch(r"\s*(\d+)\s*(s|m|min|h)\s*", str(bar))
    if not match or int(match.group(1)) == 0:
        raise ValueError(f"bar must look like '30s', '1m', '5min' or '1h', not {bar!r}")
    seconds = int(match.group(1)) * _UNITS[match.group(2)]
    if 86400 % seconds:
        raise ValueError(f"bar {bar!r} does not divide a day into whole bars")
    return seconds


def minute_bars(table: TableLike, dest: str, *, dates: Any = None, symbols: Any = None,
                bar: str = "1m", time: str = "time", where: pl.Expr | None = None,
                progress: bool | None = None, compression: str | None = "lz4") -> int:
    """Aggregate ``table`` into ``bar``-long bars stored in table ``dest`` (created with the
    source's partitioning when missing); returns the number of bar rows written.

    ``where``: a polars expression keeping the rows that enter the bars -- the same clean
    filter as the other analytics take (e.g. :func:`hfq.quality.clean_quotes`, which keeps a
    sentinel offer out of a bar's high); a bar none of whose rows pass is not written.

    ``compression``: the codec of ``dest`` when this call creates it (kept with the table,
    see :meth:`hfq.Database.create_table`); lz4 by default -- bars are derived, re-made
    cheaply and read often, and lz4 writes them ~2x faster than zstd (for ~1.5x the bytes).
    ``None``: the database's ``compression`` setting.

    Examples
    --------
    >>> from hfq import analytics as ha
    >>> from hfq.demo import example_quotes
    >>> quotes = example_quotes(days=1)
    >>> written = ha.minute_bars(quotes, "quotes_5m", bar="5m")
    >>> written == len(quotes.db["quotes_5m"])
    True
    >>> quotes.db["quotes_5m"].schema.names
    ['symbol', 'date', 'time', 'bid', 'ofr', 'open', 'high', 'low', 'close', 'count']
    >>> quotes.db.close()
    """
    session = table.session
    source = table.snapshot()
    kind = _kind(source.schema, table.name)
    if time not in source.schema:
        raise SchemaMismatchError(f"table {table.name!r} has no time column {time!r}")
    date_col, symbol_col = filter_columns(source)
    keys = [c for c in source.schema.names
            if c in {lvl.column for lvl in source.partition_by.levels()} | {date_col, symbol_col}
            and c != time]
    schema = Schema([*((c, source.schema[c]) for c in keys), (time, source.schema[time]),
                     *((c, LONG if c in ("count", "volume") else DOUBLE)
                       for c in (_QUOTE_BARS if kind == "quotes" else _TRADE_BARS))])
    sort_by = tuple(c for c in (symbol_col, time) if c)
    if not session.exists(dest):
        session.create_table(dest, schema, partition_by=source.partition_by, sort_by=sort_by,
                        date_column=date_col, symbol_column=symbol_col,
                        replicas=source.options.get("replicas"), compression=compression)
    base = session.snapshot(dest)
    if base.schema != schema or base.partition_by != source.partition_by:
        raise SchemaMismatchError(
            f"table {dest!r} exists with schema {base.schema} partitioned by "
            f"{base.partition_by}; {kind} bars of {table.name!r} need {schema} partitioned by "
            f"{source.partition_by}")
    read = session.plan_read(source, dates=dates, symbols=symbols)
    paths = {u.partition for u in read.plan.units}
    filters = read.spec.filters
    columns = list(dict.fromkeys([*keys, time, *_inputs(kind)]))
    with Write(session, base) as write:
        task = _BarsTask(
            kind=kind, keys=keys, time=time, bar_ns=bar_seconds(bar) * 1_000_000_000,
            schema=schema, files=dataclasses.replace(write.files, alike=True),
            existing={p: v.fragments for p, v in base.partitions.items() if p in paths},
            date_col=filters.date_column if (filters.date_lo or filters.date_hi) else None,
            date_lo=filters.date_lo, date_hi=filters.date_hi,
            symbol_col=filters.symbol_column if filters.symbols is not None else None,
            symbols=filters.symbols,
            sorted_by_symbol=symbol_col if tuple(source.sort_by[:2]) == (symbol_col, time)
            else None)
        written = map_reduce(table, task, lambda a, b: a + b, columns=columns, dates=dates,
                             symbols=symbols, version=source.version, where=where,
                             progress=progress) or []
        rows = 0
        for out in written:
            if out["fragment"] is not None:
                write.stage(out["partition"], out["key"], out["fragment"])
            write.replace(out["partition"], out["replaced"])
            rows += out["rows"]
        if written:
            write.commit(f"minute_bars {bar} from {table.name}")
        return rows


def _kind(schema: Schema, name: str) -> str:
    if "bid" in schema and "ofr" in schema:
        return "quotes"
    if "price" in schema and "size" in schema:
        return "trades"
    raise SchemaMismatchError(f"table {name!r} has neither bid/ofr (quotes) nor price/size "
                              f"(trades) columns to make bars of; columns: {schema.names}")


def _inputs(kind: str) -> tuple[str, ...]:
    return ("bid", "ofr") if kind == "quotes" else ("price", "size")


def bars_of(frame: pl.DataFrame, kind: str, keys: list[str], time: str, bar_ns: int, *,
            symbol: str | None = None) -> pl.DataFrame:
    """The bars of one partition's rows (in time order within each symbol), sorted by key and
    bar start.

    ``symbol``: the rows are sorted by this column, then time (a table's usual sort order).
    When every other key is constant in the partition (one date) and nothing is null, the
    bars are runs of rows and one numba pass makes them; otherwise polars groups them.
    """
    if symbol is not None and _runs_apply(frame, keys, symbol, time):
        return _bars_by_runs(frame, kind, keys, symbol, time, bar_ns)
    return frame.group_by([*keys, bar_start(time, bar_ns)], maintain_order=True) \
        .agg(bar_aggs(kind)).sort([*keys, time])


def bar_start(time: str, bar_ns: int) -> pl.Expr:
    """The start of each row's bar, in the time column's type (a time of day)."""
    return ((pl.col(time).to_physical() // bar_ns) * bar_ns).cast(pl.Time).alias(time)


def bar_aggs(kind: str) -> list[pl.Expr]:
    """The bars' columns as polars aggregations, for ``"quotes"`` or ``"trades"`` (what the
    kernels compute; the live time-series engine, :mod:`hfq.live.bars`, streams them)."""
    if kind == "quotes":
        bid, ofr = pl.col("bid").fill_nan(None), pl.col("ofr").fill_nan(None)
        mid = ((bid + ofr) / 2).drop_nulls()
        return [bid.mean(), ofr.mean(), mid.first().alias("open"), mid.max().alias("high"),
                mid.min().alias("low"), mid.last().alias("close"), pl.len().alias("count")]
    price, size = pl.col("price").fill_nan(None), pl.col("size").cast(pl.Int64)
    traded = price.drop_nulls()
    return [traded.first().alias("open"), traded.max().alias("high"),
            traded.min().alias("low"), traded.last().alias("close"),
            size.sum().alias("volume"),
            ((price * size).sum() / size.filter(price.is_not_null()).sum())
            .fill_nan(None).alias("vwap"),   # no size traded at a price: null, not 0/0
            pl.len().alias("count")]


def _runs_apply(frame: pl.DataFrame, keys: list[str], symbol: str, time: str) -> bool:
    if frame.height == 0 or frame[symbol].null_count() or frame[time].null_count():
        return False
    for key in keys:
        if key != symbol and (frame[key].null_count() or frame[key].n_unique() != 1):
            return False
    return True


def bars_table(frame: pl.DataFrame, kind: str, keys: list[str], time: str, bar_ns: int,
               schema: Schema, *, symbol: str | None = None, where: str = "") -> pa.Table:
    """:func:`bars_of` as an Arrow table of the bars table's ``schema`` (what the bars task
    writes).  On the kernel's path the columns go from numpy to Arrow directly: a partition's
    bars never become a polars frame (that cost as much as the kernels)."""
    if symbol is None or not _runs_apply(frame, keys, symbol, time):
        return schema.conform(bars_of(frame, kind, keys, time, bar_ns).to_arrow(), where=where)
    starts, start_ns, values, count = _run_bars(frame, kind, symbol, time, bar_ns)
    # (a gather in polars, then Arrow: converting a categorical costs per row converted)
    columns: dict[str, Any] = dict(zip(keys, frame.select(keys).gather(starts).to_arrow()
                                       .columns))
    columns[time] = pa.array(start_ns, type=pa.time64("ns"))
    missing = np.isnan(values).any(axis=1)   # NaN: no price in the bar -> null
    for j, name in enumerate(_names(kind)):   # (a null mask only where one is needed)
        columns[name] = pa.array(values[j].astype(np.int64)) if name == "volume" else \
            pa.array(values[j], from_pandas=bool(missing[j]))
    columns["count"] = pa.array(count)
    return schema.conform(pa.table(columns), where=where)


def _names(kind: str) -> tuple[str, ...]:
    """The kernel's value rows, in order."""
    return ("bid", "ofr", "open", "high", "low", "close") if kind == "quotes" else \
        ("open", "high", "low", "close", "volume", "vwap")


def _run_bars(frame: pl.DataFrame, kind: str, symbol: str, time: str, bar_ns: int
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The kernels on rows where each bar is a run: (first row of each bar, bar start in
    nanoseconds since midnight, values (6 x bars, NaN where none), row counts)."""
    from hfq.analytics import kernels
    tod = kernels.time_ns(frame[time])
    starts = kernels.runs(frame[symbol].to_physical().to_numpy(), tod, bar_ns)
    if kind == "quotes":
        values, count = kernels.quote_bars(starts, kernels.floats(frame["bid"]),
                                           kernels.floats(frame["ofr"]))
    else:
        values, count = kernels.trade_bars(starts, kernels.floats(frame["price"]),
                                           kernels.floats(frame["size"]))
    return starts, tod[starts] // bar_ns * bar_ns, values, count


def _bars_by_runs(frame: pl.DataFrame, kind: str, keys: list[str], symbol: str, time: str,
                  bar_ns: int) -> pl.DataFrame:
    starts, start_ns, values, count = _run_bars(frame, kind, symbol, time, bar_ns)
    out = frame.select(keys).gather(pl.Series(starts)).with_columns(
        pl.Series(time, start_ns).cast(pl.Time))
    cols = {name: pl.Series(name, values[j]).fill_nan(None)
            for j, name in enumerate(_names(kind))}
    if "volume" in cols:
        cols["volume"] = cols["volume"].cast(pl.Int64)
    return out.with_columns(**cols, count=pl.Series("count", count))


@dataclass
class _BarsTask(PartitionFunction):
    """On a node: one partition's bars, merged with the destination partition's bars outside
    the recomputed range, written through the run's :class:`~hfq.write.FileWriter`; returns
    what the driver stages and commits."""

    kind: str
    keys: list[str]
    time: str
    bar_ns: int
    schema: Schema
    files: FileWriter
    existing: dict[str, tuple[Fragment, ...]]
    date_col: str | None
    date_lo: str | None
    date_hi: str | None
    symbol_col: str | None
    symbols: tuple[Any, ...] | None
    sorted_by_symbol: str | None = None

    def __call__(self, frame: pl.DataFrame, unit: Unit, node: NodeContext) -> list[dict[str, Any]]:
        nodes = node.nodes()
        new = bars_table(frame, self.kind, self.keys, self.time, self.bar_ns, self.schema,
                         symbol=self.sorted_by_symbol, where=f"bars of partition {unit.partition}")
        old = self.existing.get(unit.partition, ())
        # the whole partition recomputed: nothing of the old bars survives, none to read
        whole = self.date_col is None and self.symbol_col is None
        kept = [] if whole else [self._outside_range(nodes.read_file(f, self.schema.arrow))
                                 for f in old]
        if not old and new.num_rows == 0:
            return []
        rows = pa.concat_tables([*kept, new]) if kept else new
        replaced: dict[str, Any] = {"partition": unit.partition, "key": unit.key,
                                    "fragment": None, "replaced": [f.file for f in old],
                                    "rows": new.num_rows}
        if rows.num_rows == 0:   # the recomputed range is empty now, and nothing else is left
            return [replaced]
        here = [nodes.local] if nodes.local else []
        fragment = self.files.write(nodes, unit.partition, unit.key, rows,
                                    near=[*here, *nodes.unit_holders(unit)])
        return [{**replaced, "fragment": fragment}]

    def _outside_range(self, table: pa.Table) -> pa.Table:
        """The destination rows this run does not recompute."""
        frame = cast(pl.DataFrame, pl.from_arrow(table))   # a Table gives a DataFrame
        inside = pl.lit(True)
        if self.date_col:
            day = pl.col(self.date_col).cast(pl.Date)
            if self.date_lo:
                inside &= day >= pl.lit(self.date_lo).str.to_date()
            if self.date_hi:
                inside &= day <= pl.lit(self.date_hi).str.to_date()
        if self.symbol_col:
            assert self.symbols is not None   # symbol_col is set only with symbols
            inside &= pl.col(self.symbol_col).cast(pl.String).is_in(list(self.symbols))
        return self.schema.conform(frame.filter(~inside).to_arrow())
