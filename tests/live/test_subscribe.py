"""Subscribing (issue 26 item 3): every row once, per symbol in publication order, resumable
from an offset after the subscriber's own crash, bounded buffers.

Oracle: the published batches themselves (polars).  Ray-free (embedded); the subscriber
killed in a process of its own is in ``test_crash.py``.
"""

from __future__ import annotations

import polars as pl
import pyarrow as pa
import pytest

import hfq
from conftest import canonical
from hfq.live import SubscriberLagError, parse_offset

SCHEME = hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 4))


def make(tmp_path, **settings):
    db = hfq.connect(str(tmp_path / "db"), **settings)
    t = db.create_table("q", hfq.schemas.TAQ, partition_by=SCHEME, sort_by=("symbol", "time"))
    return db, t


def batches(n=12, rows=100, seed=7) -> list[pa.Table]:
    """Time-ordered ticks cut into ``n`` batches (each symbol's rows in publication order)."""
    ticks = hfq.synth.taq_table(dates=("2024-01-02",), rows_per_day=n * rows, symbols=8,
                                seed=seed).sort_by("time")
    return [ticks.slice(i * rows, rows) for i in range(n)]


def drain(sub) -> list[pa.RecordBatch]:
    out = []
    while (b := sub.poll()) is not None:
        out.append(b)
    return out


def frame(got) -> pl.DataFrame:
    return pl.concat([pl.from_arrow(pa.Table.from_batches([b])) for b in got]) if got else \
        pl.DataFrame()


def test_every_row_once_per_symbol_in_publication_order(tmp_path):
    db, t = make(tmp_path)
    pub, sent = t.publisher(name="feed"), batches()
    sub = t.subscribe(start="sod", max_rows=150, wait_s=0)
    for b in sent[:5]:
        pub.publish(b)
    got = drain(sub)
    for b in sent[5:]:
        pub.publish(b)
    got += drain(sub)
    want = pl.concat([pl.from_arrow(b) for b in sent])
    seen = frame(got)
    assert canonical(seen).equals(canonical(want))
    for sym in want["symbol"].unique().to_list():   # each symbol: the order it was published
        mine = seen.filter(pl.col("symbol").cast(pl.String) == sym)
        theirs = want.filter(pl.col("symbol").cast(pl.String) == sym)
        assert mine.select("time", "bid").equals(theirs.select("time", "bid"))
    assert sub.offset == {"feed": len(sent)}
    assert [int(b.schema.metadata[b"hfq.seq"]) for b in got] == list(range(1, len(sent) + 1))


def test_a_subscriber_resumes_from_its_offset_and_gets_every_row_exactly_once(tmp_path):
    """The subscriber keeps ``sub.offset`` with each batch it handles; it stops (a crash
    after handling k batches) and a new subscription from the offset it kept gets the rest:
    together, every row once (the planted 'offset off by one' fails here)."""
    db, t = make(tmp_path)
    pub, sent = t.publisher(name="feed"), batches()
    for b in sent:
        pub.publish(b)
    for k in (1, 4, 11):
        first = t.subscribe(start="sod", wait_s=0)
        handled, kept = [], None
        for _ in range(k):
            handled.append(first.poll())
            kept = first.offset                 # stored with what was done with the batch
        rest = drain(t.subscribe(start=kept, wait_s=0))
        assert len(handled) + len(rest) == len(sent)
        assert canonical(frame(handled + rest)).equals(
            canonical(pl.concat([pl.from_arrow(b) for b in sent])))
    text = "feed:3"
    assert parse_offset(text) == {"feed": 3}
    assert frame(drain(t.subscribe(start=text, wait_s=0))).height == \
        sum(b.num_rows for b in sent[3:])


def test_symbols_now_and_columns(tmp_path):
    db, t = make(tmp_path)
    pub, sent = t.publisher(name="feed"), batches()
    pub.publish(sent[0])
    now = t.subscribe(symbols=["IBM", "MSFT"], start="now", columns=["symbol", "bid"],
                      wait_s=0)
    for b in sent[1:]:
        pub.publish(b)
    got = frame(drain(now))
    want = pl.concat([pl.from_arrow(b) for b in sent[1:]]).filter(
        pl.col("symbol").cast(pl.String).is_in(["IBM", "MSFT"])).select("symbol", "bid")
    assert got.columns == ["symbol", "bid"]
    assert canonical(got).equals(canonical(want))
    assert now.offset == {"feed": len(sent)}


def test_buffers_are_bounded_and_a_slow_subscriber_misses_nothing(tmp_path):
    db, t = make(tmp_path)
    pub, sent = t.publisher(name="feed"), batches(n=40, rows=50)
    sub = t.subscribe(start="sod", max_rows=120, wait_s=0)
    for b in sent:                               # the subscriber does not read meanwhile
        pub.publish(b)
    polls = []
    while True:
        sub._fill()
        got = [b for _, _, b in sub._ready if b is not None]
        if not sub._ready:
            break
        polls.append(sum(b.num_rows for b in got))
        while sub._ready:
            sub.poll()
    assert max(polls) <= 120 + 50, polls          # about max_rows a poll, whatever the lag
    assert sum(polls) == 40 * 50 and sub.offset == {"feed": 40}


def test_two_publishers_each_in_its_order(tmp_path):
    db, t = make(tmp_path)
    a, b = t.publisher(name="a"), t.publisher(name="b")
    sent = batches(n=10)
    for i, batch in enumerate(sent):
        (a if i % 2 else b).publish(batch)
    got = drain(t.subscribe(start="sod", wait_s=0))
    order = [(b.schema.metadata[b"hfq.publisher"].decode(),
              int(b.schema.metadata[b"hfq.seq"])) for b in got]
    assert [s for p, s in order if p == "a"] == [1, 2, 3, 4, 5]
    assert [s for p, s in order if p == "b"] == [1, 2, 3, 4, 5]
    assert canonical(frame(got)).equals(canonical(pl.concat([pl.from_arrow(x)
                                                             for x in sent])))


def test_an_offset_behind_a_dropped_write_down_is_a_lag_error(tmp_path):
    db, t = make(tmp_path, live_grace_s=0)
    pub, sent = t.publisher(name="feed"), batches(n=4)
    for b in sent:
        pub.publish(b)
    sod = t.subscribe(start="sod", wait_s=0)
    t.write_down("2024-01-02")
    with pytest.raises(SubscriberLagError, match="offset feed:1"):
        drain(t.subscribe(start={"feed": 1}, wait_s=0))
    with pytest.raises(SubscriberLagError):     # began before: those rows were its own
        drain(sod)
    assert drain(t.subscribe(start="sod", wait_s=0)) == []   # from now on: in the files
