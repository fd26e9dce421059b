"""CSV files on S3 (moto's server on loopback) loaded on a 2-node cluster: the paths are
expanded once on the driver and each node opens exactly its share of the files with the load's
``storage_options`` (before, the nodes globbed again without them)."""

from __future__ import annotations

import fsspec
import polars as pl
import pytest

import hfq
from conftest import canonical

BUCKET = "hfq-test"   # the bucket of the s3_server fixture (tests/conftest.py)


@pytest.fixture(scope="module")
def cluster(s3_server):   # the S3 server first: the nodes' workers start after it
    from hfq.testing import local_cluster
    with local_cluster(nodes=2, cpus_per_node=1, object_store_mb=150) as c:
        yield c


def test_s3_csvs_load_on_two_nodes_with_the_loads_storage_options(cluster, s3_server):
    fs = fsspec.filesystem("s3", **s3_server)
    days = ["2007-08-01", "2007-08-02", "2007-08-03", "2007-08-06"]
    frames = []
    for i, day in enumerate(days):
        frame = hfq.synth.taq_table(dates=[day], rows_per_day=3_000, symbols=40, seed=i)
        frames.append(frame)
        local = cluster.root + f"/q{i}.csv"
        pl.from_arrow(frame).write_csv(local)
        fs.put(local, f"{BUCKET}/taq/{day}.csv")
    db = cluster.connect()
    assert len(db.session.nodes.alive()) == 2
    t = db.create_table("quotes", hfq.schemas.TAQ,
                        partition_by=hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 4)),
                        sort_by=("symbol", "time"))
    report = db.load_csv("quotes", f"s3://{BUCKET}/taq/*.csv", storage_options=s3_server)
    assert report.rows == 4 * 3_000 and len(report.per_file) == 4
    got = t.refresh().to_polars()
    want = pl.concat([pl.from_arrow(f) for f in frames])
    # one NULL rule: an empty field is NULL for text too (the synthetic mmid has '' values)
    want = want.with_columns(pl.when(pl.col(c).cast(pl.String) != "").then(pl.col(c))
                             for c in ("ex", "mmid"))
    assert canonical(got.select(want.columns)).equals(canonical(want.cast(got.schema)))
    # the ledger knows each file by its S3 URL and content: a second load is refused
    with pytest.raises(hfq.errors.DuplicateLoadError, match=r"s3://hfq-test/taq/2007-08-0"):
        db.load_csv("quotes", f"s3://{BUCKET}/taq/2007-08-01.csv", storage_options=s3_server)
    # both nodes parsed a share of the files, each file once
    assert len(report.nodes) == 2, report.nodes
    assert sorted(p for share in report.nodes.values() for p in share) == sorted(report.files)
