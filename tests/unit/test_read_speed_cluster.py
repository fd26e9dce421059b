"""A large scan into pandas / polars on a 2-node cluster: the partitions this process's node
does not hold arrive from the other node's server and are copied into place on arrival
(hfq.query.read.Assembler), checked against the source rows."""

from __future__ import annotations

import pandas as pd
import polars as pl
import pytest

import hfq
import hfq.engine.read
from hfq.engine.read import pandas_ready as _pandas_ready

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def quotes():
    from hfq.testing import local_cluster
    with local_cluster(nodes=2, cpus_per_node=1, object_store_mb=100) as c:
        db = c.connect()
        t = db.create_table("quotes", hfq.schemas.TAQ, sort_by=("symbol", "time"),
                            partition_by=hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 6)),
                            replicas=1)
        source = hfq.synth.taq_table(rows_per_day=4000, symbols=30, seed=5,
                                     dates=["2007-08-01", "2007-08-02"])
        t.append(source)
        yield t, source


def test_partitions_from_the_other_node_are_assembled(quotes, monkeypatch):
    monkeypatch.setattr(hfq.engine.read, "INLINE_ROWS", 0)   # the large-scan path on tiny data
    t, source = quotes
    nodes = {n for ns in t.partitions()["nodes"].to_list() for n in ns}
    assert len(nodes) == 2   # some partitions are held only by the other node
    want = pl.from_arrow(source)
    assert isinstance(want, pl.DataFrame)

    def norm(f: pl.DataFrame) -> pl.DataFrame:
        return f.with_columns(pl.col(pl.Categorical).cast(pl.String)).sort(f.columns)
    assert norm(t.scan().to_polars()).equals(norm(want))
    frame = t.scan().to_pandas()
    pd.testing.assert_frame_equal(
        frame, _pandas_ready(t.scan().to_arrow()).to_pandas(date_as_object=False),
        check_categorical=True)
    assert len(frame) == source.num_rows
