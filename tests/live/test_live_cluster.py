"""Live data on a local 3-node cluster with 2 replicas (issue 26 items 1, 2, 7).

* a batch is logged on both replica nodes of each partition it touches before ``publish``
  returns; scan, query and SQL read live + history where they are (oracle: polars);
* a node server killed (``ray.kill``, as ``kill -9``): a new connection starts a new server,
  which replays the node's log -- nothing lost, nothing twice;
* a node killed: its live rows are served by the other copy, publishing goes on to live
  nodes, subscribers get every row; a write-down works on what is left.

Tests run in file order and share the cluster; the node kill comes last.
"""

from __future__ import annotations

import polars as pl
import pytest
import ray

import hfq
from conftest import canonical
from hfq.live.cut import live_spec
from hfq.live.node import log_batch, report

pytestmark = pytest.mark.timeout(600)

SCHEME = hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 6))
DAY = "2024-01-02"


@pytest.fixture(scope="module")
def cluster():
    from hfq.testing import local_cluster
    with local_cluster(nodes=3, cpus_per_node=1, object_store_mb=100) as c:
        yield c


@pytest.fixture(scope="module")
def db(cluster):
    return cluster.connect(cache_bytes=0)


@pytest.fixture(scope="module")
def sent() -> list:
    ticks = hfq.synth.taq_table(dates=(DAY,), rows_per_day=3000, symbols=30, seed=12)
    ticks = ticks.sort_by("time")
    return [ticks.slice(i * 300, 300) for i in range(10)]


def held_rows(db, t) -> dict[str, int]:
    """Live rows each node holds (every replica's copy counted)."""
    spec = live_spec(db.session, t.snapshot())
    got = db.session.nodes.call_each(report, spec, None, {}, t.version)
    return {n: sum(p["rows"] for p in r["parts"].values()) for n, r in got.items()}


def oracle(batches) -> pl.DataFrame:
    return canonical(pl.concat([pl.from_arrow(b) for b in batches]))


def test_a_batch_is_on_both_replicas_and_read_with_history(db, sent):
    t = db.create_table("q", hfq.schemas.TAQ, partition_by=SCHEME, sort_by=("symbol", "time"),
                        replicas=2)
    history = hfq.synth.taq_table(dates=("2024-01-01",), rows_per_day=1000, symbols=30)
    t.append(history)
    pub = t.publisher(name="feed")
    for b in sent[:6]:
        pub.publish(b)
    held = held_rows(db, t)
    assert len(held) == 3 and sum(held.values()) == 2 * 6 * 300   # two copies of each row
    want = oracle([history, *sent[:6]])
    assert canonical(t.scan().to_arrow()).equals(want)
    n = db.sql("SELECT symbol, count(*) AS n FROM q GROUP BY symbol").collect()
    assert n["n"].sum() == want.height
    got = t.query(symbols=["IBM", "MSFT"]).group_by("date").agg(pl.len()).sort("date") \
        .collect()
    assert got["len"].sum() == want.filter(pl.col("symbol").is_in(["IBM", "MSFT"])).height


def test_a_killed_node_server_is_replaced_and_replays_its_log(cluster, db, sent):
    t = db["q"]
    victim = next(n for n in db.session.nodes.alive() if n != db.session.nodes.local)
    ray.kill(db.session.runtime().server(victim), no_restart=True)
    again = cluster.connect(cache_bytes=0)           # a new connection: a new server
    assert victim in again.session.nodes.alive()
    assert canonical(again["q"].scan().to_arrow()).equals(
        oracle([hfq.synth.taq_table(dates=("2024-01-01",), rows_per_day=1000, symbols=30),
                *sent[:6]]))
    assert held_rows(again, again["q"])[victim] > 0   # replayed from its disk
    pub = again["q"].publisher(name="feed")
    assert pub.seq == 6
    pub.publish(sent[6])
    assert again["q"].scan().count() == 1000 + 7 * 300
    # the first connection still counts that server as dead: it reads that node's rows
    # from the other copies, every batch included
    assert t.refresh().scan().count() == 1000 + 7 * 300


def test_a_batch_logged_on_one_replica_is_not_visible_until_a_restarted_publisher_completes_it(
        db, sent, monkeypatch):
    """A publisher dying between its two nodes' logs (the call to the second never made):
    the batch was not acknowledged, so no query sees it (``snapshot.visible``); the publisher
    started again under its name finds it on one node and completes it on the other, and
    then it is visible once -- two copies held, one row each read."""
    t = db.create_table("half", hfq.schemas.TAQ, partition_by=hfq.Value("date"), replicas=2)
    pub = t.publisher(name="feed")
    pub.publish(sent[0])
    nodes = db.session.nodes
    real = nodes.call_each

    def first_node_only(fn, *args, names=None, **kw):
        if fn is not log_batch:
            return real(fn, *args, names=names, **kw)
        real(fn, *args, names=list(names)[:1], **kw)
        raise RuntimeError("the publisher died here")

    monkeypatch.setattr(nodes, "call_each", first_node_only)
    with pytest.raises(RuntimeError, match="died here"):
        pub.publish(sent[1])
    monkeypatch.undo()
    assert sum(held_rows(db, t).values()) == 2 * 300 + 300    # batch 2 on one node only
    assert t.scan().count() == 300                            # ... and not visible
    assert db.sql("SELECT count(*) AS n FROM half").collect()["n"][0] == 300
    again = t.publisher(name="feed")
    assert again.seq == 2
    assert sum(held_rows(db, t).values()) == 2 * 600          # completed on the other node
    assert canonical(t.scan().to_arrow()).equals(oracle(sent[:2]))


def test_a_dead_nodes_live_rows_are_served_by_the_other_copy(cluster, db, sent):
    again = cluster.connect(cache_bytes=0)
    t = again["q"]
    sub = t.subscribe(start="sod", wait_s=0)
    cluster.kill_node(2)
    db2 = cluster.connect(cache_bytes=0)
    t2 = db2["q"]
    want = oracle([hfq.synth.taq_table(dates=("2024-01-01",), rows_per_day=1000, symbols=30),
                   *sent[:7]])
    assert canonical(t2.scan().to_arrow()).equals(want)     # history has 2 copies too
    assert len(db2.session.nodes.alive()) == 2              # the dead one found out
    pub = t2.publisher(name="feed")
    assert pub.seq == 7
    for b in sent[7:]:
        pub.publish(b)                                      # to the nodes alive
    want = oracle([hfq.synth.taq_table(dates=("2024-01-01",), rows_per_day=1000, symbols=30),
                   *sent])
    assert canonical(t2.scan().to_arrow()).equals(want)
    rows = 0
    while (b := sub.poll()) is not None:
        rows += b.num_rows
    assert rows == 10 * 300 and sub.offset == {"feed": 10}
    done = t2.write_down(DAY)
    assert done.rows == 10 * 300
    assert canonical(t2.scan().to_arrow()).equals(want)
