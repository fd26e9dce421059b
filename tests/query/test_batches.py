"""How the node stage's partitions are gathered into batches (one polars plan per batch):
partitions held by the same nodes go together -- but when a partial aggregate picks rows by
their place (first/last, ties of arg_min/arg_max), only runs of consecutive partitions do, so
that the merge in batch order is the merge in partition order (the cluster answer found the
tie of another partition otherwise)."""

from __future__ import annotations

import types

import polars as pl

from hfq.engine.aggs import decompose
from hfq.engine.copart import BatchUnit
from hfq.engine.execute import batched
from hfq.engine.ops import Filter, PartialAgg, Unique


def _staged(holders: list[str], aggs: list[pl.Expr], ops: list | None = None
            ) -> types.SimpleNamespace:
    units = [types.SimpleNamespace(partition=f"p{i}", rows=10, key=(i,))
             for i in range(len(holders))]
    by_unit = {id(u): {h} for u, h in zip(units, holders)}
    nodes = types.SimpleNamespace(alive=lambda: ["a", "b"],
                                  unit_holders=lambda u: by_unit[id(u)])
    source = types.SimpleNamespace(nodes=lambda: nodes, threads=lambda: 1)
    plan = decompose(tuple(aggs), ["k"], pl.Schema({"k": pl.Int64, "x": pl.Float64,
                                                    "t": pl.Int64}))
    assert plan is not None
    return types.SimpleNamespace(units=units, source=source,
                                 node_ops=[PartialAgg((pl.col("k"),), plan)] if ops is None
                                 else ops)


def _parts(batches: list) -> list[list[str]]:
    return [[p.partition for p in b.parts] if isinstance(b, BatchUnit) else [b.partition]
            for b in batches]


def test_partitions_of_the_same_nodes_batch_together():
    staged = _staged(["a", "b", "a", "b", "a"], [pl.col("x").sum()])
    assert _parts(batched(staged)) == [["p0", "p2", "p4"], ["p1", "p3"]]


def test_order_picking_aggregates_batch_consecutive_partitions_only():
    for agg in (pl.col("x").first(), pl.col("x").last(), pl.col("x").max_by("t"),
                pl.col("x").sort_by("t").first()):
        staged = _staged(["a", "a", "b", "a", "b", "b"], [agg])
        assert _parts(batched(staged)) == [["p0", "p1"], ["p2"], ["p3"], ["p4", "p5"]], agg


def test_rows_for_the_driver_batch_consecutive_partitions_only():
    """A node stage that sends rows (an aggregate that cannot be split runs on the driver
    over them, and picks the first of tied rows in partition order): batches of partitions
    that are not consecutive would hand the driver the rows out of partition order (the
    3-node answer to arg_min(name, bid) beside sum(1) named another tied row)."""
    holders = ["a", "a", "b", "a", "b", "b"]
    consecutive = [["p0", "p1"], ["p2"], ["p3"], ["p4", "p5"]]
    for ops in ([], [Filter(pl.col("x") > 0)], [Unique(("k",))]):
        assert _parts(batched(_staged(holders, [pl.col("x").sum()], ops))) == consecutive, ops
    # groups: their order does not matter
    assert _parts(batched(_staged(holders, [pl.col("x").sum()], [Unique(None)]))) == \
        [["p0", "p1", "p3"], ["p2", "p4", "p5"]]
