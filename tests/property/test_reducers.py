"""Every reducer is a monoid: any split of the data into partitions (empty ones and single rows
included), merged in any order and any tree shape, gives the one-pass answer.

Tolerances, and why: Count, Min, Max, First and Last are exact (they only compare).  Sums and
moments of floats are not associative under rounding, so a merge tree may round differently
from one pass: the bound is the classic one for recursive summation, ``n * eps * sum(|x|)``
(times the spread for the variance), plus an absolute ``1e-300`` for subnormal underflow.
Non-finite data (NaN, inf) must give a non-finite answer of the same kind both ways.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hfq import reduce as hr
from hfq.testing.strategies import merge_trees, partitioned, reducer_values

EPS = np.finfo(np.float64).eps
SETTINGS = settings(max_examples=150, deadline=None)


def merged(reducer, partials, tree):
    """Merge ``partials`` following a drawn (order, steps) tree; identity for none."""
    order, steps = tree
    slots = {k: partials[i] for k, i in enumerate(order)}
    for a, b in steps:
        # the left operand is the one earlier in the drawn order: both roles get exercised
        left, right = (a, b) if a < b else (b, a)
        slots[b] = reducer.merge(slots[left], slots[right])
        del slots[a]
    return next(iter(slots.values())) if slots else reducer.identity()


@st.composite
def split_case(draw, finite=False):
    values = draw(reducer_values(finite=finite))
    pieces = draw(partitioned(values))
    tree = draw(merge_trees(len(pieces)))
    return values, pieces, tree


def close(a, b, scale: float, n: int) -> bool:
    if isinstance(a, float) and (math.isnan(a) or math.isinf(a)):
        return (math.isnan(a) and math.isnan(b)) or a == b
    return abs(a - b) <= 4 * max(n, 1) * EPS * scale + 1e-300


@SETTINGS
@given(split_case())
def test_count_min_max_are_exact(case):
    values, pieces, tree = case
    for reducer, one_pass in ((hr.Count(), len(values)),
                              (hr.Min(), min(values, default=None) if values else None),
                              (hr.Max(), max(values, default=None) if values else None)):
        got = reducer.finalize(merged(reducer, [reducer.of(np.array(p, dtype=float))
                                                for p in pieces], tree))
        if isinstance(reducer, hr.Count):
            assert got == one_pass
        else:   # numpy's min/max propagate NaN: the oracle is numpy over all the values
            want = None if not values else getattr(np, type(reducer).__name__.lower())(
                np.array(values)).item()
            assert got == want or (got != got and want != want)


@SETTINGS
@given(split_case())
def test_sum(case):
    values, pieces, tree = case
    r = hr.Sum()
    got = r.finalize(merged(r, [r.of(np.array(p, dtype=float)) for p in pieces], tree))
    with np.errstate(over="ignore", invalid="ignore"):   # near 1.8e308 sums overflow to inf
        want = float(np.sum(np.array(values, dtype=float))) if values else 0
        scale = float(np.sum(np.abs(values))) if values else 0.0
    finite = np.isfinite(values).all() if values else True
    if finite and math.isfinite(want) and math.isfinite(got) and math.isfinite(scale):
        assert close(got, want, scale, len(values))
    elif finite:   # overflow in one order and not the other is allowed only near the edge
        assert max(abs(v) for v in values) > 1e290
    else:
        assert (got != got and want != want) or got == want


@SETTINGS
@given(split_case(finite=True))
def test_mean_and_variance_merge_like_one_pass(case):
    values, pieces, tree = case
    arr = np.array(values, dtype=float)
    if len(arr) and np.abs(arr).max() > 1e150:   # squares would overflow: not this test
        return
    for reducer in (hr.Mean(), hr.Var(), hr.Std()):
        got = reducer.finalize(merged(reducer, [reducer.of(np.array(p, dtype=float))
                                                for p in pieces], tree))
        one = reducer.finalize(reducer.of(arr))
        if math.isnan(one):
            assert math.isnan(got)
            continue
        spread = float(np.abs(arr - arr.mean()).max()) if len(arr) else 0.0
        scale = {"Mean": float(np.abs(arr).max()), "Var": spread ** 2 * 4,
                 "Std": spread * 2}[type(reducer).__name__]
        assert close(got, one, scale, len(arr) * 8), (type(reducer).__name__, got, one)


@SETTINGS
@given(st.data())
def test_first_last_and_weighted_mean(data):
    n = data.draw(st.integers(0, 40))
    times = data.draw(st.lists(st.integers(0, 5), min_size=n, max_size=n))
    values = data.draw(st.lists(st.one_of(st.floats(-1e6, 1e6), st.just(float("nan"))),
                                min_size=n, max_size=n))
    weights = data.draw(st.lists(st.floats(0, 1e6), min_size=n, max_size=n))
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=6)))
    bounds = [0, *cuts, n]
    tree = data.draw(merge_trees(len(bounds) - 1))
    for reducer in (hr.First(), hr.Last()):
        partials = [reducer.of(times[a:b], values[a:b]) for a, b in zip(bounds, bounds[1:])]
        got = reducer.finalize(merged(reducer, partials, tree))
        want = reducer.finalize(reducer.of(times, values))
        assert got == want or (got != got and want != want)
    r = hr.WeightedMean()
    finite = [(v if v == v else 0.0) for v in values]
    partials = [r.of(finite[a:b], weights[a:b]) for a, b in zip(bounds, bounds[1:])]
    got = r.finalize(merged(r, partials, tree))
    want = r.finalize(r.of(finite, weights))
    if math.isnan(want):
        assert math.isnan(got)
    else:
        assert close(got, want, 1e6, n * 4)


@SETTINGS
@given(st.data())
def test_grouped_by_minute_equals_one_pass(data):
    n = data.draw(st.integers(0, 50))
    keys = data.draw(st.lists(st.integers(570, 575), min_size=n, max_size=n))
    values = data.draw(st.lists(st.floats(-1e3, 1e3), min_size=n, max_size=n))
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=6)))
    bounds = [0, *cuts, n]
    tree = data.draw(merge_trees(len(bounds) - 1))
    for inner in (hr.Count(), hr.Mean(), hr.Max()):
        r = hr.Grouped(inner)
        partials = [r.of(np.array(keys[a:b]), np.array(values[a:b]))
                    for a, b in zip(bounds, bounds[1:])]
        got = r.finalize(merged(r, partials, tree))
        want = r.finalize(r.of(np.array(keys), np.array(values)))
        assert got.keys() == want.keys()
        for k in got:
            assert got[k] == pytest.approx(want[k], rel=1e-12, abs=1e-9)


@SETTINGS
@given(st.data())
def test_ols_moments_merge_exactly_enough_for_ill_conditioned_designs(data):
    n = data.draw(st.integers(3, 60))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    x = 1e6 + rng.normal(0, 1e-3, size=(n, 2))          # far from zero, tiny variance
    y = 3.0 + x @ np.array([2.0, -1.0]) + rng.normal(0, 1e-4, n)
    x[rng.random(n) < 0.1, 0] = np.nan                   # dropped rows, never zero-filled
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=6)))
    bounds = [0, *cuts, n]
    tree = data.draw(merge_trees(len(bounds) - 1))
    r = hr.OLSMoments()
    got = r.finalize(merged(r, [r.of(x[a:b], y[a:b]) for a, b in zip(bounds, bounds[1:])],
                            tree))
    want = r.finalize(r.of(x, y))
    assert got[0] == want[0]
    if want[0] == 0:
        return
    np.testing.assert_allclose(got[1], want[1], rtol=1e-15)
    # centred cross-products, relative to their own size (1e-6 here, next to means of 1e6):
    # no cancellation, so far tighter than the 1e-8 the OLS fit must reach
    np.testing.assert_allclose(got[2], want[2], rtol=1e-10,
                               atol=1e-12 * np.abs(want[2]).max())
