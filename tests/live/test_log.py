"""The live log's format and its durability (issue 26 item 1, docs/live.md "The log").

* frames round-trip; a torn tail -- the file cut at any byte of its last frame, or that frame
  damaged -- is dropped and every frame before it read; a damaged frame stops the segment;
* group commit: frames appended by many threads are all durable when each append returns,
  in fewer fsyncs than appends;
* an acknowledgement comes after the fsync: ``publish`` returns only once the node's log
  holds the batch's frame on disk (the fsync seam watched) -- the planted bug "ack before
  fsync" fails here.

Ray-free.
"""

from __future__ import annotations

import json
import os
import pathlib
import threading

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hfq
from hfq import faults
from hfq.live import log as livelog
from hfq.live.log import Entry, Slice, StreamWriter, encode, read_frames


def entry(seq: int, rows: int) -> Entry:
    return Entry("feed", seq, ("n",), f"d{seq}", (Slice("h0", [0], "2024-01-02", seq, rows,
                                                        ("n",)),), float(seq))


def table(n: int, start: int = 0) -> pa.Table:
    return pa.table({"x": pa.array(range(start, start + n), pa.int64()),
                     "s": pa.array([f"s{i % 3}" for i in range(n)]).dictionary_encode()})


@pytest.fixture
def synced(monkeypatch) -> list[int]:
    """The file descriptors the log fsyncs, one entry per fsync (the seam watched)."""
    fds: list[int] = []
    real = livelog._sync

    def spy(fd: int) -> None:
        real(fd)
        fds.append(fd)

    monkeypatch.setattr(livelog, "_sync", spy)
    return fds


def test_frames_round_trip_with_their_rows_and_dictionaries(tmp_path):
    w = StreamWriter(str(tmp_path), segment_bytes=1 << 20)
    w.append([encode(entry(1, 3), table(3))])
    w.append([encode(entry(2, 2), table(2, 10)), encode(entry(3, 1), table(1, 20))])
    got = list(read_frames(w.path(w.segment)))
    assert [(e.seq, r.column("x").to_pylist()) for e, r, _ in got] == \
        [(1, [0, 1, 2]), (2, [10, 11]), (3, [20])]
    assert got[0][1].column("s").to_pylist() == ["s0", "s1", "s2"]
    assert got[0][0] == entry(1, 3)
    # reading on from an offset gives the rest
    assert [e.seq for e, _, _ in read_frames(w.path(w.segment), got[0][2])] == [2, 3]
    w.close()


def test_a_torn_tail_is_dropped_at_every_byte_of_the_last_frame(tmp_path):
    w = StreamWriter(str(tmp_path / "w"), segment_bytes=1 << 20)
    w.append([encode(entry(1, 4), table(4))])
    w.append([encode(entry(2, 5), table(5))])
    path = w.path(w.segment)
    w.close()
    data = pathlib.Path(path).read_bytes()
    first_end = next(read_frames(path))[2]
    cut = tmp_path / "cut.seg"
    for size in range(first_end, len(data)):   # every torn length of the second frame
        cut.write_bytes(data[:size])
        assert [e.seq for e, _, _ in read_frames(str(cut))] == [1], size
    cut.write_bytes(data)
    assert [e.seq for e, _, _ in read_frames(str(cut))] == [1, 2]


@pytest.mark.parametrize("where", ["meta", "body", "crc"])
def test_a_damaged_frame_and_what_follows_it_are_not_read(tmp_path, where):
    w = StreamWriter(str(tmp_path / "w"), segment_bytes=1 << 20)
    for seq in (1, 2, 3):
        w.append([encode(entry(seq, 2), table(2))])
    path = w.path(w.segment)
    w.close()
    ends = [end for _, _, end in read_frames(path)]
    data = bytearray(pathlib.Path(path).read_bytes())
    at = {"meta": ends[0] + livelog.FRAME.size + 2, "body": ends[1] - 3,
          "crc": ends[0] + livelog.FRAME.size - 1}[where]
    data[at] ^= 0xFF
    pathlib.Path(path).write_bytes(bytes(data))
    assert [e.seq for e, _, _ in read_frames(path)] == [1]


def test_group_commit_makes_every_append_durable_in_fewer_fsyncs(tmp_path, synced):
    w = StreamWriter(str(tmp_path), segment_bytes=1 << 30, group_commit_s=0.02)
    before = len(synced)
    threads = [threading.Thread(target=w.append, args=([encode(entry(i, 1), table(1))],))
               for i in range(1, 41)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(e.seq for e, _, _ in read_frames(w.path(w.segment))) == list(range(1, 41))
    assert 1 <= len(synced) - before < 40
    w.close()


@pytest.mark.parametrize("window", [0.0, 0.001])
def test_appends_made_while_an_fsync_runs_share_the_next_one(tmp_path, synced, window):
    """Group commit without timing: the first append is held at its fsync (a fault point);
    eight more queue meanwhile; released, the first is durable by its own fsync and the eight
    by one more -- whatever the window, 0 (the default) included."""
    w = StreamWriter(str(tmp_path / "w"), segment_bytes=1 << 30, group_commit_s=window)
    before = len(synced)
    gate = tmp_path / "gate"
    faults.arm("live.log.before_fsync", f"pause:{gate}")
    first = threading.Thread(target=w.append, args=([encode(entry(1, 1), table(1))],))
    more = [threading.Thread(target=w.append, args=([encode(entry(i, 2), table(2))],))
            for i in range(2, 10)]
    try:
        first.start()
        while not pathlib.Path(f"{gate}.reached").exists() and first.is_alive():
            first.join(0.005)
        for t in more:
            t.start()
        while w._queued < 9 and all(t.is_alive() for t in more):   # queued behind the leader
            more[0].join(0.005)
        assert len(synced) == before   # nothing durable yet: no append has returned
        assert all(t.is_alive() for t in [first, *more])
    finally:   # whatever failed, nothing stays held
        gate.touch()
        for t in [first, *more]:
            if t.ident is not None:   # started
                t.join()
        faults.disarm("live.log.before_fsync")
    assert len(synced) - before == 2
    assert sorted(e.seq for e, _, _ in read_frames(w.path(w.segment))) == list(range(1, 10))
    w.close()


def test_publish_returns_only_after_the_batch_is_fsynced(tmp_path, monkeypatch):
    """The acknowledgement after the fsync: at every fsync of a segment the test notes the
    file's size; when ``publish`` returns, a sync must have covered the whole file."""
    synced: dict[int, int] = {}
    real = livelog._sync

    def spy(fd: int) -> None:
        real(fd)
        synced[fd] = os.fstat(fd).st_size

    monkeypatch.setattr(livelog, "_sync", spy)
    db = hfq.connect(str(tmp_path))
    t = db.create_table("q", hfq.schemas.TAQ, partition_by=hfq.Value("date"))
    pub = t.publisher(name="feed")
    rows = hfq.synth.taq_table(rows_per_day=200, symbols=5)
    for i in range(4):
        pub.publish(rows.slice(i * 50, 50))
        writer = db.session.nodes.context().service(
            pub.spec.service, lambda: None).writer   # this process's stream
        fd = writer._fd
        assert synced.get(fd) == os.fstat(fd).st_size, "acknowledged before its fsync"


def test_a_failed_fsync_fails_the_publish_and_the_batch_is_not_visible(tmp_path,
                                                                        monkeypatch):
    db = hfq.connect(str(tmp_path))
    t = db.create_table("q", hfq.schemas.TAQ, partition_by=hfq.Value("date"))
    pub = t.publisher(name="feed")
    rows = hfq.synth.taq_table(rows_per_day=100, symbols=5)
    pub.publish(rows.slice(0, 40))

    def broken(fd: int) -> None:
        raise OSError(5, "I/O error")

    monkeypatch.setattr(livelog, "_sync", broken)
    with pytest.raises(hfq.live.LiveLogError, match="I/O error"):
        pub.publish(rows.slice(40, 60))
    assert pub.seq == 1
    assert t.scan().count() == 40


TEXT = st.sampled_from(["", "a", "2024-01-02", "date=2024-01-02/h=0", "\"", "\\", "\x00", "é",
                        "🙂", "a,b"])
SLICE = st.builds(Slice, TEXT, st.lists(st.one_of(TEXT, st.integers(-2**63, 2**63 - 1),
                                                  st.none(), st.floats(allow_nan=False)),
                                        max_size=2),
                  st.one_of(st.none(), TEXT), st.integers(0, 2**40), st.integers(0, 2**31),
                  st.lists(TEXT, max_size=3).map(tuple))


@settings(max_examples=200, deadline=None)
@given(entries=st.lists(st.builds(Entry, TEXT, st.integers(1, 2**40),
                                  st.lists(TEXT, max_size=3).map(tuple), TEXT,
                                  st.lists(SLICE, max_size=4).map(tuple),
                                  st.floats(0, 2e9), st.lists(SLICE, max_size=3).map(tuple)),
                        min_size=1, max_size=6))
def test_the_meta_is_the_json_of_the_entry(entries):
    """A frame's meta, put together from remembered pieces, is exactly ``json.dumps`` of the
    entry (oracle), entry after entry, and reads back as the entry."""
    for e in entries:
        plain = [[s.partition, s.key, s.day, s.pseq, s.rows, list(s.nodes)] for s in e.slices]
        others = [[s.partition, s.key, s.day, s.pseq, s.rows, list(s.nodes)] for s in e.others]
        assert e.meta() == json.dumps({"pub": e.pub, "seq": e.seq, "nodes": list(e.nodes),
                                       "digest": e.digest, "at": e.at, "slices": plain,
                                       "others": others}, separators=(",", ":")).encode()
        assert Entry.from_meta(e.meta()) == e
