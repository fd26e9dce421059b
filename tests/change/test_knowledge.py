"""Knowledge time (issue 27, What to build 5): the lookahead test -- a quote published 1 s
after a trade is not joined to it with known_at=True, and is without -- then the asof and
window joins with known_at (and a latency) against a plain-Python reading of the rule on
random rows (NULL knowledge times, equal times, corrections of one quote), and
scan(known_at=...) as the rows known then."""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hfq
from hfq import schema as s
from hfq.errors import QueryError

T0 = dt.datetime(2024, 1, 2, 9, 30)
SEC = dt.timedelta(seconds=1)
QUOTES = s.Schema({"symbol": s.SYMBOL, "date": s.DATE, "time": s.TIMESTAMP, "bid": s.DOUBLE,
                   "known": s.TIMESTAMP})
TRADES = s.Schema({"symbol": s.SYMBOL, "date": s.DATE, "time": s.TIMESTAMP, "px": s.DOUBLE})
SCHEME = hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 2))


def tables(tmp_path, quotes: pl.DataFrame, trades: pl.DataFrame):
    db = hfq.connect(str(tmp_path / "db"))
    q = db.create_table("quotes", QUOTES, partition_by=SCHEME, sort_by=("symbol", "time"),
                        known_at="known")
    t = db.create_table("trades", TRADES, partition_by=SCHEME, sort_by=("symbol", "time"))
    q.append(quotes)
    t.append(trades)
    return q, t


def test_a_quote_known_after_the_trade_is_not_joined_with_known_at(tmp_path):
    d = T0.date()
    quotes = pl.DataFrame({"symbol": ["IBM", "IBM"], "date": [d, d],
                           "time": [T0 - 10 * SEC, T0 - SEC],      # both before the trade
                           "bid": [100.0, 101.0],
                           "known": [T0 - 10 * SEC, T0 + SEC]})    # the second published later
    trades = pl.DataFrame({"symbol": ["IBM"], "date": [d], "time": [T0], "px": [100.5]})
    q, t = tables(tmp_path, quotes, trades)
    naive = t.query().join_asof(q.query(), on="time", by="symbol").collect()
    safe = t.query().join_asof(q.query(), on="time", by="symbol", known_at=True).collect()
    assert naive["bid"].to_list() == [101.0]          # lookahead: the later-published quote
    assert safe["bid"].to_list() == [100.0]           # only what was known at the trade
    assert reference_asof(trades, quotes, 0) == [100.0]
    late = t.query().join_asof(q.query(), on="time", by="symbol", known_at=True,
                               latency=dt.timedelta(seconds=20)).collect()
    assert late["bid"].to_list() == [None]            # with 20 s of latency nothing was seen
    with pytest.raises(QueryError, match="backward"):
        t.query().join_asof(q.query(), on="time", by="symbol", known_at=True,
                            strategy="nearest")


# -- the rule, read plainly ------------------------------------------------------------------------
def reference_asof(trades: pl.DataFrame, quotes: pl.DataFrame, lag_s: float) -> list:
    """For each trade: of the quotes of its symbol with time <= t and known + lag <= t, the
    bid of the one with the greatest time, ties to the one known last (then stored last)."""
    out = []
    lag = dt.timedelta(seconds=lag_s)
    qs = quotes.to_dicts()
    for trade in trades.sort("symbol", "time", maintain_order=True).to_dicts():
        seen = [(q["time"], q["known"], i, q["bid"]) for i, q in enumerate(qs)
                if q["symbol"] == trade["symbol"] and q["time"] <= trade["time"] and
                q["known"] is not None and q["known"] + lag <= trade["time"]]
        out.append(max(seen)[3] if seen else None)
    return out


def reference_window(trades, quotes, lo_s, hi_s, lag_s, prevailing) -> list[tuple]:
    """(count, sum) of the bids of the quotes known by t with time in [t + lo, t + hi] (and,
    for wj, the last known quote before t + lo unless one known sits exactly at it)."""
    out = []
    lag = dt.timedelta(seconds=lag_s)
    qs = quotes.sort("symbol", "time", maintain_order=True).to_dicts()
    for trade in trades.to_dicts():
        t = trade["time"]
        lo, hi = t + dt.timedelta(seconds=lo_s), t + dt.timedelta(seconds=hi_s)

        def known(q, t=t):
            return q["known"] is not None and max(q["time"], q["known"] + lag) <= t
        mine = [q for q in qs if q["symbol"] == trade["symbol"] and known(q)]
        inside = [q for q in mine if lo <= q["time"] <= hi]
        if prevailing and not any(q["time"] == lo for q in inside):
            before = [q for q in mine if q["time"] < lo]
            inside = before[-1:] + inside
        bids = [q["bid"] for q in inside]
        out.append((len(bids), sum(bids) if bids else None))
    return out


def random_rows(draw_seed: int, n_quotes: int, n_trades: int):
    rng = np.random.default_rng(draw_seed)
    d = T0.date()
    sym = ["A", "B"]
    qt = rng.integers(0, 20, n_quotes)
    delay = rng.integers(0, 6, n_quotes)
    known = [T0 + int(a + b) * SEC if rng.random() > 0.15 else None
             for a, b in zip(qt, delay)]
    quotes = pl.DataFrame({"symbol": [sym[i] for i in rng.integers(0, 2, n_quotes)],
                           "date": [d] * n_quotes, "time": [T0 + int(x) * SEC for x in qt],
                           "bid": rng.integers(1, 1000, n_quotes).astype(float).tolist(),
                           "known": known},
                          schema={"symbol": pl.String, "date": pl.Date,
                                  "time": pl.Datetime("us"), "bid": pl.Float64,
                                  "known": pl.Datetime("us")})
    tt = rng.integers(0, 25, n_trades)
    trades = pl.DataFrame({"symbol": [sym[i] for i in rng.integers(0, 2, n_trades)],
                           "date": [d] * n_trades, "time": [T0 + int(x) * SEC for x in tt],
                           "px": [1.0] * n_trades},
                          schema_overrides={"time": pl.Datetime("us")})
    return quotes, trades


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n_quotes=st.integers(0, 30), n_trades=st.integers(1, 12),
       lag=st.sampled_from([0, 1, 3]))
def test_known_at_asof_join_equals_the_rule_read_plainly(seed, n_quotes, n_trades, lag):
    quotes, trades = random_rows(seed, n_quotes, n_trades)
    got = pl.from_arrow(trades.to_arrow()).sort("symbol", "time", maintain_order=True)
    from hfq.engine.joins import AsofJoin
    op = AsofJoin(quotes.sort("symbol", "time"), "time", "time", ("symbol",), ("symbol",),
                  known="known", latency=lag * 1_000_000)
    out = op.apply(got.lazy()).collect().sort("symbol", "time", maintain_order=True)
    assert out["bid"].to_list() == reference_asof(got, quotes.sort("symbol", "time"), lag)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n_quotes=st.integers(0, 30), n_trades=st.integers(1, 12),
       lag=st.sampled_from([0, 2]), lo=st.sampled_from([-5, -2, 0]),
       hi=st.sampled_from([0, 3]), prevailing=st.booleans())
def test_known_at_window_join_equals_the_rule_read_plainly(seed, n_quotes, n_trades, lag, lo,
                                                           hi, prevailing):
    quotes, trades = random_rows(seed, n_quotes, n_trades)
    from hfq.engine.joins import WindowJoin, window_join_frames
    op = WindowJoin(quotes, "time", "time", ("symbol",), ("symbol",), lo * 1_000_000,
                    hi * 1_000_000, (("n", "count", "bid"), ("s", "sum", "bid")), prevailing,
                    known="known", latency=lag * 1_000_000)
    out = window_join_frames(trades, op)
    assert list(zip(out["n"].to_list(), out["s"].to_list())) == \
        reference_window(trades, quotes, lo, hi, lag, prevailing)


def test_the_window_join_of_a_table_sees_only_known_quotes(tmp_path):
    d = T0.date()
    quotes = pl.DataFrame({"symbol": ["A"] * 3, "date": [d] * 3,
                           "time": [T0 - 3 * SEC, T0 - 2 * SEC, T0 - SEC],
                           "bid": [1.0, 2.0, 4.0],
                           "known": [T0 - 3 * SEC, T0 + SEC, T0 - SEC]})
    trades = pl.DataFrame({"symbol": ["A"], "date": [d], "time": [T0], "px": [1.0]})
    q, t = tables(tmp_path, quotes, trades)
    w = (-dt.timedelta(seconds=5), dt.timedelta(0))
    plain = t.query().window_join(q.query(), on="time", by="symbol", window=w,
                                  aggs={"s": ("sum", "bid")}, kind="wj1").collect()
    safe = t.query().window_join(q.query(), on="time", by="symbol", window=w,
                                 aggs={"s": ("sum", "bid")}, kind="wj1",
                                 known_at=True).collect()
    assert plain["s"].to_list() == [7.0] and safe["s"].to_list() == [5.0]


def test_scan_known_at_gives_the_rows_as_known_then(tmp_path):
    db = hfq.connect(str(tmp_path / "db"))
    q = db.create_table("quotes", QUOTES, partition_by=SCHEME, sort_by=("symbol", "time"),
                        unique=("symbol", "date", "time"), known_at="known")
    d = T0.date()
    first = pl.DataFrame({"symbol": ["A", "B"], "date": [d, d], "time": [T0, T0],
                          "bid": [10.0, 20.0], "known": [T0, T0]})
    fix = pl.DataFrame({"symbol": ["A"], "date": [d], "time": [T0], "bid": [11.0],
                        "known": [T0 + 60 * SEC]})
    q.append(first)
    q.upsert(fix)                                      # a correction: a new row, not an overwrite
    assert q.to_polars().height == 3
    before = q.scan(known_at=T0 + 30 * SEC).to_polars().sort("symbol")
    after = q.scan(known_at=(T0 + 90 * SEC).isoformat() + "Z").to_polars().sort("symbol")
    assert before["bid"].to_list() == [10.0, 20.0] and after["bid"].to_list() == [11.0, 20.0]
    assert q.scan(known_at=T0 - SEC).count() == 0
    assert q.scan(known_at=T0 + 90 * SEC, columns=["bid"]).columns == ["bid"]
    with pytest.raises(hfq.errors.ArgumentError):
        q.scan(known_at="yesterday")
