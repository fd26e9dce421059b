"""End of day (issue 26 item 5): ``write_down`` through the one write operator, atomically.

* every row once, before and after, on every read path (oracle: polars over the ticks);
* a query planned before the write-down and held at a fault point while it commits still
  sees each row once (its version's cut, the rows kept ``live_grace_s``);
* the log is truncated only after the commit (segments go once every entry is written down);
* rows published for the day after the write-down stay live and a second write-down takes
  them; two write-downs of one day at once: the second is a conflict;
* the automatic policy writes down the older days when a new day starts.

Ray-free (embedded).
"""

from __future__ import annotations

import os
import pathlib

import polars as pl
import pytest

import hfq
from conftest import canonical, in_thread
from hfq import faults
from hfq.errors import CommitConflictError
from hfq.live import writedown
from hfq.live.cut import cut_of
from hfq.live.log import read_frames

SCHEME = hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 4))


def make(tmp_path, **settings):
    db = hfq.connect(str(tmp_path / "db"), **settings)
    t = db.create_table("q", hfq.schemas.TAQ, partition_by=SCHEME, sort_by=("symbol", "time"))
    return db, t


def ticks(days=("2024-01-02", "2024-01-03"), rows=800, seed=5):
    return hfq.synth.taq_table(dates=days, rows_per_day=rows, symbols=10, seed=seed)


def segments(db) -> list[str]:
    """The log segments of table q that hold frames (a writer's new segment holds none)."""
    root = pathlib.Path(db.session.store.root) / "q" / "_live"
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.seg")
                  if list(read_frames(str(p))))


def test_write_down_moves_a_day_into_files_and_every_row_is_seen_once(tmp_path):
    db, t = make(tmp_path, live_grace_s=0)
    pub = t.publisher(name="feed")
    live = ticks()
    for start in range(0, live.num_rows, 300):
        pub.publish(live.slice(start, 300))
    before = canonical(t.scan().to_arrow())
    done = t.write_down("2024-01-02")
    assert (done.date, done.rows, done.partitions) == ("2024-01-02", 800, 4)
    assert len(t) == 800                                     # in the files now
    assert cut_of(t.snapshot()) == {"2024-01-02": {"feed": pub.seq}}
    assert canonical(t.scan().to_arrow()).equals(before)    # and not live any more
    assert db.sql("SELECT count(*) AS n FROM q").collect()["n"][0] == live.num_rows
    stored = t.scan(version=done.version).to_polars()       # the files alone
    want = pl.from_arrow(live).filter(pl.col("date").cast(pl.String) == "2024-01-02")
    assert canonical(stored).equals(canonical(want))
    again = t.write_down("2024-01-02")                     # nothing new: nothing written
    assert again.rows == 0 and len(t) == 800
    t.write_down("2024-01-03")
    assert len(t) == live.num_rows and canonical(t.scan().to_arrow()).equals(before)
    assert segments(db) == [], "every entry written down: the log is truncated"


def test_the_log_is_truncated_only_after_the_commit(tmp_path):
    """A write-down that fails at its commit leaves the log whole (the planted bug
    'truncated before the commit' loses these rows)."""
    db, t = make(tmp_path, live_grace_s=0)
    pub = t.publisher(name="feed")
    live = ticks(days=("2024-01-02",), rows=300)
    pub.publish(live)
    held = segments(db)
    faults.arm("catalog.commit.before_publish", "raise")
    try:
        with pytest.raises(faults.FaultInjected):
            t.write_down("2024-01-02")
    finally:
        faults.disarm()
    assert segments(db) == held and len(t.refresh()) == 0
    hfq.runtime.services.close_services(db.session.nodes.local, db.session.store.root)
    fresh = hfq.connect(str(tmp_path / "db"))["q"]
    assert canonical(fresh.scan().to_arrow()).equals(canonical(live))


def test_a_query_planned_before_the_write_down_sees_each_row_once(tmp_path):
    gate = tmp_path / "gate"
    db, t = make(tmp_path, live_grace_s=3600)
    pub = t.publisher(name="feed")
    live = ticks(rows=500)
    pub.publish(live)
    q = t.query().group_by("date").agg(n=pl.len()).sort("date")
    faults.arm("engine.node.before_stage", f"pause:{gate}")
    try:
        thread, box = in_thread(q.collect)
        while not os.path.exists(f"{gate}.reached"):
            thread.join(0.01)
        faults.disarm("engine.node.before_stage")
        t.write_down("2024-01-02")           # commits while the query is held
        gate.touch()
        thread.join()
    finally:
        faults.disarm()
    assert "error" not in box, box.get("error")
    assert box["value"]["n"].to_list() == [500, 500]
    assert t.query().group_by("date").agg(n=pl.len()).sort("date").collect()["n"] \
        .to_list() == [500, 500]


def test_rows_dropped_after_the_grace_a_stale_version_is_told_to_run_again(tmp_path):
    db, t = make(tmp_path, live_grace_s=0)
    pub = t.publisher(name="feed")
    pub.publish(ticks(rows=200))
    stale = t.query().group_by("date").agg(n=pl.len())   # planned at the old version
    stale.collect()
    t.write_down("2024-01-02")
    with pytest.raises(hfq.live.LiveSnapshotExpiredError, match="run the query again"):
        _replan(stale).collect()
    assert t.scan().count() == 400


def _replan(q):
    """The same query, planned again at its own (old) version."""
    return type(q)(q.source, q.ops, q.schema)


def test_rows_published_after_the_write_down_stay_live_until_the_next(tmp_path):
    db, t = make(tmp_path, live_grace_s=0)
    pub = t.publisher(name="feed")
    first, late = ticks(rows=400, seed=1), ticks(days=("2024-01-02",), rows=50, seed=2)
    pub.publish(first)
    t.write_down("2024-01-02")
    pub.publish(late)                         # a late tick of a day written down
    every = pl.concat([pl.from_arrow(first), pl.from_arrow(late)])
    assert canonical(t.scan().to_arrow()).equals(canonical(every))
    assert t.write_down("2024-01-02").rows == 50
    assert len(t) == 450 and canonical(t.scan().to_arrow()).equals(canonical(every))


def test_two_write_downs_of_one_day_at_once_the_second_is_a_conflict(tmp_path):
    gate = tmp_path / "gate"
    db, t = make(tmp_path, live_grace_s=3600)
    t.publisher(name="feed").publish(ticks(rows=300))
    faults.arm("live.writedown.before_commit", f"pause:{gate}")
    try:
        thread, box = in_thread(lambda: writedown.write_down(t, "2024-01-02"))
        while not os.path.exists(f"{gate}.reached"):
            thread.join(0.01)
        faults.disarm("live.writedown.before_commit")
        other = hfq.connect(str(tmp_path / "db"))["q"]
        assert other.write_down("2024-01-02").rows == 300
        gate.touch()
        thread.join()
    finally:
        faults.disarm()
    assert isinstance(box.get("error"), CommitConflictError)
    assert len(t.refresh()) == 300 and t.scan().count() == 600


def test_the_automatic_policy_writes_down_older_days(tmp_path):
    db, t = make(tmp_path, live_grace_s=0)
    pub = t.publisher(name="feed", write_down=True)
    pub.publish(ticks(days=("2024-01-02",), rows=300))
    pub.publish(ticks(days=("2024-01-03",), rows=200, seed=8))
    policy = pub.on_new_day.__self__   # the AutoWriteDown behind the publisher
    policy.wait()
    assert policy.error is None
    assert [d.date for d in policy.done] == ["2024-01-02"]
    assert len(t.refresh()) == 300 and t.scan().count() == 500
    assert writedown.live_days(t) == ["2024-01-03"]
