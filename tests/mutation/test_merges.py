"""Merging partial results gives the one-pass answer, on fixed data (no random search): the
reducers' merges are what makes ``map_reduce`` independent of how rows fall into partitions.

Each case splits one column into pieces at fixed cuts, accumulates each piece, merges the
states left to right and right to left, and compares with numpy/polars over all the rows.
The property tests (``tests/property/test_reducers.py``) search wider; these always run the
cases that matter (a NaN only in the last piece, a key in two pieces, ties at the edge time),
so a merge bug is caught on every run.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import polars as pl
import pytest

from hfq import reduce as hr

RNG = np.random.default_rng(3)
X = RNG.normal(1e6, 1.0, 40)
TIMES = RNG.integers(0, 10, 40)
WEIGHTS = RNG.integers(0, 5, 40).astype(float)
KEYS = RNG.integers(0, 4, 40)
CUTS = [(20,), (1,), (39,), (7, 23, 31)]


def frame(x=X) -> pl.DataFrame:
    return pl.DataFrame({"x": x, "t": TIMES, "w": WEIGHTS, "k": KEYS})


def merged(reducer: hr.Reducer, df: pl.DataFrame, cuts: tuple[int, ...], reverse: bool):
    bounds = [0, *cuts, df.height]
    states = [reducer.accumulate(df[a:b]) for a, b in zip(bounds, bounds[1:])]
    if reverse:
        states.reverse()
    return reducer.finalize(functools.reduce(reducer.merge, states, reducer.identity()))


def same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return a == b


@pytest.mark.parametrize("cuts", CUTS)
@pytest.mark.parametrize("reverse", [False, True])
def test_moments_merge_to_the_one_pass_answer(cuts, reverse):
    df = frame()
    assert same(merged(hr.Var(on="x"), df, cuts, reverse), float(np.var(X, ddof=1)))
    assert same(merged(hr.Mean(on="x"), df, cuts, reverse), float(np.mean(X)))
    w = hr.WeightedMean(on="x", weight="w")
    assert same(merged(w, df, cuts, reverse), float(np.average(X, weights=WEIGHTS)))


@pytest.mark.parametrize("cuts", CUTS)
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("nan_at", [None, 0, 39])
def test_min_max_merge_propagates_nan_from_any_piece(cuts, reverse, nan_at):
    x = X.copy()
    if nan_at is not None:
        x[nan_at] = np.nan
    df = frame(x)
    for reducer, oracle in ((hr.Min(on="x"), np.min), (hr.Max(on="x"), np.max)):
        assert same(merged(reducer, df, cuts, reverse), float(oracle(x)))


@pytest.mark.parametrize("cuts", CUTS)
@pytest.mark.parametrize("reverse", [False, True])
def test_first_last_merge_to_the_edge_rows(cuts, reverse):
    df = frame()
    lo, hi = TIMES.min(), TIMES.max()
    # ties at the edge time go to the smallest value (First) and the largest (Last)
    assert merged(hr.First(on="x", by="t"), df, cuts, reverse) == X[TIMES == lo].min()
    assert merged(hr.Last(on="x", by="t"), df, cuts, reverse) == X[TIMES == hi].max()


@pytest.mark.parametrize("cuts", CUTS)
@pytest.mark.parametrize("reverse", [False, True])
def test_grouped_merge_keeps_every_piece_of_every_key(cuts, reverse):
    df = frame()
    got = merged(hr.Grouped(by="k", reducer=hr.Sum(on="x")), df, cuts, reverse)
    want = {int(k): float(X[KEYS == k].sum()) for k in np.unique(KEYS)}
    assert got.keys() == want.keys()
    assert all(same(got[k], want[k]) for k in want)
