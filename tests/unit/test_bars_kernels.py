"""The minute-bar kernels (``runs``, ``quote_bars``) and ``bars_of`` against polars: run
boundaries at bar edges and on times out of order, NaN prices left out of every statistic, and
the kernel path of ``bars_of`` agreeing with its polars path on every column of every bar."""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

from hfq.analytics import kernels
from hfq.analytics.bars import bars_of, bars_table

MINUTE = 60_000_000_000


def rows(n: int = 4000, seed: int = 7) -> pl.DataFrame:
    """Quotes of a few symbols sorted by (symbol, time), times on and next to minute edges,
    some equal, a few out of order within a symbol; bid and offer NaN now and then."""
    rng = np.random.default_rng(seed)
    sym = np.sort(rng.integers(0, 6, n))
    edges = rng.integers(570, 580, n) * MINUTE            # 9:30 .. 9:39
    time = edges + rng.choice([0, 1, MINUTE // 2, MINUTE - 1], n)
    order = np.lexsort((time, sym))
    sym, time = sym[order], time[order]
    swap = rng.choice(n - 1, 40, replace=False)           # a few rows out of time order
    same = sym[swap] == sym[swap + 1]
    time[swap[same]], time[swap[same] + 1] = time[swap[same] + 1], time[swap[same]]
    bid = np.round(rng.uniform(10, 11, n), 2)
    ofr = bid + np.round(rng.uniform(0.01, 0.05, n), 2)
    bid[rng.random(n) < 0.05] = np.nan
    ofr[rng.random(n) < 0.05] = np.nan
    nan_run = (sym == 5) & (time // MINUTE == 575)         # a bar with no usable quote at all
    bid[nan_run] = np.nan
    return pl.DataFrame({
        "symbol": pl.Series([f"S{s}" for s in sym]).cast(pl.Categorical),
        "date": pl.Series([19724] * n).cast(pl.Date),
        "time": pl.Series(time).cast(pl.Time),
        "bid": bid, "ofr": ofr})


def test_runs_start_where_the_symbol_or_the_bar_changes():
    frame = rows()
    sym = frame["symbol"].to_physical().to_numpy()
    tod = kernels.time_ns(frame["time"])
    for bar in (MINUTE, 5 * MINUTE, MINUTE // 2):
        want = pl.DataFrame({"s": sym, "b": tod // bar}).select(
            (pl.col("s") != pl.col("s").shift()) | (pl.col("b") != pl.col("b").shift())
        ).to_series().fill_null(True).arg_true().to_numpy()
        got = kernels.runs(sym, tod, bar)
        np.testing.assert_array_equal(got, want)
    # a row back in time inside its symbol starts a run even within the span of the last bar
    back = np.array([10, 70, 65, 30], dtype=np.int64) * 1_000_000_000
    np.testing.assert_array_equal(kernels.runs(np.zeros(4, np.uint32), back, MINUTE),
                                  [0, 1, 3])


def quote_bars_polars(frame: pl.DataFrame, starts: np.ndarray) -> pl.DataFrame:
    run = np.zeros(frame.height, dtype=np.int64)
    run[starts[1:]] = 1
    bid, ofr = pl.col("bid").fill_nan(None), pl.col("ofr").fill_nan(None)
    mid = ((bid + ofr) / 2).drop_nulls()
    return (frame.with_columns(run=pl.Series(np.cumsum(run)))
            .group_by("run", maintain_order=True)
            .agg(bid.mean(), ofr.mean(), mid.first().alias("open"), mid.max().alias("high"),
                 mid.min().alias("low"), mid.last().alias("close"), pl.len().alias("count")))


def test_quote_bars_leave_nan_prices_out_and_count_every_row():
    frame = rows()
    starts = kernels.runs(frame["symbol"].to_physical().to_numpy(),
                          kernels.time_ns(frame["time"]), MINUTE)
    values, count = kernels.quote_bars(starts, kernels.floats(frame["bid"]),
                                       kernels.floats(frame["ofr"]))
    want = quote_bars_polars(frame, starts)
    for j, name in enumerate(("bid", "ofr", "open", "high", "low", "close")):
        expected = want[name].fill_null(np.nan).to_numpy()
        np.testing.assert_allclose(values[j], expected, rtol=1e-12, atol=0, equal_nan=True,
                                   err_msg=name)
    np.testing.assert_array_equal(count, want["count"].to_numpy())
    assert np.isnan(values[2:]).all(axis=0).any()   # the bar without a quote has no prices


@pytest.mark.parametrize("bar", [MINUTE, 5 * MINUTE])
def test_bars_of_by_runs_matches_its_polars_path(bar):
    # (in time order within each symbol, as a table sorted by (symbol, time) stores them)
    frame = rows(seed=11).sort("symbol", "time", maintain_order=True)
    keys = ["symbol", "date"]
    fast = bars_of(frame, "quotes", keys, "time", bar, symbol="symbol")
    slow = bars_of(frame, "quotes", keys, "time", bar)            # polars group_by
    assert fast.columns == slow.columns and fast.height == slow.height
    for name in fast.columns:
        a, b = fast[name], slow[name]
        if a.dtype.is_float():
            np.testing.assert_allclose(a.fill_null(np.nan).to_numpy(),
                                       b.fill_null(np.nan).to_numpy(), rtol=1e-12,
                                       equal_nan=True, err_msg=name)
            assert a.null_count() == b.null_count(), name
        else:   # (count: Int64 from the kernel, UInt32 from polars; the table's is LONG)
            assert a.equals(b.cast(a.dtype)), name


@pytest.mark.parametrize("kind", ["quotes", "trades"])
def test_bars_table_is_the_polars_bars_in_the_tables_schema(kind):
    """What the bars task writes (Arrow straight from the kernels) against the polars path
    conformed to the same schema: every column of every bar, bars without a price null."""
    from hfq.schema import DATE, DOUBLE, LONG, SYMBOL, TIME, Schema
    frame = rows(seed=13).sort("symbol", "time", maintain_order=True)
    if kind == "trades":
        frame = frame.select("symbol", "date", "time", price=pl.col("bid"),
                             size=pl.col("ofr").fill_nan(None).mul(100).round().cast(pl.Int64))
        names = ("open", "high", "low", "close", "volume", "vwap", "count")
    else:
        names = ("bid", "ofr", "open", "high", "low", "close", "count")
    schema = Schema([("symbol", SYMBOL), ("date", DATE), ("time", TIME),
                     *((c, LONG if c in ("count", "volume") else DOUBLE) for c in names)])
    keys = ["symbol", "date"]
    got = bars_table(frame, kind, keys, "time", MINUTE, schema, symbol="symbol")
    want = schema.conform(bars_of(frame, kind, keys, "time", MINUTE).to_arrow())
    assert got.schema == want.schema and got.num_rows == want.num_rows
    assert got.column("open").null_count > 0           # the bar without a usable quote
    for name in got.column_names:
        a, b = got.column(name), want.column(name)
        assert a.null_count == b.null_count, name
        if pa.types.is_floating(a.type):
            np.testing.assert_allclose(a.to_numpy(zero_copy_only=False),
                                       b.to_numpy(zero_copy_only=False), rtol=1e-12,
                                       equal_nan=True, err_msg=name)
        else:
            assert a.equals(b), name
