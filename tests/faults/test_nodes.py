"""Replicas and dead nodes on one local 2-node cluster (a 3rd node joins, then dies).

* a damaged copy gives the right answer from the good one, and is repaired;
* ``db.repair()`` / ``hfq repair`` fix every damaged or missing copy and say what they did;
  the fault point ``repair.copy.before_swap`` leaves the bad copy whole, never half-replaced;
* ``rebalance()`` with no node change moves nothing, even for a table placed off placement;
* a node killed during a rebalance (fault point ``rebalance.copy.before_commit``) and right
  before verify / vacuum / reads / append: clean errors or success, never a raw Ray error; the
  next ``rebalance()`` restores every partition's replicas on live nodes;
* a node killed (or frozen: a machine that hangs) right before a ``rebalance()`` -- still on
  Ray's list of live nodes, which takes 10-30 s to notice -- does not answer the rebalance's
  ping: it counts as down, every partition gets two live copies on the others, and the result
  names it.  Nothing here waits for Ray to notice a death: ``kill_node`` stops the node's
  workers too, and maintenance calls ping the servers themselves.

Tests run in file order and share the cluster: the node-loss test and the command line (a
second driver process) come last.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import zlib

import pytest
from faultkit import ROOT, canonical, in_thread

import hfq
from hfq import faults
from hfq import reduce as hr
from hfq.errors import CorruptPartitionError, HfqError, NodeUnavailableError
from hfq.runtime.placement import place
from hfq.write import Write

pytestmark = pytest.mark.timeout(300)

DAYS = ("2007-08-01", "2007-08-02")
SCHEME = hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 2))


@pytest.fixture(scope="module")
def cluster():
    from hfq.testing import local_cluster
    with local_cluster(nodes=2, cpus_per_node=1, object_store_mb=100) as c:
        yield c


@pytest.fixture(scope="module")
def db(cluster):
    return cluster.connect(cache_bytes=0, batch_rows=500)   # every read reads the files


@pytest.fixture(scope="module")
def data():
    return hfq.synth.taq_table(dates=DAYS, rows_per_day=3000, symbols=20, seed=11)


@pytest.fixture(scope="module")
def quotes(db, data):
    t = db.create_table("quotes", hfq.schemas.TAQ, partition_by=SCHEME,
                        sort_by=("symbol", "time"), replicas=2)
    t.append(data)
    return t


def roots(db) -> dict[str, str]:
    return {i.name: i.root for i in db.session.runtime().infos()}


def damage(db, fragment, node: str, *, at: int | None = None) -> bytes:
    """Flip one bit of ``node``'s copy (inside record batch 1); returns the good bytes."""
    path = os.path.join(roots(db)[node], fragment.file)
    with open(path, "rb") as f:
        good = f.read()
    data = bytearray(good)
    data[at if at is not None else fragment.batches[1].span[0] + 40] ^= 0x10
    with open(path, "wb") as f:
        f.write(bytes(data))
    return good


def intact(db, fragment, node: str) -> bool:
    path = os.path.join(roots(db)[node], fragment.file)
    if not os.path.exists(path):
        return False
    with open(path, "rb") as f:
        return zlib.crc32(f.read()) == fragment.crc32


def total_bid(t) -> float:
    return t.map_reduce(lambda df: hr.Sum().of(df["bid"]), hr.Sum(), columns=["bid"])


def add_node(cluster, db) -> tuple[int, str]:
    """Start one more node; its index in the cluster and its hfq node name."""
    index = cluster.add_node()
    db.session.nodes_for(start=True)
    assert len(db.session.nodes.alive()) == 3
    return index, next(i.name for i in db.session.runtime().infos()
                       if i.root == cluster.roots[index])


def a_worker_holding_files(cluster, db, quotes) -> tuple[int, str]:
    """Add a node, rebalance onto it; a node other than the driver's holding files of quotes
    (the new one, unless placement gave it none): its index in the cluster and its name."""
    _, joined = add_node(cluster, db)
    db.rebalance(["quotes"])
    held = holders(quotes.refresh())
    victim = joined if joined in held else next(n for n in sorted(held)
                                                if n not in (db.session.nodes.local, joined))
    return cluster.roots.index(db.session.runtime().info(victim).root), victim


def assert_two_live_copies(db, quotes, alive: set[str], rows) -> None:
    """Every partition of quotes on two of the ``alive`` nodes, intact; the same rows."""
    for fragment in quotes.refresh().snapshot().fragments():
        assert len(set(fragment.nodes)) == 2 and set(fragment.nodes) <= alive, fragment.nodes
        assert all(intact(db, fragment, n) for n in fragment.nodes)
    assert canonical(quotes.to_arrow()).equals(rows)


def holders(t) -> set[str]:
    """Every node holding some file of ``t``'s version."""
    return {n for f in t.snapshot().fragments() for n in f.nodes}


def test_every_partition_is_on_both_nodes(db, quotes):
    alive = db.session.nodes.alive()
    assert len(alive) == 2
    for fragment in quotes.snapshot().fragments():
        assert sorted(fragment.nodes) == sorted(alive)
        assert all(intact(db, fragment, n) for n in alive)


def test_a_damaged_copy_here_is_read_from_the_other_node_and_repaired(db, quotes, data):
    here = db.session.nodes.local
    assert here is not None   # the driver runs on the head node and maps its files
    fragments = list(quotes.snapshot().fragments())
    for fragment in fragments:
        damage(db, fragment, here)
    assert canonical(quotes.to_arrow()).equals(canonical(data))
    assert all(intact(db, f, here) for f in fragments)   # repaired by the read


def test_damaged_copies_on_either_node_give_the_right_map_reduce(db, quotes, data):
    want = total_bid(quotes)
    assert want == pytest.approx(float(data.column("bid").to_numpy().sum()), rel=1e-12)
    fragments = list(quotes.snapshot().fragments())
    other = next(n for n in db.session.nodes.alive() if n != db.session.nodes.local)
    for i, fragment in enumerate(fragments):   # each partition damaged on one node
        damage(db, fragment, other if i % 2 else db.session.nodes.local)
    assert total_bid(quotes) == want
    # copies the job met were repaired on the way; repair() finds the others
    rows = db.repair(["quotes"])
    assert all(r["action"].startswith("repaired from") for r in rows), rows
    assert all(intact(db, f, n) for f in fragments for n in db.session.nodes.alive())
    assert db.repair(["quotes"]) == []
    assert quotes.verify() == 2 * len(fragments)


def test_every_copy_damaged_is_a_named_error(db, quotes):
    fragment = next(iter(quotes.snapshot().fragments()))
    goods = {n: damage(db, fragment, n) for n in db.session.nodes.alive()}
    try:
        with pytest.raises(CorruptPartitionError) as info:
            quotes.to_arrow()
        assert info.value.file == fragment.file and fragment.file in str(info.value)
        rows = db.repair(["quotes"])
        assert len(rows) == 2 and all(r["action"].startswith("not repaired") for r in rows)
    finally:
        for node, good in goods.items():
            with open(os.path.join(roots(db)[node], fragment.file), "wb") as f:
                f.write(good)
    assert db.repair(["quotes"]) == []


def test_repair_replaces_damaged_and_missing_copies_and_reports_them(db, quotes, data):
    a, b = list(quotes.snapshot().fragments())[:2]
    other = next(n for n in db.session.nodes.alive() if n != db.session.nodes.local)
    damage(db, a, other)
    os.remove(os.path.join(roots(db)[db.session.nodes.local], b.file))
    with pytest.raises(CorruptPartitionError, match="2 bad file copies"):
        quotes.verify()
    rows = {(r["file"], r["node"]): r for r in db.repair()}
    assert set(rows) == {(a.file, other), (b.file, db.session.nodes.local)}
    assert rows[(b.file, db.session.nodes.local)]["problem"] == "missing"
    assert rows[(a.file, other)]["action"] == f"repaired from {db.session.nodes.local}"
    assert rows[(a.file, other)]["partition"] in a.file
    assert intact(db, a, other) and intact(db, b, db.session.nodes.local)
    assert canonical(quotes.to_arrow()).equals(canonical(data))


def test_a_repair_stopped_before_the_swap_leaves_the_bad_copy_whole(db, quotes):
    fragment = next(iter(quotes.snapshot().fragments()))
    here = db.session.nodes.local   # its repair runs in this process: the point is armed here
    damage(db, fragment, here)
    path = os.path.join(roots(db)[here], fragment.file)
    with open(path, "rb") as f:
        bad = f.read()
    faults.arm("repair.copy.before_swap", "raise")
    try:
        with pytest.raises(faults.FaultInjected):
            db.repair(["quotes"])
    finally:
        faults.disarm()
    with open(path, "rb") as f:
        assert f.read() == bad   # untouched: not half-written, not removed
    assert not [n for n in os.listdir(os.path.dirname(path)) if n.startswith(".tmp~")]
    assert [r["node"] for r in db.repair(["quotes"])] == [here]
    assert intact(db, fragment, here)


def test_rebalance_with_no_node_change_moves_nothing(db, quotes, data):
    moved = db.rebalance(["quotes"])
    assert moved == {"quotes": 0} and moved.unreachable == ()
    # a table whose partitions sit off placement (as minute bars sit next to their source)
    t = db.create_table("offplace", hfq.schemas.TAQ, partition_by=SCHEME,
                        sort_by=("symbol", "time"), replicas=1)
    t.append(data)
    alive = db.session.nodes.alive()
    m = t.snapshot()
    # every partition on one node, away from the first one's placement: the other node holds
    # nothing of this table (though it holds quotes), and must not be taken for one that joined
    away = next(n for n in alive if n not in place(next(iter(m.partitions)), alive, 1))
    with Write(db.session, m) as write:
        copies: dict = {}
        for part in m.partitions.values():
            for f in part.fragments:
                if away not in f.nodes:
                    copies.setdefault(away, []).append((f, list(f.nodes)))
                    write.move(f.file, [away])
        db.session.nodes.copy(copies)
        write.commit("move off placement")
    holders = {p: t.refresh().partitions().filter(
        t.partitions()["partition"] == p)["nodes"].to_list()[0] for p in m.partitions}
    assert db.rebalance() == {"quotes": 0, "offplace": 0}
    assert {p: n for p, n in zip(t.refresh().partitions()["partition"],
                                 t.partitions()["nodes"].to_list())} == holders
    assert canonical(t.to_arrow()).equals(canonical(data))


def test_a_node_killed_mid_rebalance_then_maintenance_then_replicas_restored(
        cluster, db, quotes, data, tmp_path):
    want = total_bid(quotes)
    index, victim = add_node(cluster, db)
    gate = str(tmp_path / "gate")
    faults.arm("rebalance.copy.before_commit", f"pause:{gate}")
    worker, outcome = in_thread(lambda: db.rebalance(["quotes"]))
    deadline = time.monotonic() + 120
    while not os.path.exists(gate + ".reached") and worker.is_alive():
        assert time.monotonic() < deadline, "rebalance never reached its commit"
        time.sleep(0.05)
    cluster.kill_node(index)   # copies are made on it, the move not yet committed
    open(gate, "w").close()
    held_before = holders(quotes.refresh())
    worker.join(120)
    faults.disarm()
    assert "error" not in outcome or isinstance(outcome["error"], HfqError), outcome
    # right after the death, before anything noticed it: clean answers, never raw Ray errors
    assert canonical(quotes.refresh().to_arrow()).equals(canonical(data))
    assert quotes.verify() <= 2 * len(quotes.snapshot().partitions)
    assert isinstance(quotes.vacuum(), dict)
    assert total_bid(quotes) == want
    try:
        quotes.append(data.slice(0, 10))
        quotes.refresh()
        appended = 10
    except NodeUnavailableError as exc:
        assert exc.nodes, exc
        appended = 0
    # the next rebalance puts every partition back on two live nodes, whether Ray noticed
    # the death yet or not (the dead node does not answer its ping)
    moved = db.rebalance(["quotes"])
    alive = set(db.session.nodes.alive())
    assert len(alive) == 2 and victim not in alive
    assert moved.unreachable == (victim,) or victim not in held_before, (moved, victim)
    for fragment in quotes.refresh().snapshot().fragments():
        assert len(set(fragment.nodes)) == 2 and set(fragment.nodes) <= alive, fragment.nodes
        assert all(intact(db, fragment, n) for n in fragment.nodes)
    assert len(quotes) == data.num_rows + appended
    assert quotes.verify() == 2 * len(list(quotes.snapshot().fragments()))


def test_a_node_killed_then_rebalance_at_once_counts_it_down_and_restores_two_copies(
        cluster, db, quotes):
    index, victim = a_worker_holding_files(cluster, db, quotes)
    rows = canonical(quotes.to_arrow())
    others = set(db.session.nodes.alive()) - {victim}
    cluster.kill_node(index)
    moved = db.rebalance(["quotes"])   # at once: Ray still lists the node as alive
    assert moved.unreachable == (victim,), moved
    assert moved["quotes"] > 0 and set(db.session.nodes.alive()) == others
    assert_two_live_copies(db, quotes, others, rows)
    checked = quotes.verify()
    assert checked == 2 * len(list(quotes.snapshot().fragments())) and not checked.unreachable


def test_a_frozen_node_does_not_answer_its_ping_and_counts_as_down(cluster, db, quotes):
    """A machine that hangs: every process of the node stopped, nothing answers, Ray lists
    it as alive until its health checks give up."""
    index, victim = a_worker_holding_files(cluster, db, quotes)
    rows = canonical(quotes.to_arrow())
    others = set(db.session.nodes.alive()) - {victim}
    cluster.freeze_node(index)
    try:
        moved = db.rebalance(["quotes"])
        assert moved.unreachable == (victim,) and moved["quotes"] > 0, moved
        assert set(db.session.nodes.alive()) == others   # left out until it answers
        assert_two_live_copies(db, quotes, others, rows)
        repairs = db.repair(["quotes"])   # asked again: still silent, and named
        assert repairs == [] and repairs.unreachable == (victim,)
    finally:
        cluster.kill_node(index)


# last: a new driver process may restart the servers when the hfq source changed meanwhile
def test_hfq_repair_through_the_command_line(cluster, db, quotes):
    fragment = next(iter(quotes.snapshot().fragments()))
    other = next(n for n in db.session.nodes.alive() if n != db.session.nodes.local)
    damage(db, fragment, other)
    env = {**os.environ, "PYTHONPATH": ROOT}
    run = subprocess.run([sys.executable, "-m", "hfq.cli", "repair", "quotes", "--address",
                          cluster.address, "--json"], capture_output=True, text=True,
                         env=env, timeout=240)
    assert run.returncode == 0, run.stderr[-2000:]
    out = json.loads(run.stdout)
    assert out["repaired"] == 1 and out["not_repaired"] == 0
    assert out["copies"][0]["file"] == fragment.file and out["copies"][0]["node"] == other
    assert intact(db, fragment, other)
    unknown = subprocess.run([sys.executable, "-m", "hfq.cli", "repair", "nosuch",
                              "--address", cluster.address], capture_output=True, text=True,
                             env=env, timeout=240)
    assert unknown.returncode == 1 and "Traceback" not in unknown.stderr
    assert unknown.stderr.strip().splitlines()[-1].startswith("hfq: error: no table 'nosuch'")
