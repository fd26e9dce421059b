"""Streaming engines (issue 26 item 4) against the batch computation over the same ticks.

* Property: for any split of a tick stream into batches, the time-series engine's bars equal
  ``hfq.analytics.minute_bars``' over the stored ticks -- each stored partition's rows through
  the very function minute_bars maps over partitions (``bars_of``), hypothesis drawing the
  ticks (duplicate timestamps, NULL and NaN prices, two days) and the split; once end to end
  through ``minute_bars`` itself (on the embedded runtime).
* A window closes when the clock reaches its end, not before (a row at the last second of a
  window, after another of that second, still counts: the planted 'window closed early'
  fails here); late rows are dropped and counted, or update their bar.
* Property: the reactive state after any split equals the same expressions over the stored
  rows (cumulative sum, EMA, rolling z-score).
"""

from __future__ import annotations

import datetime as dt

import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import hfq
from hfq.analytics.bars import bar_seconds, bars_of
from hfq.live import ReactiveStateEngine, TimeSeriesEngine, cumsum, ema, zscore

SCHEME = hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 2))
KEYS = ["symbol", "date"]


PRICES = st.one_of(st.none(), st.just(float("nan")),
                   st.floats(0.01, 500, allow_nan=False, allow_infinity=False))


@st.composite
def tick_streams(draw):
    """Quotes in event-time order (date, time), with the nasty values a feed has, and a split
    of them into batches."""
    n = draw(st.integers(1, 120))
    rows = []
    for _ in range(n):
        rows.append((draw(st.sampled_from(["IBM", "MSFT", "A", "ZZ"])),
                     draw(st.sampled_from([dt.date(2024, 1, 2), dt.date(2024, 1, 3)])),
                     draw(st.sampled_from([0, 59, 60, 61, 119, 600, 34_200, 34_259,
                                           86_399])), draw(PRICES), draw(PRICES)))
    rows.sort(key=lambda r: (r[1], r[2]))   # stable: equal times keep their draw order
    frame = hfq.schemas.TAQ.conform(pa.table({
        "symbol": [r[0] for r in rows], "date": [r[1] for r in rows],
        "time": pa.array([r[2] for r in rows], pa.int32()).cast(pa.time32("s")),
        "bid": pa.array([r[3] for r in rows], pa.float64()),
        "ofr": pa.array([r[4] for r in rows], pa.float64()),
        "bidsiz": pa.array([1] * n, pa.int32()), "ofrsiz": pa.array([2] * n, pa.int32()),
        "mode": pa.array([0] * n, pa.int32()), "ex": ["N"] * n, "mmid": [""] * n}))
    return frame, split(draw, n)


def split(draw, n: int) -> list[int]:
    """Where a stream of ``n`` rows is cut into batches: ``[0, cut, ..., n]``."""
    return [0, *sorted(set(draw(st.lists(st.integers(0, n), max_size=8)))), n]


def stream_bars(frame: pa.Table, cuts: list[int], window: str, kind: str) -> pl.DataFrame:
    engine = TimeSeriesEngine(window=window, kind=kind)
    out = [engine.feed(frame.slice(a, b - a)) for a, b in zip(cuts, cuts[1:]) if b > a]
    out.append(engine.flush())
    assert engine.late_rows == 0
    return pl.concat([o for o in out if o.width], how="vertical_relaxed")


def stored_bars(tmp_path, frame: pa.Table, window: str, kind: str, schema) -> pl.DataFrame:
    """What minute_bars computes for each partition of the stored ticks."""
    db = hfq.connect(str(tmp_path))
    t = db.create_table("q", schema, partition_by=SCHEME, sort_by=("symbol", "time"))
    t.append(frame)
    parts = [bars_of(pl.from_arrow(t.scan(dates=str(d), symbols=None).to_arrow()),
                     kind, KEYS, "time", bar_seconds(window) * 10**9, symbol="symbol")
             for d in sorted(set(frame.column("date").to_pylist()))]
    return pl.concat(parts)


def same_bars(got: pl.DataFrame, want: pl.DataFrame) -> None:
    order = ["symbol", "date", "time"]
    got = got.with_columns(pl.col("symbol").cast(pl.String)).sort(order)
    want = want.with_columns(pl.col("symbol").cast(pl.String)).sort(order)
    assert_frame_equal(got, want.select(got.columns), check_dtypes=False, rel_tol=1e-12,
                       abs_tol=1e-12)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(stream=tick_streams(), window=st.sampled_from(["1m", "5m", "30s"]))
def test_streamed_bars_equal_minute_bars_for_any_split(tmp_path_factory, stream, window):
    frame, cuts = stream
    same_bars(stream_bars(frame, cuts, window, "quotes"),
              stored_bars(tmp_path_factory.mktemp("b"), frame, window, "quotes",
                          hfq.schemas.TAQ))


@st.composite
def trade_streams(draw):
    """Trades in event-time order with NULL and NaN prices, zero and NULL sizes (a VWAP's
    nasty rows), millisecond times on window edges, and a split into batches."""
    n = draw(st.integers(1, 100))
    size = st.one_of(st.none(), st.just(0), st.integers(1, 10**6))
    rows = [(draw(st.sampled_from(["IBM", "MSFT", "A"])),
             draw(st.sampled_from([0, 59_999, 60_000, 60_001, 299_999, 34_200_000,
                                   86_399_999])), draw(PRICES), draw(size))
            for _ in range(n)]
    rows.sort(key=lambda r: r[1])
    frame = hfq.schemas.TRADES.conform(pa.table({
        "symbol": [r[0] for r in rows], "date": [dt.date(2024, 1, 2)] * n,
        "time": pa.array([r[1] for r in rows], pa.int32()).cast(pa.time32("ms")),
        "price": pa.array([r[2] for r in rows], pa.float64()),
        "size": pa.array([r[3] for r in rows], pa.int32()),
        "ex": ["N"] * n, "cond": ["@"] * n}))
    return frame, split(draw, n)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(stream=trade_streams(), window=st.sampled_from(["1m", "5m"]))
def test_streamed_trade_bars_equal_minute_bars_for_any_split(tmp_path_factory, stream, window):
    """OHLCV and VWAP, as the quotes' property above."""
    frame, cuts = stream
    same_bars(stream_bars(frame, cuts, window, "trades"),
              stored_bars(tmp_path_factory.mktemp("t"), frame, window, "trades",
                          hfq.schemas.TRADES))


@pytest.mark.slow
def test_trade_bars_equal_minute_bars_end_to_end(tmp_path):
    """Trades through the real ``minute_bars`` (the embedded runtime): OHLCV and VWAP."""
    trades = hfq.synth.trades_table(dates=("2024-01-02",), rows_per_day=3000, symbols=6,
                                    seed=3).sort_by("time")
    db = hfq.connect(str(tmp_path))
    t = db.create_table("tr", hfq.schemas.TRADES, partition_by=SCHEME,
                        sort_by=("symbol", "time"))
    t.append(trades)
    try:
        hfq.analytics.minute_bars(t, "tr_1m", bar="1m")
        want = db["tr_1m"].to_polars()
    finally:
        db.close()
    engine = TimeSeriesEngine(window="1m", kind="trades")
    got = pl.concat([engine.feed(b) for b in trades.to_batches(max_chunksize=137)]
                    + [engine.flush()])
    assert got.height == want.height and got["volume"].sum() == want["volume"].sum()
    same_bars(got, want)


def quotes(rows: list[tuple[str, str, float]]) -> pa.Table:
    n = len(rows)
    return hfq.schemas.TAQ.conform(pa.table({
        "symbol": [r[0] for r in rows], "date": [dt.date(2024, 1, 2)] * n,
        "time": [dt.time.fromisoformat(r[1]) for r in rows],
        "bid": [r[2] for r in rows], "ofr": [r[2] + 0.02 for r in rows],
        "bidsiz": pa.array([1] * n, pa.int32()), "ofrsiz": pa.array([1] * n, pa.int32()),
        "mode": pa.array([0] * n, pa.int32()), "ex": ["N"] * n, "mmid": [""] * n}))


def test_a_window_closes_when_the_clock_reaches_its_end_not_before():
    engine = TimeSeriesEngine(window="1m", kind="quotes")
    first = engine.feed(quotes([("A", "09:30:00", 10.0), ("A", "09:30:59", 11.0)]))
    assert first.height == 0                      # 09:30:59 is inside [09:30, 09:31)
    second = engine.feed(quotes([("B", "09:30:59", 12.0)]))   # the same second, later
    assert second.height == 0 and engine.late_rows == 0
    closed = engine.feed(quotes([("A", "09:31:00", 13.0)]))   # the end: 09:30 closes
    assert sorted(zip(closed["symbol"].cast(pl.String), closed["count"])) == \
        [("A", 2), ("B", 1)]
    assert engine.flush()["count"].to_list() == [1]


@pytest.mark.parametrize("late", ["drop", "update"])
def test_late_rows_are_dropped_and_counted_or_update_their_bar(late):
    engine = TimeSeriesEngine(window="1m", kind="quotes", late=late)
    engine.feed(quotes([("A", "09:30:10", 10.0), ("A", "09:31:05", 11.0)]))  # 09:30 closed
    again = engine.feed(quotes([("A", "09:30:50", 9.0)]))                    # late for it
    if late == "drop":
        assert again.height == 0 and engine.late_rows == 1
    else:
        assert engine.late_rows == 0
        assert again.select("count", "low", "close").rows() == [(2, 9.01, 9.01)]
    lateness = TimeSeriesEngine(window="1m", kind="quotes", lateness="30s")
    lateness.feed(quotes([("A", "09:30:10", 10.0), ("A", "09:31:05", 11.0)]))
    lateness.feed(quotes([("A", "09:30:50", 9.0)]))      # within 30 s: not late
    assert lateness.late_rows == 0
    assert lateness.flush().filter(pl.col("time") == dt.time(9, 30))["count"].to_list() == [2]


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.tuples(st.sampled_from(["A", "B", "C"]),
                                 st.none() | st.floats(-1e3, 1e3, allow_nan=False),
                                 st.none() | st.integers(-5, 10**6)), min_size=1, max_size=80),
       cuts=st.lists(st.integers(0, 80), max_size=6))
def test_reactive_state_equals_the_expressions_over_the_stored_rows(values, cuts):
    """Any split of the rows, nulls among them (a quote with no bid has no mid): the states
    equal polars' expressions over all the rows, written here as a user would (the oracle is
    not the engine's ``batch_exprs``).  A null between batches is the case an EMA's carry must
    keep: polars decays the last value over the gap."""
    frame = pl.DataFrame({"symbol": [v[0] for v in values], "mid": [v[1] for v in values],
                          "size": [v[2] for v in values]},
                         schema={"symbol": pl.String, "mid": pl.Float64, "size": pl.Int64})
    engine = ReactiveStateEngine(state={"vol": cumsum(pl.col("size")),
                                        "ema": ema(pl.col("mid"), alpha=0.3),
                                        "z": zscore(pl.col("mid"), 4)}, keep=["symbol"])
    bounds = [0, *sorted(c for c in set(cuts) if c < len(values)), len(values)]
    got = pl.concat([engine.feed(frame[a:b]) for a, b in zip(bounds, bounds[1:]) if b > a])
    mid = pl.col("mid")
    want = frame.select(
        "symbol", pl.col("size").cum_sum().over("symbol").alias("vol"),
        mid.ewm_mean(alpha=0.3, adjust=False).over("symbol").alias("ema"),
        ((mid - mid.rolling_mean(4)) / mid.rolling_std(4)).over("symbol").alias("z"))
    assert got["vol"].to_list() == want["vol"].to_list()            # exact: integer sums
    assert_frame_equal(got, want, rel_tol=1e-9, abs_tol=1e-9)
    computed, states = engine.batch_exprs()     # what the engine documents as its batch form
    assert_frame_equal(frame.with_columns(computed).with_columns(states).select(got.columns),
                       want)


def test_an_ema_decays_over_nulls_that_straddle_a_batch():
    """Found by review: the carry kept only the last output, so a null at the end of a batch
    was forgotten and the next value weighed as if it came right after."""
    frame = pl.DataFrame({"symbol": ["A"] * 5, "mid": [1.0, 2.0, None, 4.0, 8.0]})
    handed: list[pl.DataFrame] = []
    engine = ReactiveStateEngine(state={"ema": ema(pl.col("mid"), alpha=0.5)}, keep=["symbol"],
                                 out=handed.append)
    fed = [engine.feed(frame[:3]), engine.feed(frame[3:])]
    got = pl.concat(fed)["ema"].to_list()
    # y = ((1 - a)^gap y_prev + a x) / ((1 - a)^gap + a) after a gap: (0.25 * 1.5 + 2) / 0.75
    assert got == [1.0, 1.5, None, pytest.approx(19 / 6), pytest.approx(67 / 12)]
    assert len(handed) == 2 and all(a.equals(b) for a, b in zip(handed, fed))   # out=


@pytest.mark.parametrize("dtype, state, want", [
    (pl.Int64, lambda: ema(pl.col("x"), alpha=0.5), lambda x: x.ewm_mean(alpha=0.5,
                                                                          adjust=False)),
    (pl.Int8, lambda: cumsum(pl.col("x")), lambda x: x.cum_sum()),
    (pl.Int8, lambda: cumsum(pl.col("x") > 50), lambda x: (x > 50).cum_sum()),
])
def test_a_carried_output_keeps_its_type_not_the_inputs(dtype, state, want):
    """Found by review: the carry was cast to the input's type -- an EMA of integers carried
    1.5 as 1, a cumulative sum of Int8 carried 200 as NULL and started again."""
    frame = pl.DataFrame({"symbol": ["A"] * 4, "x": [100, 100, 100, 1]},
                         schema={"symbol": pl.String, "x": dtype})
    for cut in range(1, 4):
        engine = ReactiveStateEngine(state={"s": state()}, keep=["symbol"])
        got = pl.concat([engine.feed(frame[:cut]), engine.feed(frame[cut:])],
                        how="vertical_relaxed")["s"]
        assert got.to_list() == frame.select(want(pl.col("x")))["x"].to_list(), cut


def test_a_long_run_of_nulls_keeps_the_carry_bounded():
    """Found by review: every null after a symbol's last output was carried, so a symbol with
    no mid for a day made each batch slower.  A cumulative sum carries its last output only;
    an EMA the nulls while they can still move a result (alpha=0.5: 61), and its answers after
    the run agree with polars over all the rows."""
    engine = ReactiveStateEngine(state={"v": cumsum(pl.col("x")),
                                        "e": ema(pl.col("x"), alpha=0.5)}, keep=["symbol"])
    batches = [pl.DataFrame({"symbol": ["A"], "x": [3.0]})] + \
        [pl.DataFrame({"symbol": ["A"] * 50, "x": [None] * 50},
                      schema={"symbol": pl.String, "x": pl.Float64})] * 6 + \
        [pl.DataFrame({"symbol": ["A", "A"], "x": [5.0, 7.0]})]
    got = pl.concat([engine.feed(b) for b in batches])
    assert engine.carry["v"].height == 1 and engine.carry["e"].height == 1
    whole = pl.concat(batches)
    want = whole.select(pl.col("x").cum_sum().alias("v"),
                        pl.col("x").ewm_mean(alpha=0.5, adjust=False).alias("e"))
    assert got["v"].to_list() == want["v"].to_list()
    assert got["e"].tail(2).to_list() == pytest.approx(want["e"].tail(2).to_list(),
                                                        rel=1e-15)
    engine.feed(batches[1])
    assert engine.carry["v"].height == 1 and engine.carry["e"].height == 1 + 50
    engine.feed(batches[1])
    assert engine.carry["e"].height == 1 + 61


def test_first_of_a_filtered_input_skips_partitions_that_kept_no_row(tmp_path):
    """Found by the bars property: the query engine merged ``x.drop_nulls().first()`` over
    partitions as the first partition's value even when that partition kept no row (a null
    that was not in the data).  Oracle: polars over all rows."""
    db = hfq.connect(str(tmp_path))
    schema = hfq.schema.Schema({"k": hfq.schema.LONG, "g": hfq.schema.LONG,
                                "x": hfq.schema.DOUBLE})
    t = db.create_table("t", schema, partition_by=hfq.Hash("k", 2))
    rows = pa.table({"k": [1, 1, 2, 2, 3, 3], "g": [0] * 6,
                     "x": [None, None, 5.0, 6.0, None, None]})
    t.append(rows)
    aggs = [pl.col("x").drop_nulls().first().alias("f"),
            pl.col("x").filter(pl.col("x") > 5.5).first().alias("big"),
            pl.col("x").first().alias("plain")]
    got = t.query().group_by("g").agg(aggs).collect()
    ordered = pl.from_arrow(t.to_arrow())   # partition order, as the engine reads
    assert got.rows() == ordered.group_by("g").agg(aggs).rows() == [(0, 5.0, 6.0, None)]
