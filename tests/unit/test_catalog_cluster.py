"""The catalog survives the head's disk (issue 14 item 2), on a local 2-node Ray cluster: every
committed catalog file is copied to the other node as it is written; after the head's catalog
is deleted, a new head (a new catalog root, ``recover=True``) gathers it back from the node:
every table at its last version, the same partitions with the same checksums, the same rows
(polars oracle).  One cluster for the module.
"""

from __future__ import annotations

import logging
import os
import shutil

import polars as pl
import pytest

import hfq
from hfq.catalog.replica import CATALOG_DIRS

pytestmark = pytest.mark.timeout(300)

SCHEME = hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 4))


@pytest.fixture(scope="module")
def cluster():
    from hfq.testing import local_cluster
    with local_cluster(nodes=2, cpus_per_node=1, object_store_mb=100) as c:
        yield c


def checksums(t: hfq.Table) -> dict[str, list[int]]:
    return {p: [f.crc32 for f in e.fragments] for p, e in t.snapshot().partitions.items()}


def test_a_new_head_recovers_every_table_from_the_nodes(cluster, tmp_path, caplog):
    db = cluster.connect()
    data = [hfq.synth.taq_table(dates=(d,), rows_per_day=400, symbols=12, seed=i)
            for i, d in enumerate(("2024-01-02", "2024-01-03", "2024-01-04"))]
    quotes = db.create_table("quotes", hfq.schemas.TAQ, partition_by=SCHEME,
                             sort_by=("symbol", "time"), replicas=2)
    bars = db.create_table("bars", hfq.schemas.TAQ, partition_by=hfq.Value("date"),
                           sort_by=("symbol",))
    for batch in data:
        quotes.append(batch)
    bars.append(data[0])
    quotes.compact()
    quotes.vacuum(keep_versions=2, grace_s=0)
    before = {name: (db[name].version, db[name].versions(), checksums(db[name]),
                     db[name].scan().to_polars().sort(["symbol", "time", "bid"]))
              for name in ("quotes", "bars")}
    head_root, other_root = cluster.roots[0], cluster.roots[1]
    for name in ("quotes", "bars"):      # the copy on the other node is the head's catalog
        for sub in CATALOG_DIRS:
            mine = sorted(os.listdir(os.path.join(head_root, name, sub)))
            assert mine == sorted(os.listdir(os.path.join(other_root, name, sub))), (name, sub)
    for name in ("quotes", "bars"):      # the head's disk loses the catalog
        for sub in CATALOG_DIRS:
            shutil.rmtree(os.path.join(head_root, name, sub))
    with pytest.raises(hfq.errors.TableNotFoundError):
        cluster.connect()["quotes"]
    new_root = str(tmp_path / "new_head")
    with caplog.at_level(logging.WARNING, logger="hfq"):   # a plain connect says what to do
        assert hfq.connect(address=cluster.address, catalog=new_root).tables() == []
    assert "recover=True" in caplog.text and "bars, quotes" in caplog.text, caplog.text
    new = hfq.connect(address=cluster.address, catalog=new_root, recover=True)
    assert sorted(new.tables()) == ["bars", "quotes"] and new.check() == []
    for name, (version, versions, sums, rows) in before.items():
        t = new[name]
        assert (t.version, t.versions(), checksums(t)) == (version, versions, sums), name
        got = t.scan().to_polars().sort(["symbol", "time", "bid"])
        assert got.equals(rows), name
    assert new["quotes"].append(data[0]) == before["quotes"][0] + 1
    expected = pl.concat([pl.from_arrow(b) for b in (*data, data[0])]).height
    assert len(new["quotes"]) == expected


def test_an_incremental_vacuum_keeps_each_nodes_files_exact(cluster):
    """Vacuum on 2 nodes with 2 replicas (issue 16): after a first (full) vacuum, with every
    directory made to look old, the next one finds the files of forgotten versions through
    the catalog alone, and a dead writer's file through its directory -- on each node."""
    import subprocess
    import sys
    import time

    from hfq.storage.store import HOST
    db = cluster.connect()
    t = db.create_table("ticks", hfq.schemas.TAQ, partition_by=SCHEME,
                        sort_by=("symbol", "time"), replicas=2)
    data = [hfq.synth.taq_table(dates=(d,), rows_per_day=300, symbols=12, seed=i)
            for i, d in enumerate(("2024-01-02", "2024-01-03", "2024-01-02"))]
    for batch in data:
        t.append(batch)
    t.vacuum(grace_s=0)                  # full: each node's sweep recorded
    t.compact()                          # 2024-01-02's partitions: two files become one
    past = time.time() - 3600
    for root in cluster.roots:
        for d, _, _ in os.walk(os.path.join(root, "ticks", "data")):
            os.utime(d, (past, past))
    pid = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                             capture_output=True, text=True, check=True).stdout)
    where = os.path.join(cluster.roots[1], "ticks", "data", "date=v2024-01-03")
    part = os.path.join(where, sorted(os.listdir(where))[0])
    with open(os.path.join(part, f"{int(time.time() * 1000)}-{HOST}-{pid}-0a1b2c3d-x-1.arrow"),
              "wb") as f:
        f.write(b"left by a writer that died")
    report = t.vacuum(keep_versions=1, grace_s=0)
    assert report["versions_forgotten"] >= 3 and report["files_removed"] > 2
    for root in cluster.roots:
        held = {os.path.relpath(os.path.join(d, f), root)
                for d, _, fs in os.walk(os.path.join(root, "ticks", "data")) for f in fs}
        placed = {f.file for f in t.snapshot().fragments()}
        assert held == placed, root      # 2 replicas on 2 nodes: every file on each
    got = t.scan().to_polars().sort(["symbol", "time", "bid"])
    want = pl.concat([pl.from_arrow(b) for b in data]).sort(["symbol", "time", "bid"])
    assert got.select(want.columns).equals(want)
