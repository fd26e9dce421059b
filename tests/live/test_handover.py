"""A node hands its held batches over to their partitions off the acknowledgement path
(:meth:`hfq.live.node.LiveTable.hand_over`, :class:`hfq.live.rows.Pending`): a publish never
puts rows together on its own thread, a publish is acknowledged while a handover is out, and
a read that comes while a handover is out waits for it -- so it sees every acknowledged row
once (read-your-writes).  The races are made exact by holding the handover thread between
taking the batches and installing them, and releasing it only when the read is waiting.
Oracle: polars over the rows published.  Ray-free (embedded).
"""

from __future__ import annotations

import threading

import polars as pl
import pytest

import hfq
from hfq.live import node as livenode
from hfq.live import rows as liverows

SCHEME = hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 4))
TAIL = 4


def batches(n: int) -> list:
    """``n`` batches of different sizes (a handover's slices set against the wrong rows
    would not add up), with NaN, -0.0, empty strings and NULL among the values."""
    day = hfq.synth.taq_table(dates=["2024-01-02"], rows_per_day=40 * n, symbols=9, seed=7)
    out, start = [], 0
    for i in range(n):
        size = 7 + i % 5
        out.append(day.slice(start, size))
        start += size
    return out


def oracle(published: list) -> pl.DataFrame:
    frame = pl.concat([pl.from_arrow(b) for b in published])
    assert isinstance(frame, pl.DataFrame)
    return frame.group_by("symbol").agg(pl.len().alias("n"), pl.col("bid").sum()).sort("symbol")


def seen(t) -> pl.DataFrame:
    got = t.scan().to_polars()
    return got.with_columns(pl.col("symbol").cast(pl.String)).group_by("symbol").agg(
        pl.len().alias("n"), pl.col("bid").sum()).sort("symbol")


def feed(tmp_path):
    """A table (made after the test's patches: its node state is new) and its publisher."""
    db = hfq.connect(str(tmp_path / "db"))
    t = db.create_table("q", hfq.schemas.TAQ, partition_by=SCHEME, sort_by=("symbol", "time"))
    return t, t.publisher(name="feed")


def test_a_publish_never_hands_over_on_its_own_thread(tmp_path, monkeypatch):
    monkeypatch.setattr(liverows, "TAIL", TAIL)
    where: list[tuple[int, bool]] = []
    publishing = threading.Event()
    real = liverows.prepare

    def watched(got):
        where.append((threading.get_ident(), publishing.is_set()))
        return real(got)

    monkeypatch.setattr(liverows, "prepare", watched)
    monkeypatch.setattr(livenode, "prepare", watched)
    t, pub = feed(tmp_path)
    sent = batches(6 * TAIL)
    me = threading.get_ident()
    publishing.set()
    for b in sent:
        pub.publish(b)
    publishing.clear()
    assert not [w for w in where if w == (me, True)], \
        "a publish put held batches together on its own (acknowledgement) thread"
    assert seen(t).equals(oracle(sent))


class _Gate(liverows.Pending):
    """A node's pending batches whose handover thread is held after taking its batches,
    until a read arrives while they are out."""

    taken = threading.Event()
    read_waits = threading.Event()

    def take(self):
        if self.moving:              # a read, while the handover's batches are out
            _Gate.read_waits.set()
        return super().take()


def test_a_read_waits_for_the_handover_out_and_a_publish_does_not(tmp_path, monkeypatch):
    monkeypatch.setattr(liverows, "TAIL", TAIL)
    _Gate.taken.clear()
    _Gate.read_waits.clear()
    real = liverows.prepare

    def held(got):   # the handover thread's: stops with its batches out
        _Gate.taken.set()
        assert _Gate.read_waits.wait(60), "no read came"
        return real(got)

    monkeypatch.setattr(livenode, "Pending", _Gate)
    monkeypatch.setattr(livenode, "prepare", held)
    t, pub = feed(tmp_path)
    sent = batches(TAIL + 3)
    try:
        for b in sent[:TAIL]:
            pub.publish(b)
        assert _Gate.taken.wait(60), "the handover did not start"
        # acknowledged while the handover is out: its thread holds no lock a publish needs
        late = threading.Thread(target=lambda: [pub.publish(b) for b in sent[TAIL:]])
        late.start()
        late.join(30)
        assert not late.is_alive(), "a publish waited for the handover"
        assert pub.seq == len(sent)
        # the read comes with the handover out and three batches after it held
        assert seen(t).equals(oracle(sent))
    finally:
        _Gate.read_waits.set()


@pytest.mark.parametrize("fail", [True, False])
def test_a_handover_that_fails_is_done_by_the_next_read(tmp_path, monkeypatch, fail):
    """A handover that raises gives its batches back (held first, in order); the next
    read hands them over itself: no acknowledged row is lost."""
    monkeypatch.setattr(liverows, "TAIL", TAIL)
    done = threading.Event()
    real = liverows.prepare

    def broken(got):
        try:
            if fail:
                raise MemoryError("no memory for the handover")
            return real(got)
        finally:
            done.set()

    monkeypatch.setattr(livenode, "prepare", broken)
    t, pub = feed(tmp_path)
    sent = batches(TAIL + 2)
    for b in sent:
        pub.publish(b)
    assert done.wait(60)
    assert seen(t).equals(oracle(sent))
