"""Every reducer is a monoid: any split of a frame into partitions (empty ones and single rows
included), each reduced with ``accumulate`` and merged in any order and any tree shape, gives
the one-pass answer.

Tolerances, and why: Count, Min, Max, First and Last are exact (they only compare).  Sums and
moments of floats are not associative under rounding, so a merge tree may round differently
from one pass: the bound is the classic one for recursive summation, ``n * eps * sum(|x|)``
(times the spread for the variance), plus an absolute ``1e-300`` for subnormal underflow.
Non-finite data (NaN, inf) must give a non-finite answer of the same kind both ways.  Nulls are
missing values: skipped, so the oracles run over the non-null values.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hfq import reduce as hr
from hfq.testing.strategies import merge_trees, reducer_values

EPS = np.finfo(np.float64).eps
SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


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
def bounds(draw, n: int) -> list[int]:
    """Random cut points of ``n`` rows: ``[0, ..., n]``, repeats (empty pieces) included."""
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=8)))
    return [0, *cuts, n]


@st.composite
def splits(draw, frame: pl.DataFrame):
    """``frame`` cut at random rows, and a random merge tree over the pieces."""
    b = draw(bounds(frame.height))
    pieces = [frame.slice(lo, hi - lo) for lo, hi in zip(b, b[1:])]
    return pieces, draw(merge_trees(len(pieces)))


def split_reduce(reducer, pieces, tree):
    """The answer from ``accumulate`` on each piece, merged along ``tree``."""
    return reducer.finalize(merged(reducer, [reducer.accumulate(p) for p in pieces], tree))


def one_pass(reducer, frame):
    return reducer.finalize(reducer.accumulate(frame))


@st.composite
def with_nulls(draw, values: list) -> list:
    """``values`` with some of them (usually none) replaced by null."""
    if not values:
        return values
    missing = draw(st.sets(st.integers(0, len(values) - 1), max_size=max(len(values) // 4, 1)))
    return [None if i in missing else v for i, v in enumerate(values)]


@st.composite
def split_case(draw, finite=False):
    """(non-null values, frame of ``x`` with nulls among them, pieces, merge tree)."""
    column = draw(with_nulls(draw(reducer_values(finite=finite))))
    frame = pl.DataFrame({"x": pl.Series(column, dtype=pl.Float64)})
    pieces, tree = draw(splits(frame))
    return [v for v in column if v is not None], frame, pieces, tree


def close(a, b, scale: float, n: int) -> bool:
    if isinstance(a, float) and (math.isnan(a) or math.isinf(a)):
        return (math.isnan(a) and math.isnan(b)) or a == b
    return abs(a - b) <= 4 * max(n, 1) * EPS * scale + 1e-300


def same(a, b) -> bool:
    return a == b or (a != a and b != b)


def equal(a, b) -> bool:
    """Exactly equal, NaN equal to NaN, through tuples and dicts."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(equal(a[k], b[k]) for k in a)
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(map(equal, a, b))
    return type(a) is type(b) and same(a, b)


@SETTINGS
@given(split_case())
def test_count_min_max_are_exact(case):
    values, frame, pieces, tree = case
    assert split_reduce(hr.Count(), pieces, tree) == frame.height
    assert split_reduce(hr.Count(on="x"), pieces, tree) == len(values)
    for reducer in (hr.Min(on="x"), hr.Max(on="x")):
        got = split_reduce(reducer, pieces, tree)
        # numpy's min/max propagate NaN: the oracle is numpy over all the non-null values
        want = None if not values else getattr(np, type(reducer).__name__.lower())(
            np.array(values)).item()
        assert same(got, want)


@SETTINGS
@given(split_case())
def test_sum(case):
    values, _, pieces, tree = case
    got = split_reduce(hr.Sum(on="x"), pieces, tree)
    with np.errstate(over="ignore", invalid="ignore"):   # near 1.8e308 sums overflow to inf
        want = float(np.sum(np.array(values, dtype=float))) if values else 0
        scale = float(np.sum(np.abs(values))) if values else 0.0
    finite = np.isfinite(values).all() if values else True
    if finite and math.isfinite(want) and math.isfinite(got) and math.isfinite(scale):
        assert close(got, want, scale, len(values))
    elif finite:   # overflow in one order and not the other is allowed only near the edge
        assert max(abs(v) for v in values) > 1e290
    else:
        assert same(got, want)


@SETTINGS
@given(st.lists(st.one_of(st.integers(-(2 ** 40), 2 ** 40), st.none()), max_size=60),
       st.data())
def test_integer_sum_is_exact(column, data):
    frame = pl.DataFrame({"n": pl.Series(column, dtype=pl.Int64)})
    pieces, tree = data.draw(splits(frame))
    got = split_reduce(hr.Sum(on="n"), pieces, tree)
    assert type(got) is int and got == sum(v for v in column if v is not None)


@SETTINGS
@given(split_case(finite=True))
def test_mean_and_variance_merge_like_one_pass(case):
    values, frame, pieces, tree = case
    arr = np.array(values, dtype=float)
    if len(arr) and np.abs(arr).max() > 1e150:   # squares would overflow: not this test
        return
    for reducer in (hr.Mean(on="x"), hr.Var(on="x"), hr.Std(on="x"), hr.Var(on="x", ddof=0)):
        got = split_reduce(reducer, pieces, tree)
        one = one_pass(reducer, frame)
        if math.isnan(one):
            assert math.isnan(got)
            continue
        spread = float(np.abs(arr - arr.mean()).max()) if len(arr) else 0.0
        # each deviation x - mean is rounded relative to |x|, not to the spread: with a mean
        # far from zero (6.46e16 +- 5e13) that rounding, not the merge, bounds the agreement
        mag = float(np.abs(arr).max()) if len(arr) else 0.0
        scale = {"Mean": mag, "Var": spread * (spread + mag) * 4,
                 "Std": (spread + mag) * 2}[type(reducer).__name__]
        assert close(got, one, scale, len(arr) * 8), (reducer, got, one)


@SETTINGS
@given(st.data())
def test_first_last_and_weighted_mean(data):
    n = data.draw(st.integers(0, 40))
    times = data.draw(st.lists(st.one_of(st.integers(0, 5), st.none()), min_size=n, max_size=n))
    values = data.draw(st.lists(st.one_of(st.floats(-1e6, 1e6), st.just(float("nan")),
                                          st.none()), min_size=n, max_size=n))
    weights = data.draw(st.lists(st.floats(0, 1e6), min_size=n, max_size=n))
    frame = pl.DataFrame({"time": pl.Series(times, dtype=pl.Int64),
                          "value": pl.Series(values, dtype=pl.Float64),
                          "finite": pl.Series([(v if v == v else 0.0) for v in values],
                                              dtype=pl.Float64),
                          "weight": pl.Series(weights, dtype=pl.Float64)})
    pieces, tree = data.draw(splits(frame))
    timed = [(t, v) for t, v in zip(times, values) if t is not None]
    for reducer in (hr.First(on="value", by="time"), hr.Last(on="value", by="time")):
        got = split_reduce(reducer, pieces, tree)
        want = one_pass(reducer, frame)
        assert same(got, want)
        if timed:   # the oracle: a value at the edge time; numbers before NaN before null
            edge = (max if isinstance(reducer, hr.Last) else min)(t for t, _ in timed)
            assert any(same(got, v) for t, v in timed if t == edge)
        else:
            assert got is None
    r = hr.WeightedMean(on="finite", weight="weight")
    got = split_reduce(r, pieces, tree)
    want = one_pass(r, frame)
    if math.isnan(want):
        assert math.isnan(got)
    else:
        assert close(got, want, 1e6, n * 4)


@SETTINGS
@given(st.data())
def test_grouped_by_minute_equals_one_pass(data):
    n = data.draw(st.integers(0, 50))
    keys = data.draw(st.lists(st.integers(570, 575), min_size=n, max_size=n))
    sides = data.draw(st.lists(st.sampled_from(["B", "S", None]), min_size=n, max_size=n))
    values = data.draw(st.lists(st.floats(-1e3, 1e3), min_size=n, max_size=n))
    frame = pl.DataFrame({"minute": pl.Series(keys, dtype=pl.Int64),
                          "side": pl.Series(sides, dtype=pl.String),
                          "v": pl.Series(values, dtype=pl.Float64)})
    pieces, tree = data.draw(splits(frame))
    for r in (hr.Grouped(by="minute", reducer=hr.Count()),
              hr.Grouped(by="minute", reducer=hr.Mean(on="v")),
              hr.Grouped(by="minute", reducer=hr.Max(on="v")),
              hr.Grouped(by=["minute", "side"], reducer=hr.Sum(on="v"))):
        got = split_reduce(r, pieces, tree)
        want = one_pass(r, frame)
        assert list(got) == list(want)   # same keys, in key order
        for k in got:
            assert got[k] == pytest.approx(want[k], rel=1e-12, abs=1e-9)
    # an inner reducer without names reads the group's other column by position
    positional = hr.Grouped(by="minute", reducer=hr.Mean())
    got = split_reduce(positional, [p.select("minute", "v") for p in pieces], tree)
    assert got.keys() == one_pass(hr.Grouped(by="minute", reducer=hr.Mean(on="v")),
                                  frame).keys()
    oracle = frame.group_by("minute").agg(pl.len(), pl.col("v").mean())
    counts = split_reduce(hr.Grouped(by="minute", reducer=hr.Count()), pieces, tree)
    assert counts == dict(zip(oracle["minute"], oracle["len"]))
    for k, mean in zip(oracle["minute"], oracle["v"]):
        assert got[k] == pytest.approx(mean, rel=1e-12, abs=1e-9)


@SETTINGS
@given(st.data())
def test_ols_moments_merge_exactly_enough_for_ill_conditioned_designs(data):
    n = data.draw(st.integers(3, 60))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    x = 1e6 + rng.normal(0, 1e-3, size=(n, 2))          # far from zero, tiny variance
    y = 3.0 + x @ np.array([2.0, -1.0]) + rng.normal(0, 1e-4, n)
    x[rng.random(n) < 0.1, 0] = np.nan                   # dropped rows, never zero-filled
    x1 = pl.Series("x1", x[:, 0]).to_list()
    null = rng.random(n) < 0.05                          # nulls are dropped too
    frame = pl.DataFrame({"x1": pl.Series([None if m else v for v, m in zip(x1, null)],
                                          dtype=pl.Float64),
                          "x2": x[:, 1], "y": y})
    pieces, tree = data.draw(splits(frame))
    r = hr.OLSMoments(y="y", x=["x1", "x2"])
    got = split_reduce(r, pieces, tree)
    want = one_pass(r, frame)
    assert got[0] == want[0] == int((~np.isnan(x[:, 0]) & ~null).sum())
    # the same state from arrays, by position (the last column is y)
    x[null, 0] = np.nan
    by_position = hr.OLSMoments().of(x, y)
    assert by_position[0] == want[0]
    if want[0] == 0:
        return
    np.testing.assert_array_equal(by_position[1] + by_position[2], want[1])
    np.testing.assert_allclose(got[1], want[1], rtol=1e-15)
    # centred cross-products, relative to their own size (1e-6 here, next to means of 1e6):
    # no cancellation, so far tighter than the 1e-8 the OLS fit must reach
    np.testing.assert_allclose(got[2], want[2], rtol=1e-10,
                               atol=1e-12 * np.abs(want[2]).max())


# -- inputs: expressions, columns(), the array shorthand -----------------------------------------
@SETTINGS
@given(st.data())
def test_an_expression_input_equals_the_column_it_computes(data):
    n = data.draw(st.integers(0, 40))
    bid = data.draw(st.lists(st.one_of(st.floats(-1e3, 1e3), st.none()), min_size=n,
                             max_size=n))
    ofr = data.draw(st.lists(st.floats(-1e3, 1e3), min_size=n, max_size=n))
    time = data.draw(st.lists(st.integers(0, 5), min_size=n, max_size=n))
    frame = pl.DataFrame({"bid": pl.Series(bid, dtype=pl.Float64),
                          "ofr": pl.Series(ofr, dtype=pl.Float64),
                          "time": pl.Series(time, dtype=pl.Int64)})
    spread = pl.col("ofr") - pl.col("bid")
    computed = frame.with_columns(spread=spread)
    pieces, tree = data.draw(splits(frame))
    pairs = [(hr.Count(on=spread), hr.Count(on="spread")),
             (hr.Sum(on=spread), hr.Sum(on="spread")),
             (hr.Mean(on=spread), hr.Mean(on="spread")),
             (hr.Min(on=spread), hr.Min(on="spread")),
             (hr.Max(on=spread * 2), hr.Max(on=pl.col("spread") * 2)),
             (hr.First(on=spread, by="time"), hr.First(on="spread", by="time")),
             (hr.Last(on=spread, by=-pl.col("time")), hr.Last(on="spread", by=-pl.col("time"))),
             (hr.WeightedMean(on=spread, weight=pl.col("time") + 1),
              hr.WeightedMean(on="spread", weight=pl.col("time") + 1)),
             (hr.Grouped(by="time", reducer=hr.Sum(on=spread)),
              hr.Grouped(by="time", reducer=hr.Sum(on="spread")))]
    for with_expr, with_column in pairs:
        got = split_reduce(with_expr, pieces, tree)
        # the same pieces with the column computed first: the same states, exactly
        want = split_reduce(with_column, [p.with_columns(spread=spread) for p in pieces], tree)
        assert equal(got, want), (with_expr, got, want)
        assert equal(with_expr.accumulate(frame), with_column.accumulate(computed))


@pytest.mark.parametrize("reducer, columns", [
    (hr.Count(), []),
    (hr.Count(on="bid"), ["bid"]),
    (hr.Sum(), []),
    (hr.Sum(on="bid"), ["bid"]),
    (hr.Sum(on=pl.col("ofr") - pl.col("bid")), ["ofr", "bid"]),
    (hr.Min(on="bid"), ["bid"]),
    (hr.Max(on=pl.col("bid").abs()), ["bid"]),
    (hr.Var(on="bid", ddof=0), ["bid"]),
    (hr.Std(on="bid"), ["bid"]),
    (hr.Mean(on=(pl.col("bid") + pl.col("ofr")) / 2), ["bid", "ofr"]),
    (hr.First(on="bid", by="time"), ["bid", "time"]),
    (hr.Last(on=pl.col("ofr") - pl.col("bid"), by="time"), ["ofr", "bid", "time"]),
    (hr.First(), []),
    (hr.WeightedMean(on="price", weight="size"), ["price", "size"]),
    (hr.WeightedMean(on="price", weight=pl.col("price") * pl.col("size")), ["price", "size"]),
    (hr.Grouped(by="symbol", reducer=hr.Count()), ["symbol"]),
    (hr.Grouped(by=["symbol", "minute"], reducer=hr.Mean(on="bid")),
     ["symbol", "minute", "bid"]),
    (hr.Grouped(by="symbol", reducer=hr.Count(on="symbol")), ["symbol"]),
    (hr.Grouped(by="date", reducer=hr.Grouped(by="symbol", reducer=hr.Last(on="bid",
                                                                            by="time"))),
     ["date", "symbol", "bid", "time"]),
    (hr.OLSMoments(y="y", x=["x1", "x2"]), ["x1", "x2", "y"]),
    (hr.OLSMoments(y="y", x="x"), ["x", "y"]),
    (hr.OLSMoments(y=pl.col("y").log(), x=[pl.col("x") ** 2, "z"]), ["x", "z", "y"]),
    (hr.OLSMoments(), []),
])
def test_columns_are_the_inputs_read(reducer, columns):
    assert reducer.columns() == columns


def test_accumulate_reads_only_its_columns():
    frame = pl.DataFrame({"symbol": ["A", "B", "A"], "time": [2, 1, 3], "bid": [1.0, 2.0, 4.0],
                          "ofr": [1.5, 2.0, 4.5], "size": [1, 2, 1], "junk": ["x", "y", "z"]})
    for r in (hr.Count(on="bid"), hr.Sum(on=pl.col("ofr") - pl.col("bid")), hr.Max(on="bid"),
              hr.Var(on="bid"), hr.First(on="bid", by="time"),
              hr.WeightedMean(on="bid", weight="size"),
              hr.Grouped(by="symbol", reducer=hr.Mean(on="ofr")),
              hr.OLSMoments(y="ofr", x=["bid"])):
        narrow = frame.select(r.columns())
        a, b = r.finalize(r.accumulate(frame)), r.finalize(r.accumulate(narrow))
        if isinstance(r, hr.OLSMoments):
            assert a[0] == b[0] and np.array_equal(a[1], b[1]) and np.array_equal(a[2], b[2])
        else:
            assert a == b


def test_of_is_one_shorthand_for_accumulate():
    # one signature for every reducer: no subclass overrides it
    assert all(getattr(hr, name).of is hr.Reducer.of for name in hr.__all__
               if isinstance(getattr(hr, name), type) and issubclass(getattr(hr, name),
                                                                      hr.Reducer))
    assert hr.Count().of([1.0, float("nan"), None]) == 3
    assert hr.Count(on="x").of([1.0, float("nan"), None]) == 2
    assert hr.Sum().of(np.array([1, 2, 3])) == 6
    assert hr.Min().of([]) is None
    assert hr.Mean().finalize(hr.Mean().of(pl.Series([1.0, None, 3.0]))) == 2.0
    assert hr.Sum(on=pl.col("ofr") - pl.col("bid")).of([2.0, 3.0], [1.0, 1.0]) == 3.0
    assert hr.First(on="v", by="t").of([5.0, 6.0], [2, 1]) == (1, 6.0)
    assert hr.Last().of([5.0, 6.0], [2, 1]) == (2, 5.0)   # by position: value, time
    grouped = hr.Grouped(by="k", reducer=hr.Mean())
    assert grouped.finalize(grouped.of([1, 2, 1], [1.0, 5.0, 3.0])) == {1: 2.0, 2: 5.0}
    with pytest.raises(TypeError, match="inputs"):
        hr.WeightedMean(on="p", weight="w").of([1.0])


def test_inputs_are_checked():
    with pytest.raises(ValueError, match="position"):
        hr.Sum().accumulate(pl.DataFrame({"a": [1], "b": [2]}))
    with pytest.raises(ValueError, match="or none"):
        hr.First(on="bid")
    with pytest.raises(ValueError, match="or none"):
        hr.WeightedMean(weight="size")
    with pytest.raises(ValueError, match="neither"):
        hr.OLSMoments(y="y")
    with pytest.raises(TypeError):
        hr.Sum(on=3)
    with pytest.raises(TypeError):
        hr.Grouped(by=[], reducer=hr.Count())
    with pytest.raises(TypeError, match="no accumulate"):
        hr.as_reducer(lambda a, b: a + b).accumulate(pl.DataFrame({"a": [1]}))
    with pytest.raises(ValueError, match="columns"):
        hr.Sum(on=pl.col("a", "b")).accumulate(pl.DataFrame({"a": [1], "b": [2]}))


def test_as_reducer_and_merge_all():
    assert hr.as_reducer(hr.Count).merge_all([1, 2, 3]) == 6
    r = hr.as_reducer(max)
    assert r.finalize(r.merge_all([3, 7, 5])) == 7 and r.finalize(r.merge_all([])) is None
    summed = hr.as_reducer(hr.Sum())
    assert np.array_equal(summed.merge_all([np.ones(3), np.arange(3.0)]), [1.0, 2.0, 3.0])
    with pytest.raises(TypeError):
        hr.as_reducer(3)


def test_overflow_gives_inf_without_warnings():
    big = pl.DataFrame({"x": [1e308, 1e308], "w": [1e308, 1e308]})
    assert hr.Sum(on="x").accumulate(big) == math.inf
    assert hr.Var(on="x").finalize(hr.Var(on="x").accumulate(big)) != 0   # inf or NaN
    assert math.isinf(hr.Mean(on="x").finalize(hr.Mean(on="x").accumulate(big)))
    r = hr.WeightedMean(on="x", weight="w")
    assert not math.isfinite(r.finalize(r.accumulate(big)))
