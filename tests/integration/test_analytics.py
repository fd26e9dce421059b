"""Analytics on the embedded one-node cluster, against DuckDB SQL, polars and statsmodels over
the same rows."""

from __future__ import annotations

import datetime as dt
import os
from fractions import Fraction

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pytest
import statsmodels.api as sm

import hfq
from hfq import analytics as ha
from hfq.errors import HfqError, SchemaMismatchError
from hfq.schema import DATE, DOUBLE, INT, SYMBOL, TIME, Schema

pytestmark = pytest.mark.timeout(300)

DAYS = ("2007-08-01", "2007-08-02")
PARTS = hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 4))


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    db = hfq.connect(str(tmp_path_factory.mktemp("analytics")))
    yield db
    db.close()


@pytest.fixture(scope="module")
def data():
    """Synthetic quotes, with a few rows of missing or NaN prices and sizes."""
    t = hfq.synth.taq_table(dates=DAYS, rows_per_day=40_000, symbols=40, seed=11)
    df = pl.from_arrow(t).with_row_index("i")
    df = df.with_columns(
        bid=pl.when(pl.col("i") % 997 == 0).then(None).otherwise(pl.col("bid")),
        ofr=pl.when(pl.col("i") % 1009 == 0).then(float("nan")).otherwise(pl.col("ofr")),
        bidsiz=pl.when(pl.col("i") % 1013 == 0).then(None).otherwise(pl.col("bidsiz")),
    ).drop("i")
    return df.to_arrow().cast(t.schema)


@pytest.fixture(scope="module")
def quotes(db, data):
    t = db.create_table("quotes", hfq.schemas.TAQ, partition_by=PARTS, sort_by=("symbol", "time"))
    t.append(data)
    return t


# -- spread by minute -------------------------------------------------------------------------
SPREAD_SQL = """
    SELECT make_time(hour(t), minute(t), 0) AS minute,
           avg((ofr - bid) / (ofr + bid) * 2) AS avg_spread, count(*) AS n
    FROM (SELECT CAST(time AS TIME) AS t, bid, ofr FROM rows {where})
    WHERE t BETWEEN TIME '{lo}' AND TIME '{hi}'
      AND ofr > bid AND bid > 0 AND ofr / bid < 1.2 AND NOT isnan(ofr)
    GROUP BY 1 ORDER BY 1"""


@pytest.mark.parametrize("engine", ["numba", "polars"])
def test_spread_by_minute_matches_duckdb_sql(quotes, data, engine):
    got = ha.spread_by_minute(quotes, dates=DAYS, engine=engine)
    rows = data.select(["symbol", "time", "bid", "ofr"])   # noqa: F841 - DuckDB reads it
    want = duckdb.sql(SPREAD_SQL.format(where="", lo="09:30:00", hi="15:59:59")).pl()
    assert got.height == want.height > 300
    assert got["minute"].to_list() == want["minute"].to_list()
    assert got["n"].to_list() == want["n"].to_list()
    assert got["avg_spread"].to_numpy() == pytest.approx(want["avg_spread"].to_numpy(),
                                                         rel=1e-12)
    # a window and a symbol filter
    ibm = ha.spread_by_minute(quotes, symbols="IBM", start="10:00:00", end="10:59:59",
                              engine=engine)
    want = duckdb.sql(SPREAD_SQL.format(where="WHERE symbol = 'IBM'", lo="10:00:00",
                                        hi="10:59:59")).pl()
    assert ibm["minute"].to_list() == want["minute"].to_list()
    assert ibm["n"].to_list() == want["n"].to_list()
    # nothing matching: an empty frame of the same shape
    assert ha.spread_by_minute(quotes, dates="1999-01-01", engine=engine).schema == got.schema


def test_spread_engine_is_checked(quotes):
    with pytest.raises(ValueError, match="engine"):
        ha.spread_by_minute(quotes, engine="pandas")


# -- minute bars --------------------------------------------------------------------------------
def quote_bars_sql(rows: pa.Table, minutes: int) -> pl.DataFrame:
    """The bars in DuckDB SQL over ``rows`` (in time order within each symbol; NaN prices
    as NULL: missing values)."""
    return duckdb.sql(f"""
        SELECT symbol::VARCHAR AS symbol, date,
               time_bucket(INTERVAL {minutes} MINUTE, time::TIME) AS time,
               avg(bid) AS bid, avg(ofr) AS ofr,
               first((bid + ofr) / 2 ORDER BY time, i) FILTER (bid + ofr IS NOT NULL) AS open,
               max((bid + ofr) / 2) AS high, min((bid + ofr) / 2) AS low,
               last((bid + ofr) / 2 ORDER BY time, i) FILTER (bid + ofr IS NOT NULL) AS close,
               count(*) AS count
        FROM rows GROUP BY ALL ORDER BY symbol, date, time""").pl()


def sorted_bars(table) -> pl.DataFrame:
    return (table.to_polars().with_columns(pl.col("symbol").cast(pl.String))
            .sort("symbol", "date", "time"))


def assert_frames_close(got: pl.DataFrame, want: pl.DataFrame) -> None:
    assert got.columns == want.columns and got.height == want.height > 0
    for name in got.columns:
        a, b = got[name], want[name]
        if a.dtype.is_float():
            np.testing.assert_allclose(a.to_numpy(), b.cast(pl.Float64).to_numpy(), rtol=1e-12,
                                       equal_nan=True, err_msg=name)
        else:
            assert a.cast(b.dtype).to_list() == b.to_list(), name


def test_minute_bars_written_back_match_duckdb(db, quotes, data):
    # open and close are the first and last quote by time; quotes of the same second keep
    # their input order (partitions are stably sorted by symbol, time): i numbers them so
    rows = (pl.from_arrow(data).sort("symbol", "time", maintain_order=True).fill_nan(None)
            .with_row_index("i").to_arrow())
    written = ha.minute_bars(quotes, "bars_1m", dates=DAYS, bar="1m")
    bars = db["bars_1m"]
    assert written == len(bars) and bars.version == 1
    assert bars.schema.names == ["symbol", "date", "time", "bid", "ofr", "open", "high", "low",
                                 "close", "count"]
    assert_frames_close(sorted_bars(bars), quote_bars_sql(rows, 1))
    # same partitioning, and each bar partition lives on the nodes of its source partition
    src = quotes.partitions().select("partition", "nodes")
    dst = bars.partitions().select("partition", "nodes")
    assert dst.join(src, on="partition", suffix="_src").filter(
        pl.col("nodes") != pl.col("nodes_src")).height == 0
    assert set(dst["partition"]) == set(src["partition"])

    # five-minute bars into another table
    ha.minute_bars(quotes, "bars_5m", bar="5m")
    assert_frames_close(sorted_bars(db["bars_5m"]), quote_bars_sql(rows, 5))


def test_minute_bars_rerun_replaces_the_recomputed_range(db, quotes, data):
    ha.minute_bars(quotes, "bars_rerun", bar="1h")
    first = sorted_bars(db["bars_rerun"])
    # again over one day and two symbols: one new version, same rows, nothing duplicated
    written = ha.minute_bars(quotes, "bars_rerun", bar="1h", dates="2007-08-02",
                             symbols=["IBM", "AA"])
    bars = db["bars_rerun"]
    assert bars.version == 2
    assert written == first.filter((pl.col("date") == dt.date(2007, 8, 2))
                                   & pl.col("symbol").is_in(["IBM", "AA"])).height > 0
    assert_frames_close(sorted_bars(bars), first)


def test_minute_bars_of_trades_ohlcv_vwap(db):
    g = np.random.default_rng(5)
    n = 30_000
    syms = np.array(["AAPL", "MSFT", "ES 1!", "weird/'sym"])
    trades = pa.table({
        "symbol": pa.array(syms[g.integers(0, 4, n)]).dictionary_encode(),
        "date": pa.array(np.array(["2024-03-01", "2024-03-04"])[g.integers(0, 2, n)]
                         .astype("datetime64[D]")),
        "time": pa.array(np.sort(g.integers(34_200_000, 57_600_000, n)).astype(np.int32),
                         pa.time32("ms")),
        "price": np.round(g.uniform(99, 101, n), 2),
        "size": g.integers(1, 500, n).astype(np.int32),
        "ex": pa.array(["N"] * n).dictionary_encode(),
        "cond": pa.array([""] * n).dictionary_encode(),
    })
    t = db.create_table("trades", hfq.schemas.TRADES, partition_by=PARTS,
                        sort_by=("symbol", "time"))
    t.append(trades)
    ha.minute_bars(t, "trade_bars", bar="5m")
    rows = pl.from_arrow(trades).with_row_index("i").to_arrow()  # noqa: F841
    want = duckdb.sql("""
        SELECT symbol::VARCHAR AS symbol, date, time_bucket(INTERVAL 5 MINUTE, time::TIME) AS time,
               first(price ORDER BY time, i) AS open, max(price) AS high, min(price) AS low,
               last(price ORDER BY time, i) AS close, sum(size)::BIGINT AS volume,
               sum(price * size) / sum(size) AS vwap, count(*) AS count
        FROM rows GROUP BY ALL ORDER BY symbol, date, time""").pl()
    assert_frames_close(sorted_bars(db["trade_bars"]), want)


def test_minute_bars_errors_leave_nothing_behind(db, quotes):
    with pytest.raises(ValueError, match="bar"):
        ha.minute_bars(quotes, "bars_bad", bar="7x")
    with pytest.raises(ValueError, match="whole bars"):
        ha.minute_bars(quotes, "bars_bad", bar="7m")
    db.create_table("bars_other", Schema([("symbol", SYMBOL), ("date", DATE), ("x", INT)]),
                    partition_by=PARTS)
    with pytest.raises(SchemaMismatchError, match="bars_other"):
        ha.minute_bars(quotes, "bars_other")
    assert db["bars_other"].version == 0

    # a destination file lost from disk: a run over a date range fails on that partition, the
    # files it wrote for the other partitions are removed, the destination keeps its version
    ha.minute_bars(quotes, "bars_lost", bar="1h")
    bars = db["bars_lost"]
    before = {f.file for p in bars.snapshot().partitions.values() for f in p.fragments}
    lost = sorted(before)[0]
    os.remove(os.path.join(db.session.store.root, lost))
    with pytest.raises(Exception, match="partition"):   # a rerun of a range reads the old bars
        ha.minute_bars(quotes, "bars_lost", bar="1h", dates=DAYS)
    assert bars.version == 1
    root = db.session.store.root
    on_disk = {os.path.relpath(os.path.join(d, f), root)
               for d, _, fs in os.walk(os.path.join(root, "bars_lost", "data")) for f in fs}
    assert on_disk == before - {lost}
    # a rerun of everything reads none of the old bars: it heals the table
    ha.minute_bars(quotes, "bars_lost", bar="1h")
    assert bars.version == 2 and bars.verify() == len(before)


# -- OLS ------------------------------------------------------------------------------------------
Y = pl.col("ofr") / pl.col("bid") - 1
X = {"quote_size": (pl.col("bidsiz") + pl.col("ofrsiz")) * (pl.col("ofr") + pl.col("bid")) / 2,
     "bid": pl.col("bid")}
WHERE = ((pl.col("ofr") > pl.col("bid")) & (pl.col("bid") > 0)
         & (pl.col("ofr") / pl.col("bid") < 1.2))


def statsmodels_fit(data, y, x, where, intercept=True, cov_type="nonrobust"):
    df = pl.from_arrow(data)
    if where is not None:
        df = df.filter(where)
    df = df.select(y=y.cast(pl.Float64), **{k: e.cast(pl.Float64) for k, e in x.items()})
    df = df.fill_nan(None).drop_nulls()   # the rows a regression can use
    exog = df.select(list(x)).to_numpy()
    if intercept:
        exog = sm.add_constant(exog, has_constant="add")
    return sm.OLS(df["y"].to_numpy(), exog).fit(method="qr", cov_type=cov_type, use_t=True)


def assert_fit_matches(fit, ref, rel=1e-8):
    assert fit.n == ref.nobs and fit.df_resid == ref.df_resid and fit.df_model == ref.df_model
    names = fit.names
    for got, want in ((fit.coef, ref.params), (fit.stderr, ref.bse), (fit.tstat, ref.tvalues)):
        assert [got[k] for k in names] == pytest.approx(list(want), rel=rel)
    assert [fit.pvalue[k] for k in names] == pytest.approx(list(ref.pvalues), rel=1e-6,
                                                           abs=1e-300)
    assert fit.r2 == pytest.approx(ref.rsquared, rel=rel)
    assert fit.adj_r2 == pytest.approx(ref.rsquared_adj, rel=rel)
    assert fit.resid_std == pytest.approx(np.sqrt(ref.scale), rel=rel)
    assert fit.ssr == pytest.approx(ref.ssr, rel=rel)


@pytest.mark.parametrize("robust", [None, "HC1"])
def test_ols_matches_statsmodels(quotes, data, robust):
    fit = ha.ols(quotes, y=Y, x=X, where=WHERE, dates=DAYS, robust=robust)
    ref = statsmodels_fit(data, Y, X, WHERE, cov_type=robust or "nonrobust")
    assert fit.names == ["intercept", "quote_size", "bid"]
    # rows with a null size or a NaN offer were dropped (not zero-filled): ref.nobs counts them
    assert fit.n < pl.from_arrow(data).filter(WHERE).height
    assert_fit_matches(fit, ref)
    assert "quote_size" in fit.summary() and fit.table().height == 3


def test_ols_through_the_origin_and_with_hc0(quotes, data):
    x = {"bid": pl.col("bid"), "size": pl.col("ofrsiz")}
    fit = ha.ols(quotes, y=pl.col("ofr"), x=x, intercept=False, robust="HC0")
    ref = statsmodels_fit(data, pl.col("ofr"), x, None, intercept=False, cov_type="HC0")
    assert fit.names == ["bid", "size"]
    assert_fit_matches(fit, ref)


def regression_table(db, name: str, x: np.ndarray, y: np.ndarray):
    n = len(x)
    t = db.create_table(name, Schema([("symbol", SYMBOL), ("date", DATE), ("time", TIME),
                                      ("x", DOUBLE), ("y", DOUBLE)]),
                        partition_by=PARTS, sort_by=("symbol", "time"))
    g = np.random.default_rng(0)
    t.append(pa.table({
        "symbol": pa.array(np.array(["A", "B", "C", "D", "E"])[g.integers(0, 5, n)]),
        "date": pa.array(np.array(["2024-01-02", "2024-01-03"])[g.integers(0, 2, n)]
                         .astype("datetime64[D]")),
        "time": pa.array(np.arange(n, dtype=np.int32), pa.time32("ms")),
        "x": x, "y": y}))
    return t


def exact_simple_ols(x: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """y = a + b x by exact rational arithmetic on the same doubles: the coefficients, their
    classical standard errors, the slope's HC1 standard error and R^2."""
    fx, fy = [Fraction(v) for v in x], [Fraction(v) for v in y]
    n = len(fx)
    mx, my = sum(fx) / n, sum(fy) / n
    dx = [v - mx for v in fx]
    dy = [v - my for v in fy]
    sxx = sum(d * d for d in dx)
    b = sum(u * v for u, v in zip(dx, dy)) / sxx
    e = [v - b * u for u, v in zip(dx, dy)]
    ssr = sum(r * r for r in e)
    s2 = ssr / (n - 2)
    hc1 = Fraction(n, n - 2) * sum(r * r * u * u for r, u in zip(e, dx)) / (sxx * sxx)
    return {"b": float(b), "a": float(my - b * mx), "se_b": float(s2 / sxx) ** 0.5,
            "se_a": float(s2 * (Fraction(1, n) + mx * mx / sxx)) ** 0.5,
            "hc1_b": float(hc1) ** 0.5, "r2": float(1 - ssr / sum(d * d for d in dy))}


@pytest.mark.parametrize("spread", [1.0, 1e-3])
def test_ols_ill_conditioned_design(db, spread):
    """x near 1e6 with little variance: centred, exactly merged moments keep full accuracy.

    The oracle is exact rational arithmetic on the same rows.  statsmodels (QR) agrees on the
    coefficients to 1e-8 while cond(X) ~ 1e6 (spread 1), but its standard errors come from
    inv(R'R), whose condition is squared: they are off by ~1e-5 there, so they are not the
    oracle here."""
    g = np.random.default_rng(9)
    n = 3000
    x = 1e6 + g.normal(0, spread, n)
    y = 1.0 + 2e-3 / spread * (x - 1e6) + g.normal(0, 1e-2, n)
    t = regression_table(db, f"illcond_{int(spread * 1000)}", x, y)
    exact = exact_simple_ols(x, y)
    fit = ha.ols(t, y="y", x="x")
    assert fit.coef["x"] == pytest.approx(exact["b"], rel=1e-10)
    assert fit.coef["intercept"] == pytest.approx(exact["a"], rel=1e-8)
    assert fit.stderr["x"] == pytest.approx(exact["se_b"], rel=1e-10)
    assert fit.stderr["intercept"] == pytest.approx(exact["se_a"], rel=1e-8)
    assert fit.r2 == pytest.approx(exact["r2"], rel=1e-10)
    robust = ha.ols(t, y="y", x="x", robust="HC1")
    assert robust.stderr["x"] == pytest.approx(exact["hc1_b"], rel=1e-10)
    if spread == 1.0:
        ref = sm.OLS(y, sm.add_constant(x)).fit(method="qr")
        assert list(fit.coef.values()) == pytest.approx(list(ref.params), rel=1e-8)
        assert fit.r2 == pytest.approx(ref.rsquared, rel=1e-8)


def test_ols_errors(db, quotes):
    t = regression_table(db, "collinear", np.arange(100.0), 2 * np.arange(100.0))
    with pytest.raises(HfqError, match="collinear"):
        ha.ols(t, y="y", x={"x": pl.col("x"), "x2": pl.col("x") * 2})
    with pytest.raises(HfqError, match="nothing to explain"):
        ha.ols(t, y="y", x={"one": pl.lit(1.0) + pl.col("x") * 0})
    with pytest.raises(HfqError, match="more rows"):
        ha.ols(quotes, y=Y, x=X, dates="1999-01-01")
    with pytest.raises(ValueError, match="robust"):
        ha.ols(quotes, y=Y, x=X, robust="HC3")
