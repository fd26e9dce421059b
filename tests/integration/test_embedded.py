"""``hfq.connect()`` with no address: the same runtime on a one-node Ray cluster it owns."""

from __future__ import annotations

import polars as pl
import pytest

import hfq
from conftest import canonical
from hfq import reduce as hr

pytestmark = pytest.mark.timeout(300)


def test_embedded_database_runs_map_reduce_on_its_own_one_node_cluster(tmp_path):
    import ray
    assert not ray.is_initialized()
    db = hfq.connect(str(tmp_path / "db"))
    try:
        t = db.create_table("quotes", hfq.schemas.TAQ,
                            partition_by=hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 4)),
                            sort_by=("symbol", "time"))
        data = hfq.synth.taq_table(dates=("2007-08-01",), rows_per_day=20_000, symbols=30)
        t.append(data)
        assert not ray.is_initialized()   # storing and reading need no Ray
        assert canonical(t.to_arrow()).equals(canonical(data))
        n = t.map_reduce(lambda df: df.height, hr.Sum())   # starts the one-node cluster
        assert n == data.num_rows
        assert ray.is_initialized() and len(ray.nodes()) == 1
        assert db.session.nodes.alive() == [db.session.nodes.local]
        assert t.partitions()["nodes"].to_list() == [[db.session.nodes.local]] * 4
        mean = t.map_reduce(lambda df: hr.Mean().of(df["ofr"] - df["bid"]), hr.Mean(),
                            where=pl.col("ofr") > pl.col("bid"))
        oracle = pl.from_arrow(data).filter(pl.col("ofr") > pl.col("bid"))
        assert mean == pytest.approx((oracle["ofr"] - oracle["bid"]).mean(), rel=1e-12)
        assert db.rebalance() == {"quotes": 0}   # one node: nothing to move
    finally:
        db.close()
    assert not ray.is_initialized()
