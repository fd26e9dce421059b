"""The quality report on a 2-node local Ray cluster: partitions held only by the other node
are reduced by that node's server (the task is pickled and shipped), and the report equals the
one computed on the driver from the same rows; the node-side path agrees with the in-process
one of an embedded database (tests/unit/test_quality.py checks that one against DuckDB)."""

from __future__ import annotations

import polars as pl
import pytest

import hfq
from hfq.quality import Rules, symbol_days

pytestmark = pytest.mark.timeout(300)

DAYS = ("2007-08-01", "2007-08-02")


@pytest.fixture(scope="module")
def cluster():
    from hfq.testing import local_cluster
    with local_cluster(nodes=2, cpus_per_node=1, object_store_mb=150) as c:
        yield c


def test_each_node_reduces_its_own_partitions(cluster) -> None:
    db = cluster.connect()
    t = db.create_table("quotes", hfq.schemas.TAQ,
                        partition_by=hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 6)),
                        sort_by=("symbol", "time"), replicas=1)
    data = hfq.synth.taq_table(dates=DAYS, rows_per_day=20_000, symbols=80, seed=5)
    t.append(data)
    holders = {n for nodes in t.partitions()["nodes"] for n in nodes}
    # some partitions elsewhere only
    assert len(holders) == 2 and db.session.nodes.local in holders
    report = t.quality(session=("09:45", "15:45"), jump_k=6)
    assert report.on_nodes and report.partitions == t.partitions().height
    frame = pl.from_arrow(data)
    assert isinstance(frame, pl.DataFrame)
    want = symbol_days(frame, Rules(session=("09:45", "15:45"), jump_k=6))
    assert report.by_symbol_day.equals(want)
    assert report.rows == 40_000 and report.summary()["count"].sum() > 0
