"""A node's identity and its partitions survive a restart of the whole Ray cluster."""

from __future__ import annotations

import polars as pl
import pytest

import hfq
from conftest import canonical
from hfq import reduce as hr

pytestmark = pytest.mark.timeout(300)


def test_ray_restarted_finds_the_catalog_and_every_partition(tmp_path):
    from hfq.testing import local_cluster
    data = hfq.synth.taq_table(dates=("2007-08-01", "2007-08-02"), rows_per_day=10_000,
                               symbols=40, seed=9)
    with local_cluster(nodes=2, root=str(tmp_path)) as cluster:
        db = cluster.connect()
        t = db.create_table("quotes", hfq.schemas.TAQ,
                            partition_by=hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 4)),
                            sort_by=("symbol", "time"), replicas=1)
        t.append(data)
        before = t.partitions()
        ray_ids = {i.ray_node_id for i in db.session.runtime().infos()}
        names = {i.name for i in db.session.runtime().infos()}
        total = t.map_reduce(lambda df: hr.Sum().of(df["bid"]), hr.Sum(), columns=["bid"])
    assert len(names) == 2
    assert set(before["nodes"].explode()) == names    # replicas=1, spread over both nodes

    with local_cluster(nodes=2, root=str(tmp_path)) as cluster:   # new Ray, same disks
        db = cluster.connect()
        assert {i.ray_node_id for i in db.session.runtime().infos()}.isdisjoint(ray_ids)
        # each disk, its node's name
        assert {i.name for i in db.session.runtime().infos()} == names
        assert db.tables() == ["quotes"]
        t = db["quotes"]
        assert t.partitions().select("partition", "nodes", "checksum").equals(
            before.select("partition", "nodes", "checksum"))
        assert canonical(t.to_arrow()).equals(canonical(data))
        assert t.map_reduce(lambda df: hr.Sum().of(df["bid"]), hr.Sum(),
                            columns=["bid"]) == total
        assert t.verify() == before.height
        # and it takes writes again
        t.append(data.slice(0, 100))
        assert len(t) == data.num_rows + 100
        assert t.scan(symbols="IBM").to_polars().height == pl.from_arrow(data).filter(
            pl.col("symbol").cast(pl.String) == "IBM").height + pl.from_arrow(
            data.slice(0, 100)).filter(pl.col("symbol").cast(pl.String) == "IBM").height
