"""The fused OLS kernels (``kernels.FusedOLS``: polars expressions compiled into one numba
pass) against exact numpy sums and against polars evaluating the same expressions."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from hfq.analytics import kernels

X, Y = pl.col("x"), pl.col("y")


def polars_path(frame: pl.DataFrame, exprs: list[pl.Expr], where: pl.Expr | None):
    """The same moments with polars evaluating the expressions (the unfused path)."""
    return kernels.ols_moments(*kernels.columns(frame, exprs, where))


def ill_conditioned(n: int, seed: int = 0) -> pl.DataFrame:
    g = np.random.default_rng(seed)
    x = 1e6 + g.normal(0, 1e-3, n)
    x[kernels._BLOCK] = 1e6 + 50.0   # an outlier opening the second block
    y = 3 + 2e3 * (x - 1e6) + g.normal(0, 0.1, n)
    y[g.random(n) < 0.05] = np.nan
    return pl.DataFrame({"x": x, "y": y, "k": g.integers(0, 10, n).astype(np.int32)})


def test_fused_moments_are_exact_over_many_blocks():
    df = ill_conditioned(40 * kernels._BLOCK + 17)
    where = pl.col("k") < 8
    fused = kernels.FusedOLS([X, Y], where)
    n, hi, lo, c = fused.moments(df)
    z = df.filter(where).select("x", "y").to_numpy()
    ok = z[~np.isnan(z).any(axis=1)]
    assert n == len(ok)
    mean = np.array([math.fsum(col) for col in ok.T]) / len(ok)
    assert hi + lo == pytest.approx(mean, rel=2e-16)
    centred = ok - mean
    assert np.allclose(c, centred.T @ centred, rtol=1e-12, atol=0)
    pn, phi, plo, pc = polars_path(df, [X, Y], where)
    assert pn == n and np.allclose(pc, c, rtol=1e-12, atol=0)


def test_fused_expressions_follow_polars_semantics():
    """NaN compares as polars does (above every number, equal to itself), integers wrap in
    their polars type, division by zero gives inf/NaN, and NaN values drop the row."""
    a = np.array([2**31 - 1, 5, -3, 7, 2**30, 0, 9, 4], dtype=np.int32)
    u = np.array([1, 0, 3, 9, 2, 1, 5, 6], dtype=np.uint32)
    f = np.array([np.nan, 1.5, 0.0, -2.0, np.inf, 3.0, np.nan, 8.0])
    g = np.array([1.0, 0.0, 0.0, 4.0, 2.0, np.nan, 2.5, -1.0])
    df = pl.DataFrame({"a": a, "b": np.ones(8, np.int32), "u": u, "v": np.full(8, 3, np.uint32),
                       "f": f, "g": g})
    exprs = [(pl.col("a") + pl.col("b")).cast(pl.Float64),          # wraps at 2**31 - 1
             (pl.col("u") - pl.col("v")).cast(pl.Float64),          # UInt32 wraps below 0
             pl.col("a") * 2 / (pl.col("g") + 1),
             pl.col("f") / pl.col("g") - 1]
    exprs = [e.alias(f"e{i}") for i, e in enumerate(exprs)]
    wheres = [None, pl.col("f") > 0, (pl.col("f") >= pl.col("g")) | (pl.col("g") == 2.5),
              (pl.col("f") < 1e300) & (pl.col("a") != 5), pl.col("f") == pl.col("f"),
              pl.col("f") <= 3.0]
    for where in wheres:
        for values in ([exprs[0], exprs[3]], [exprs[1], exprs[2]], exprs):
            got = kernels.FusedOLS(values, where).moments(df)
            assert got is not None, (values, where)
            want = polars_path(df, values, where)
            assert got[0] == want[0], (values, where)
            if want[0]:
                assert np.allclose(got[1] + got[2], want[1] + want[2], rtol=1e-15,
                                   equal_nan=True), (values, where)
                assert np.allclose(got[3], want[3], rtol=1e-12, equal_nan=True)


def test_fused_residuals_match_the_kernel():
    df = ill_conditioned(3 * kernels._BLOCK)
    exprs = [(X - 1e6).alias("x0"), (X * 0 + pl.col("k")).alias("x1"), Y]
    where = pl.col("k") > 0
    fused = kernels.FusedOLS(exprs, where)
    n, hi, lo, _ = fused.moments(df)
    beta = np.array([2e3, 0.01])
    cols = kernels.columns(df, exprs, where)
    for const, (shi, slo) in ((True, (hi, lo)), (False, (np.zeros(3), np.zeros(3)))):
        ssr, meat = fused.residuals(df, shi, slo, beta, const)
        want_ssr, want_meat = kernels.ols_residuals(*cols, shi, slo, beta, const)
        assert ssr == pytest.approx(want_ssr, rel=1e-12)
        assert meat.shape == want_meat.shape == ((3, 3) if const else (2, 2))
        assert np.allclose(meat, want_meat, rtol=1e-10, atol=0)


def test_what_the_fused_kernels_leave_to_polars():
    df = pl.DataFrame({"x": [1.0, 2.0, 3.0], "y": [1.0, None, 2.0],
                       "s": pl.Series([1.0, 2.0, 3.0], dtype=pl.Float32)})
    assert kernels.FusedOLS([X, Y]).moments(df) is None                  # a null
    assert kernels.FusedOLS([X, pl.col("s")]).moments(df) is None         # Float32
    assert kernels.FusedOLS([X.log(), X]).moments(df) is None             # a function
    assert kernels.FusedOLS([X, X * 2], pl.col("x") // 2 > 0).moments(df) is None
    assert kernels.FusedOLS([X, X * 2]).moments(df.clear()) is None       # no rows
    assert kernels.FusedOLS([X, X * 2]).residuals(df.clear(), np.zeros(2), np.zeros(2),
                                                  np.ones(1), True) is None
    # and what they take, they take right
    n, hi, lo, c = kernels.FusedOLS([X, X * 2 + 1], pl.col("x") > 1).moments(df)
    assert (n, (hi + lo).tolist(), c.tolist()) == (2, [2.5, 6.0], [[0.5, 1.0], [1.0, 2.0]])


def test_kernels_that_cannot_be_built_leave_the_rows_to_polars(tmp_path, monkeypatch, caplog):
    df = pl.DataFrame({"x": [1.0, 2.0, 4.0], "y": [1.0, 3.0, 2.0]})
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(blocker / "numba"))   # cannot be made
    assert kernels.FusedOLS([X * 3.25, Y]).moments(df) is None
    # generated code numba rejects: a warning, then polars for every frame of that schema
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))
    source = kernels._fused_source
    monkeypatch.setattr(kernels, "_fused_source", lambda names, values, where: source(
        names, [f"{v} + np.zeros(1)" for v in values], where))
    fused = kernels.FusedOLS([X * 5.5, Y])
    assert fused.moments(df) is None and "did not compile" in caplog.text
    assert fused.residuals(df, np.zeros(2), np.zeros(2), np.ones(1), True) is None


def test_hostile_column_names_never_reach_the_generated_source():
    """Column names are the caller's strings: the generated module refers to columns by
    position only, so a name that would close a docstring or start a statement is just a
    name (a planted bug writing names into the source fails to compile or runs them)."""
    name = 'x"""\nimport os; os.environ["HFQ_PWNED"] = "1"  # \'\'\''
    df = ill_conditioned(2 * kernels._BLOCK + 3).rename({"x": name})
    exprs = [pl.col(name) - 1e6, Y]
    got = kernels.FusedOLS(exprs, pl.col("k") < 8).moments(df)
    assert got is not None
    want = polars_path(df, exprs, pl.col("k") < 8)
    assert got[0] == want[0] and np.allclose(got[3], want[3], rtol=1e-12, atol=0)
    import os
    assert "HFQ_PWNED" not in os.environ
