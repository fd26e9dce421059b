"""What the SQL compiler's native path for window sums of DOUBLEs of one sign relies on
(``hfq/engine/sql/windows.py``, ``_calm``): polars' rolling sums are compensated -- within a
few ulps of the exact sum of each frame, however long the partition and whatever left the
frame before -- its running sum drifts no more than ``k`` ulps, and sums of -0.0 are +0.0 as
DuckDB's.  A polars release that rolls by plain adding and subtracting fails here first
(the data below drift such a sum by ~1e-8 of it); then ``_calm`` must go back to the tree.
And the native path's answers against the segment tree's (``kernels.tree_sums``) on the
same frames: within the bound ``_calm`` claims."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from hfq.engine.execute import BATCH_ROWS
from hfq.engine.kernels import tree_running, tree_sums
from hfq.engine.sql.windows import _CALM_ROWS


def _values(n: int, seed: int) -> np.ndarray:
    """Positive DOUBLEs over 15 orders of magnitude: small values with a spike of 1e15
    every 997 rows (a plain rolling sum keeps ~eps * 1e15 of each spike after it leaves)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 1, n) ** 8 * 1e6 + 1e-3
    x[::997] *= 1e9
    return x


@pytest.mark.parametrize("width", [50, 5000])
def test_polars_rolling_sums_are_compensated(width):
    n = 60_000
    x = _values(n, width)
    df = pl.DataFrame({"k": np.arange(n, dtype=np.int64) * 3, "x": x})
    out = df.select(by=pl.col("x").rolling_sum_by("k", f"{3 * width}i", closed="right"),
                    mean=pl.col("x").rolling_mean_by("k", f"{3 * width}i", closed="right"),
                    rows=pl.col("x").rolling_sum(width, min_samples=1),
                    run=pl.col("x").cum_sum())
    for i in range(0, n, 101):
        lo = max(0, i - width + 1)
        exact = math.fsum(x[lo:i + 1])
        for name in ("by", "rows"):
            assert abs(out[name][i] - exact) <= 8 * 2.0**-52 * exact, (name, i)
        assert abs(out["mean"][i] * (i + 1 - lo) - exact) <= 8 * 2.0**-52 * exact, i
        whole = math.fsum(x[:i + 1])
        assert abs(out["run"][i] - whole) <= (i + 1) * 2.0**-52 * whole, i


def test_polars_sums_of_negative_zero_are_positive_zero():
    df = pl.DataFrame({"k": [1, 2, 3], "x": [-0.0, -0.0, None]})
    out = df.select(pl.col("x").rolling_sum_by("k", "2i", closed="right").alias("a"),
                    pl.col("x").rolling_mean_by("k", "2i", closed="right").alias("b"),
                    pl.col("x").rolling_sum(20, min_samples=1).alias("c"),
                    pl.col("x").fill_null(0.0).cum_sum().alias("d"))
    for name in out.columns:
        assert all(math.copysign(1.0, v) == 1.0 for v in out[name] if v is not None), name


def test_native_frames_agree_with_the_tree():
    """The segment tree (DuckDB's order) and polars' rolling and running sums over the same
    one-sign frames: within ``2 (k - 1) 2^-53`` of the sum, far inside 1e-9."""
    n, width = 20_000, 700
    x = _values(n, 7)
    row = np.arange(n, dtype=np.int64)
    begin = np.clip(row - width + 1, 0, n)
    tree = tree_sums(x, begin, row + 1)
    rolled = pl.Series(x).rolling_sum(width, min_samples=1).to_numpy()
    assert np.all(np.abs(tree - rolled) <= 2 * width * 2.0**-53 * tree)
    running = tree_running(x)
    summed = pl.Series(x).cum_sum().to_numpy()
    assert np.all(np.abs(running - summed) <= 2 * (row + 1) * 2.0**-53 * running)
    assert np.max(np.abs(tree - rolled) / tree) < 1e-12


def test_batches_fit_the_native_path():
    """A batch of partitions (at most ``BATCH_ROWS`` rows, unless one partition holds more)
    must fit ``_CALM_ROWS``, or every window sum over a big table falls back to the tree
    (one Python call per partition) -- and the bound behind ``_CALM_ROWS`` must hold:
    two orders of k one-sign values part by at most 2 (k - 1) 2^-53 of the sum."""
    assert BATCH_ROWS <= _CALM_ROWS
    assert 2 * (_CALM_ROWS - 1) * 2.0**-53 < 1e-9
