"""The numba kernels of hfq.analytics against numpy / polars oracles."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from hfq.analytics import kernels
from hfq.reduce import OLSMoments

NS = 1_000_000_000


def quotes(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    g = np.random.default_rng(seed)
    time = g.integers(0, 86400, n) * NS
    bid = np.round(g.uniform(0.5, 100, n), 2)
    ofr = bid * g.choice([0.99, 1.0, 1.0005, 1.01, 1.19, 1.2, 1.3], n)
    bid[g.random(n) < 0.01] = np.nan
    ofr[g.random(n) < 0.01] = np.nan
    bid[g.random(n) < 0.01] = 0.0
    # the window's own bounds, exactly
    time[:3] = [9 * 3600 * NS + 30 * 60 * NS, (15 * 3600 + 59 * 60 + 59) * NS, 16 * 3600 * NS]
    return time, bid, ofr


def test_spread_minutes_matches_polars():
    time, bid, ofr = quotes(200_000)
    lo, hi = (9 * 3600 + 30 * 60) * NS, (15 * 3600 + 59 * 60 + 59) * NS
    sums, counts = np.zeros(kernels.MINUTES), np.zeros(kernels.MINUTES, dtype=np.int64)
    kernels.spread_minutes(time, bid, ofr, lo, hi, 1.2, sums, counts)
    df = pl.DataFrame({"t": time, "bid": bid, "ofr": ofr}, nan_to_null=False)
    b, o, t = pl.col("bid"), pl.col("ofr"), pl.col("t")
    want = (df.filter(t.is_between(lo, hi) & (o > b) & (b > 0) & (o / b < 1.2))
            .group_by(minute=t // (60 * NS)).agg(s=((o - b) / (o + b) * 2).sum(), n=pl.len())
            .sort("minute"))
    got = np.flatnonzero(counts)
    assert got.tolist() == want["minute"].to_list()
    assert counts[got].tolist() == want["n"].to_list()
    assert sums[got] == pytest.approx(want["s"].to_numpy(), rel=1e-12)
    assert counts[9 * 60 + 30] > 0 and counts[16 * 60] == 0


def test_time_ns_and_floats_from_polars_columns():
    import datetime as dt
    s = pl.Series("t", [dt.time(9, 30), None, dt.time(15, 59, 59)])
    assert kernels.time_ns(s).tolist() == [(9 * 3600 + 1800) * NS, -1, 57599 * NS]
    f = kernels.floats(pl.Series("x", [1, None, 3], dtype=pl.Int32))
    assert f.dtype == np.float64 and np.isnan(f[1]) and f[2] == 3.0


def cols_of(z: np.ndarray, mask=None):
    """The kernels' inputs for a matrix: read-only columns and a row mask."""
    cols = tuple(np.ascontiguousarray(z[:, j]) for j in range(z.shape[1]))
    for c in cols:
        c.flags.writeable = False
    return cols, np.ones(len(z), dtype=np.bool_) if mask is None else mask


def design(n: int, seed: int = 1) -> np.ndarray:
    g = np.random.default_rng(seed)
    z = np.column_stack([1e6 + g.normal(0, 1e-3, n), g.normal(0, 1, n), np.zeros(n)])
    z[:, 2] = 3 + 2 * z[:, 1] + 0.5 * (z[:, 0] - 1e6) * 1e3 + g.normal(0, 0.1, n)
    z[g.random(n) < 0.05, g.integers(0, 3)] = np.nan
    return np.asfortranarray(z)


def test_ols_moments_match_numpy_and_the_reducer():
    z = design(50_000)
    mask = np.random.default_rng(3).random(len(z)) < 0.9
    n, hi, lo, c = kernels.ols_moments(*cols_of(z, mask))
    z = z[mask]
    ok = z[~np.isnan(z).any(axis=1)]
    assert n == len(ok)
    # the exact mean (numpy's pairwise mean is off by ~1e-14 relative for x near 1e6 here,
    # the double-double mean by at most the last rounding)
    mean = np.array([math.fsum(col) for col in ok.T]) / len(ok)
    assert hi + lo == pytest.approx(mean, rel=2e-16)
    centred = ok - mean
    assert c == pytest.approx(centred.T @ centred, rel=1e-9)
    rn, rhi, rlo, rc = OLSMoments().of(z[:, :2], z[:, 2])
    assert rn == n and np.allclose(rhi + rlo, hi + lo, rtol=1e-15, atol=0)
    assert np.allclose(rc, c, rtol=1e-10, atol=0)
    # no complete row: the empty state
    assert kernels.ols_moments(*cols_of(np.full((4, 3), np.nan)))[0] == 0


def test_ols_residuals_match_numpy():
    z = design(20_000, seed=2)
    ok = z[~np.isnan(z).any(axis=1)]
    beta = np.array([0.7, -1.5])
    mean = ok.mean(axis=0)
    hi, lo = mean, np.zeros(3)
    ssr, meat = kernels.ols_residuals(*cols_of(z), hi, lo, beta, True)
    x = ok[:, :2] - mean[:2]
    e = (ok[:, 2] - mean[2]) - x @ beta
    w = np.column_stack([np.ones(len(ok)), x])
    assert ssr == pytest.approx((e ** 2).sum(), rel=1e-12)
    assert meat == pytest.approx((w * (e ** 2)[:, None]).T @ w, rel=1e-10)
    # through the origin: no shift, no constant
    ssr0, meat0 = kernels.ols_residuals(*cols_of(z), np.zeros(3), np.zeros(3), beta, False)
    e0 = ok[:, 2] - ok[:, :2] @ beta
    assert ssr0 == pytest.approx((e0 ** 2).sum(), rel=1e-12)
    assert meat0.shape == (2, 2)
    assert meat0 == pytest.approx((ok[:, :2] * (e0 ** 2)[:, None]).T @ ok[:, :2], rel=1e-10)


def test_columns_from_polars_expressions():
    df = pl.DataFrame({"a": [1.0, 2.0, None, 4.0], "b": [1, 2, 3, None]})
    cols, mask = kernels.columns(df, [pl.col("a") * 2, pl.col("b").cast(pl.Float64)],
                                 pl.col("b") > 1)
    assert np.array_equal(cols[0], [2.0, 4.0, np.nan, 8.0], equal_nan=True)
    assert np.isnan(cols[1][3]) and mask.tolist() == [False, True, True, False]
    assert all(not c.flags.writeable for c in cols)
    with pytest.raises(ValueError, match="one value per row"):
        kernels.columns(df, [pl.col("a").sum()])
    # a partition left empty by the date/symbol filters: no rows, no error
    cols, mask = kernels.columns(df.clear(), [pl.col("a"), pl.lit(1.0)], pl.col("b") > 1)
    assert [len(c) for c in cols] == [0, 0] and len(mask) == 0
    assert kernels.ols_moments(cols, mask)[0] == 0


@pytest.mark.parametrize("kind", ["quotes", "trades"])
def test_bar_kernels_match_the_polars_group_by(kind):
    """The run-based numba bars equal polars' group-by on a partition sorted by symbol, time
    (one date), NaN and null prices included."""
    import datetime as dt

    from hfq.analytics.bars import bars_of
    g = np.random.default_rng(4)
    n = 50_000
    price = np.round(g.uniform(10, 20, n), 2)
    price[g.random(n) < 0.02] = np.nan
    frame = pl.DataFrame({
        "symbol": pl.Series(np.array(["B", "A", "C"])[g.integers(0, 3, n)]).cast(pl.Categorical),
        "date": [dt.date(2024, 1, 2)] * n,
        "time": pl.Series(g.integers(0, 86_400, n) * NS).cast(pl.Time),
        "bid": price, "ofr": price + g.choice([0.01, 0.02, np.nan], n),
        "price": price, "size": pl.Series(g.integers(1, 100, n), dtype=pl.Int32),
    }, nan_to_null=False).with_columns(
        bid=pl.when(pl.int_range(pl.len()) % 101 == 0).then(None).otherwise(pl.col("bid")))
    frame = frame.sort(pl.col("symbol").cast(pl.String), "time", maintain_order=True)
    for bar in (60, 300, 3600):
        fast = bars_of(frame, kind, ["symbol", "date"], "time", bar * NS, symbol="symbol")
        slow = bars_of(frame, kind, ["symbol", "date"], "time", bar * NS)
        assert fast.columns == slow.columns and fast.height == slow.height
        key = [pl.col("symbol").cast(pl.String), "time"]
        fast, slow = fast.sort(key), slow.sort(key)
        for name in fast.columns:
            a, b = fast[name], slow[name]
            if a.dtype.is_float():
                assert a.is_null().to_list() == b.is_null().to_list(), name
                np.testing.assert_allclose(a.fill_null(0).to_numpy(), b.fill_null(0).to_numpy(),
                                           rtol=1e-12, err_msg=name)
            else:
                assert a.cast(pl.String).to_list() == b.cast(pl.String).to_list(), name
