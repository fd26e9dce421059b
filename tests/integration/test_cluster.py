"""The cluster runtime on one shared local 3-node Ray cluster (a 4th node joins later).

Tests run in file order and share the cluster: the node-loss tests come last.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import polars as pl
import pytest

import hfq
from conftest import ROOT, canonical, csv_nulls
from hfq import reduce as hr
from hfq.errors import CsvError, PartitionUnavailableError
from hfq.runtime.placement import place

pytestmark = pytest.mark.timeout(300)

DAYS = ("2007-08-01", "2007-08-02")
SCHEME = hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 8))


@pytest.fixture(scope="module")
def cluster():
    from hfq.testing import local_cluster
    with local_cluster(nodes=3, cpus_per_node=1, object_store_mb=150) as c:
        yield c


@pytest.fixture(scope="module")
def db(cluster):
    return cluster.connect()


@pytest.fixture(scope="module")
def data():
    return hfq.synth.taq_table(dates=DAYS, rows_per_day=30_000, symbols=60, seed=3)


@pytest.fixture(scope="module")
def quotes(db, data):
    t = db.create_table("quotes", hfq.schemas.TAQ, partition_by=SCHEME,
                        sort_by=("symbol", "time"))
    t.append(data)
    return t


def holders_of(t) -> dict[str, list[str]]:
    return dict(zip(t.partitions()["partition"], t.partitions()["nodes"].to_list()))


def files_on(root: str, table: str) -> set[str]:
    out = set()
    for dirpath, _, files in os.walk(os.path.join(root, table, "data")):
        out |= {os.path.relpath(os.path.join(dirpath, f), root) for f in files}
    return out


def test_every_partition_has_two_copies_on_distinct_nodes(cluster, db, quotes):
    alive = db.session.nodes.alive()
    assert len(alive) == 3
    parts = quotes.partitions()
    assert parts.height == 16
    for path, nodes in holders_of(quotes).items():
        assert len(nodes) == 2 and len(set(nodes)) == 2 and set(nodes) <= set(alive)
        assert nodes == place(path, alive, 2)   # deterministic placement
    # the files really are on those nodes' disks, and only there
    roots = {i.name: i.root for i in db.session.runtime().infos()}
    for path, part in quotes.snapshot().partitions.items():
        for fragment in part.fragments:
            for name, root in roots.items():
                on_disk = os.path.exists(os.path.join(root, fragment.file))
                assert on_disk == (name in fragment.nodes), (path, name)
    assert quotes.verify() == 2 * 16   # every copy checked against size + CRC-32
    # placement spreads the copies: no node holds all 32 or none
    counts = {n: sum(n in v for v in holders_of(quotes).values()) for n in alive}
    assert all(4 <= c <= 16 for c in counts.values()), counts


def test_scans_and_map_reduce_agree_with_polars(db, quotes, data):
    oracle = pl.from_arrow(data)
    assert canonical(quotes.to_arrow()).equals(canonical(data))
    day = quotes.scan(dates="2007-08-02", columns=["symbol", "bid"]).to_pandas()
    assert len(day) == oracle.filter(pl.col("date") == pl.date(2007, 8, 2)).height
    assert quotes.map_reduce(lambda df: df.height, hr.Sum()) == data.num_rows
    mean = quotes.map_reduce(lambda df: hr.Mean().of(df["bid"]), hr.Mean(), columns=["bid"])
    assert mean == pytest.approx(oracle["bid"].mean(), rel=1e-12)
    where = (pl.col("ofr") > pl.col("bid")) & (pl.col("bid") > 0)
    n = quotes.map_reduce(lambda df: df.height, lambda a, b: a + b, where=where,
                          symbols=["IBM", "MSFT"], dates=("2007-08-01", "2007-08-01"))
    expected = oracle.filter((pl.col("ofr") > pl.col("bid")) & (pl.col("bid") > 0)
                             & pl.col("symbol").cast(pl.String).is_in(["IBM", "MSFT"])
                             & (pl.col("date") == pl.date(2007, 8, 1))).height
    assert n == expected > 0
    # a map function returning a DataFrame travels as Arrow and merges with a function
    per_symbol = quotes.map_reduce(
        lambda df: df.group_by("symbol").agg(pl.len().alias("n")).with_columns(
            pl.col("symbol").cast(pl.String)),
        lambda a, b: pl.concat([a, b]).group_by("symbol").agg(pl.col("n").sum()),
        columns=["symbol"])
    want = oracle.group_by(pl.col("symbol").cast(pl.String)).agg(pl.len().alias("n"))
    assert per_symbol.sort("symbol").equals(want.sort("symbol").cast({"n": per_symbol["n"].dtype}))
    # no partitions: the reducer's identity
    assert quotes.map_reduce(lambda df: df.height, hr.Sum(), dates="1999-01-01") == 0


def test_servers_use_the_cpus_they_hold_and_a_node_local_numba_cache(db, quotes):
    def threads(df):
        import os

        import polars
        return {(os.environ.get("HFQ_NODE_ROOT"), polars.thread_pool_size(),
                 os.environ.get("NUMBA_NUM_THREADS"), os.environ.get("NUMBA_CACHE_DIR"))}

    seen = quotes.map_reduce(threads, lambda a, b: a | b, columns=["bid"])
    roots = {i.root for i in db.session.runtime().infos()}
    assert {r for r, *_ in seen} <= roots and len(seen) >= 2
    for root, polars_threads, numba_threads, cache in seen:
        assert polars_threads == 1 and numba_threads == "1"   # 1 CPU per node
        assert cache == os.path.join(root, ".cache", "numba")


def test_repeated_jobs_reuse_decoded_columns_and_give_the_same_answer(db, quotes, data):
    import ray

    def stats():
        runtime = db.session.runtime()
        return [ray.get(runtime.server(n).cache_stats.remote()) for n in db.session.nodes.alive()]

    def job():
        return quotes.map_reduce(lambda df: hr.Sum().of(df["ofr"]), hr.Sum(), columns=["ofr"])

    first = job()
    hits = sum(s["hits"] for s in stats())
    assert job() == first == pytest.approx(float(np.sum(data.column("ofr").to_numpy())))
    # most partitions came from memory (work stealing may send one to its other replica)
    assert sum(s["hits"] for s in stats()) >= hits + 12
    assert all(s["bytes"] <= s["capacity"] for s in stats())


def test_map_function_errors_name_the_partition(quotes):
    def boom(df):
        raise ZeroDivisionError("user bug")

    with pytest.raises(ZeroDivisionError) as info:
        quotes.map_reduce(boom, hr.Sum())
    assert any("while running partition date=" in note for note in info.value.__notes__)


def test_other_nodes_send_files_whose_damaged_copies_are_read_from_a_replica(db, quotes,
                                                                             data):
    """Units held only by other nodes travel as their files' bytes and are verified and
    decoded here (hfq.query.read.ReadTask(encoded=True)): a copy that fails its checksum
    here counts against the node that sent it -- the unit is read from the other holder and
    the copy repaired -- for to_arrow and to_pandas alike; with every copy damaged, the
    error names a node that sent one."""
    import zlib

    from hfq.errors import CorruptPartitionError
    from hfq.query.read import ships_encoded
    here = db.session.nodes.local
    roots = {i.name: i.root for i in db.session.runtime().infos()}
    remote = {p: n for p, n in holders_of(quotes).items() if here not in n}
    assert remote
    def planned(**args):   # what the read of quotes.scan(**args) plans
        return quotes.session.plan_read(quotes.snapshot(), **args)

    scan = planned()
    assert all(ships_encoded(scan.spec, u) for u in scan.plan.units)
    # a point read, a narrow scan or a filter get decoded rows: whole files would cost more
    assert not any(ships_encoded(s.spec, u)
                   for s in (planned(symbols="IBM"), planned(columns=["bid"]),
                             planned(where=pl.col("bid") > 0))
                   for u in s.plan.units)
    fragments = {p: part.fragments for p, part in quotes.snapshot().partitions.items()
                 if p in remote}

    def flip(node: str, fragment) -> None:
        with open(os.path.join(roots[node], fragment.file), "r+b") as fh:
            fh.seek(fragment.batches[-1].span[0] + 40)
            byte = fh.read(1)
            fh.seek(-1, os.SEEK_CUR)
            fh.write(bytes([byte[0] ^ 0x10]))

    def intact(node: str, fragment) -> bool:
        with open(os.path.join(roots[node], fragment.file), "rb") as fh:
            return zlib.crc32(fh.read()) == fragment.crc32

    met = set()
    # each round damages one holder's copy of every such partition: the read picks one holder
    # per partition, so the copy it picked is damaged in one of the two rounds
    for k, read in enumerate((lambda: canonical(quotes.to_arrow()).equals(canonical(data)),
                              lambda: np.array_equal(np.sort(quotes.to_pandas()["bid"]),
                                                     np.sort(data["bid"].to_numpy())))):
        for p, nodes in remote.items():
            for fragment in fragments[p]:
                flip(nodes[k], fragment)
        assert read()
        met |= {p for p, nodes in remote.items()
                if all(intact(nodes[k], f) for f in fragments[p])}   # repaired by the read
        db.repair(["quotes"])
        assert all(intact(n, f) for p, nodes in remote.items() for n in nodes
                   for f in fragments[p])
    assert met, "no read met a damaged copy sent by another node"
    p, nodes = next(iter(remote.items()))
    fragment = fragments[p][0]
    with open(os.path.join(roots[nodes[0]], fragment.file), "rb") as fh:
        good = fh.read()
    for n in nodes:
        flip(n, fragment)
    try:
        with pytest.raises(CorruptPartitionError) as info:
            quotes.to_arrow()
        assert info.value.node in nodes and info.value.file == fragment.file
    finally:
        for n in nodes:   # no intact copy is left to repair from
            with open(os.path.join(roots[n], fragment.file), "wb") as fh:
                fh.write(good)


def test_load_csv_runs_on_the_nodes_in_one_commit(db, tmp_path):
    files = hfq.synth.taq_csv_files(tmp_path, dates=("2007-08-06", "2007-08-07", "2007-08-08"),
                                    rows_per_day=8_000, symbols=30, seed=5)
    t = db.create_table("loaded", hfq.schemas.TAQ, partition_by=SCHEME,
                        sort_by=("symbol", "time"))
    report = t.db.load_csv("loaded", [str(f) for f in files])
    assert report.rows == 24_000 and t.version == 1   # one version for all three files
    oracle = hfq.synth.taq_table(dates=("2007-08-06", "2007-08-07", "2007-08-08"),
                                 rows_per_day=8_000, symbols=30, seed=5)
    assert canonical(t.to_arrow()).equals(canonical(csv_nulls(oracle)))
    # a bad row in one file: an error naming file, line and column; nothing committed or left
    bad = tmp_path / "bad.csv"
    lines = files[0].read_text().splitlines()
    lines[1234] = lines[1234].replace(",", ",x", 1)
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(CsvError, match=r"bad\.csv:1235: column 'date'"):
        db.load_csv("loaded", [str(files[1]), str(bad)], duplicates="append")
    assert t.version == 1
    assert t.vacuum(grace_s=0)["files_removed"] == 0   # the failed load cleaned up after itself
    roots = [i.root for i in db.session.runtime().infos()]
    on_disk = set().union(*(files_on(r, "loaded") for r in roots))
    assert on_disk == {f.file for p in t.snapshot().partitions.values()
                       for f in p.fragments}


_APPENDER = textwrap.dedent("""
    import sys, hfq, pyarrow as pa
    db = hfq.connect(address=sys.argv[1])
    t = db["consistency"]
    base = hfq.synth.taq_table(dates=("2007-08-01",), rows_per_day=3000, symbols=20, seed=1)
    for i in range(1, int(sys.argv[2]) + 1):
        t.append(base.set_column(base.schema.get_field_index("bidsiz"), "bidsiz",
                                 pa.array([i] * base.num_rows, pa.int32())))
    print("appended", i)
""")

_READER = textwrap.dedent("""
    import sys, time, collections, hfq
    db = hfq.connect(address=sys.argv[1])
    t = db["consistency"]
    seen = set()
    deadline = time.time() + 60
    while time.time() < deadline:
        m = t.refresh().snapshot()
        df = t.scan(version=m.version, columns=["bidsiz"]).to_polars()
        counts = collections.Counter(df["bidsiz"].to_list())
        # a consistent snapshot: appends 1..k, each one whole (3000 rows), nothing else
        assert sorted(counts) == list(range(1, len(counts) + 1)), sorted(counts)
        assert set(counts.values()) <= {3000}, counts
        assert len(df) == m.rows
        seen.add(len(counts))
        if len(counts) == int(sys.argv[2]):
            break
    print("versions seen", len(seen))
""")


def test_two_readers_see_consistent_snapshots_while_a_third_process_appends(cluster, db,
                                                                             tmp_path):
    db.create_table("consistency", hfq.schemas.TAQ, partition_by=SCHEME,
                    sort_by=("symbol", "time"))
    env = {**os.environ, "PYTHONPATH": ROOT}
    appends = 8
    procs = [subprocess.Popen([sys.executable, "-c", code, cluster.address, str(appends)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env)
             for code in (_READER, _READER, _APPENDER)]
    outs = [p.communicate(timeout=240) for p in procs]
    for p, (_out, err) in zip(procs, outs):
        assert p.returncode == 0, err[-3000:]
    assert "appended 8" in outs[2][0]
    assert all("versions seen" in o for o, _ in outs[:2])
    assert len(db["consistency"]) == 8 * 3000


def test_rebalance_after_a_node_joins_moves_partitions_and_keeps_answers(cluster, db, quotes,
                                                                        data):
    before = holders_of(quotes)
    total = quotes.map_reduce(lambda df: hr.Sum().of(df["bid"]), hr.Sum(), columns=["bid"])
    cluster.add_node()
    db.session.nodes_for(start=True)
    alive = db.session.nodes.alive()
    assert len(alive) == 4
    # new writes already use the new node set; the old partitions have not moved yet
    assert holders_of(quotes) == before
    moved = db.rebalance(["quotes"])
    assert moved["quotes"] > 0
    after = holders_of(quotes)
    assert all(nodes == place(path, alive, 2) for path, nodes in after.items())
    assert any(after[p] != before[p] for p in after)
    assert any(set(alive) - set().union(*before.values()) & set(v) for v in after.values())
    assert quotes.verify() == 32
    assert canonical(quotes.to_arrow()).equals(canonical(data))
    assert quotes.map_reduce(lambda df: hr.Sum().of(df["bid"]), hr.Sum(),
                             columns=["bid"]) == total
    # the old copies stay for readers of the previous version until vacuum removes them
    old_version = quotes.version - 1
    assert canonical(quotes.scan(version=old_version).to_arrow()).equals(canonical(data))
    roots = {i.name: i.root for i in db.session.runtime().infos()}
    assert quotes.vacuum(keep_versions=1, grace_s=0)["versions_forgotten"] >= 1
    for name, root in roots.items():
        placed = {f.file for p in quotes.snapshot().partitions.values()
                  for f in p.fragments if name in f.nodes}
        assert files_on(root, "quotes") == placed, name
    assert canonical(quotes.to_arrow()).equals(canonical(data))
    # a second rebalance has nothing to do
    assert db.rebalance(["quotes"]) == {"quotes": 0}


_VICTIMS: list = []


def _victims(db, quotes) -> tuple[str, list[str], int, int]:
    """A partition held by two worker nodes (not the head), and those nodes' indexes
    (chosen once, before any node is killed)."""
    if _VICTIMS:
        return _VICTIMS[0]
    head = db.session.runtime().head_name()
    by_name = {i.name: i.root for i in db.session.runtime().infos()}
    for path, nodes in sorted(holders_of(quotes).items()):
        if head not in nodes:
            idx = [cluster_index(by_name[n]) for n in nodes]
            _VICTIMS.append((path, nodes, idx[0], idx[1]))
            return _VICTIMS[0]
    pytest.fail("placement put every partition on the head node")


def cluster_index(root: str) -> int:
    return int(os.path.basename(root).removeprefix("node"))


def test_node_killed_mid_job_gives_the_same_answer(cluster, db, quotes, data):
    def slow_sum(df):
        time.sleep(0.15)
        return hr.Sum().of(df["bid"])

    expected = quotes.map_reduce(slow_sum, hr.Sum(), columns=["bid"])
    assert expected == pytest.approx(float(np.sum(data.column("bid").to_numpy())), rel=1e-12)
    _, _, first, _ = _victims(db, quotes)
    killer = threading.Timer(0.3, cluster.kill_node, args=(first,))
    killer.start()
    started = time.perf_counter()
    got = quotes.map_reduce(slow_sum, hr.Sum(), columns=["bid"])
    killer.join()
    assert time.perf_counter() - started > 0.3   # the kill happened while the job ran
    assert got == expected   # bit for bit: partial results merge in partition order
    # raw reads fail over too
    assert canonical(quotes.to_arrow()).equals(canonical(data))


def test_all_copies_lost_is_a_clear_error_never_a_partial_result(cluster, db, quotes):
    path, nodes, first, second = _victims(db, quotes)
    if cluster.nodes[second] is not None:
        cluster.kill_node(second)
    with pytest.raises(PartitionUnavailableError) as info:
        quotes.map_reduce(lambda df: df.height, hr.Sum())
    # Ray may report a killed node alive for a while: the error names every partition known
    # to be lost when it is raised -- always some of those whose copies were all killed
    lost = {p for p, n in holders_of(quotes).items() if set(n) <= set(nodes)}
    assert path in lost
    assert info.value.partitions and set(info.value.partitions) <= lost
    assert all(p in str(info.value) for p in info.value.partitions)
    with pytest.raises(PartitionUnavailableError):
        quotes.to_arrow()
    # partitions that do survive can still be read
    survivors = [p for p, n in holders_of(quotes).items() if set(n) - set(nodes)]
    assert survivors
