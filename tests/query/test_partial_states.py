"""The split of an aggregate into per-partition states (``hfq.engine.aggs.decompose``): a
leaf the compiler writes several times is computed once, and the medians and quantiles of one
input share one list of its values -- each would otherwise send every value to the driver
again -- and the merged answer is polars' over all the rows (the oracle)."""

from __future__ import annotations

import math

import polars as pl
import pytest

from hfq.engine.aggs import decompose

SCHEMA = pl.Schema({"k": pl.Int64, "x": pl.Float64, "y": pl.Float64})
col = pl.col


def _run(aggs: list[pl.Expr], parts: list[pl.DataFrame]) -> pl.DataFrame:
    """The plan as the engine runs it: states per partition, merged per group in partition
    order, then the final and output expressions."""
    plan = decompose(aggs, ["k"], SCHEMA)
    assert plan is not None
    states = pl.concat([p.lazy().group_by("k", maintain_order=True).agg(plan.partial).collect()
                        for p in parts])
    return (states.lazy().group_by("k", maintain_order=True).agg(plan.merge)
            .with_columns(plan.final).select(["k", *plan.outputs]).collect().sort("k"))


def _aggs() -> list[pl.Expr]:
    x = col("x")
    lo, hi, n = x.quantile(0.9, "lower"), x.quantile(0.9, "higher"), x.count()
    return [x.median().alias("m"), (lo * (n - 1) + hi * n).alias("mix"),
            (x.quantile(0.5, "linear") + x.count()).alias("q"), col("y").median().alias("my"),
            n.alias("n")]


def test_each_input_sends_its_values_once():
    plan = decompose(_aggs(), ["k"], SCHEMA)
    assert plan is not None
    shown = [str(e) for e in plan.partial]
    # x: one list of values, one count; y: one list
    assert sum("implode" in s for s in shown) == 2, shown
    assert sum('col("x").count()' in s for s in shown) == 1, shown


@pytest.mark.parametrize("cuts", [[], [1], [2, 5], [1, 2, 3, 4, 5, 6, 7]])
def test_the_merged_answer_is_polars_over_all_rows(cuts):
    rows = pl.DataFrame({"k": [1, 1, 2, 1, 2, 2, 1, 3],
                         "x": [1.5, None, -math.inf, 2.5, math.nan, 0.0, -0.0, None],
                         "y": [None, 4.0, 1.0, -1.0, 2.0, math.inf, 7.0, None]},
                        schema=SCHEMA)
    bounds = [0, *cuts, rows.height]
    parts = [rows[a:b] for a, b in zip(bounds, bounds[1:])]
    got = _run(_aggs(), parts)
    want = rows.group_by("k").agg(_aggs()).sort("k")
    assert got.equals(want, null_equal=True), (got, want)
