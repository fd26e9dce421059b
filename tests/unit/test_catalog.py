"""Commits: atomic under a writer killed at random instants, concurrent writers lose nothing,
orphans are cleaned, no data value escapes the table directory."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

import hfq
from conftest import ROOT, canonical
from hfq.partition import encode_component
from hfq.schema import DATE, LONG, SYMBOL, Schema
from hfq.testing.strategies import HOSTILE_SYMBOLS
from hfq.write import Write

SCHEMA = Schema({"sym": SYMBOL, "d": DATE, "id": LONG})
ROWS_PER_APPEND = 1000

WRITER = textwrap.dedent("""
    import datetime as dt, sys
    import pyarrow as pa
    import hfq
    root, writer, appends = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    t = hfq.connect(root, threads=1)["ticks"]
    syms = pa.array(["A", "B", "C", "D", "E", "F"])
    for i in range(appends):
        ids = pa.array(range((writer * 100_000 + i) * {n}, (writer * 100_000 + i + 1) * {n}),
                       pa.int64())
        t.append(pa.table({{
            "sym": syms.take(pa.array([k % 6 for k in range({n})])).dictionary_encode(),
            "d": pa.array([dt.date(2020, 1, 1 + k % 3) for k in range({n})], pa.date32()),
            "id": ids}}))
        print(i, flush=True)
""").format(n=ROWS_PER_APPEND)


def make_table(db):
    return db.create_table("ticks", SCHEMA,
                           partition_by=hfq.Compo(hfq.Value("d"), hfq.Hash("sym", 4)),
                           sort_by=("sym", "id"))


def start_writer(root, writer, appends):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, "-c", WRITER, str(root), str(writer), str(appends)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)


def check_whole_appends(table) -> np.ndarray:
    """Every committed append is there completely, once; returns the ids."""
    ids = table.refresh().scan(columns=["id"]).to_arrow().column("id").to_numpy()
    assert len(ids) % ROWS_PER_APPEND == 0
    assert len(np.unique(ids)) == len(ids), "duplicated rows"
    batches = np.unique(ids // ROWS_PER_APPEND, return_counts=True)[1]
    assert (batches == ROWS_PER_APPEND).all(), "a partial append is visible"
    return ids


def test_writer_killed_at_random_instants_leaves_old_or_new_version(tmp_path):
    db = hfq.connect(str(tmp_path / "db"))
    table = make_table(db)
    rng = np.random.default_rng(7)
    committed = 0
    for attempt in range(6):
        proc = start_writer(tmp_path / "db", attempt, 50)
        proc.stdout.readline()                       # it has started appending
        time.sleep(float(rng.uniform(0.0, 0.4)))     # the kill lands at a random instant
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        ids = check_whole_appends(table)
        assert len(ids) >= committed                # nothing committed before is lost
        committed = len(ids)
        table.verify()
    snapshot = table.snapshot()
    before = canonical(table.scan().to_arrow())
    walk = [f for f, _ in db.session.store.walk_files("ticks/data")]
    assert len(walk) >= len(snapshot.files())
    everything = len(db.session.store.walk_files("ticks"))   # + a killed commit's temp manifest
    report = table.vacuum(grace_s=0)
    after = [f for f, _ in db.session.store.walk_files("ticks/data")]
    assert set(after) == {f for f in snapshot.files()}, "orphans remain or live files went"
    assert report["files_removed"] == everything - len(db.session.store.walk_files("ticks"))
    assert not [f for f, _ in db.session.store.walk_files("ticks") if "/.tmp~" in f]
    assert canonical(table.scan().to_arrow()).equals(before)


def test_two_processes_append_at_once_lose_nothing(tmp_path):
    db = hfq.connect(str(tmp_path / "db"))
    table = make_table(db)
    procs = [start_writer(tmp_path / "db", w, 8) for w in (1, 2)]
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err.decode()
    ids = check_whole_appends(table)
    assert len(ids) == 2 * 8 * ROWS_PER_APPEND
    assert table.versions() == list(range(17))


def test_vacuum_spares_files_of_a_live_writer(tmp_path, db):
    table = make_table(db)
    table.append(pa.table({"sym": pa.array(["A"]).dictionary_encode(),
                           "d": pa.array([pa.scalar(18262, pa.date32()).as_py()], pa.date32()),
                           "id": pa.array([1], pa.int64())}))
    # a fragment written by a writer that has not committed yet (this process: alive)
    db.session.store.makedirs("ticks/data/pending")
    db.session.store.write_bytes("ticks/data/pending/x.arrow", b"not yet committed")
    assert table.vacuum()["files_removed"] == 0      # inside the grace period
    assert db.session.store.exists("ticks/data/pending/x.arrow")
    assert table.vacuum(grace_s=0)["files_removed"] == 1


@pytest.mark.parametrize("scheme", [hfq.Value("sym"), hfq.Hash("sym", 3),
                                    hfq.Range("sym", ("A", "m"))])
def test_hostile_symbols_round_trip_inside_the_table_directory(tmp_path, scheme):
    outside = tmp_path / "outside"
    outside.mkdir()
    db = hfq.connect(str(tmp_path / "db"))
    t = db.create_table("ticks", SCHEMA, partition_by=scheme, sort_by=("sym", "id"))
    syms = list(HOSTILE_SYMBOLS) + ["../../outside/evil", "/" + str(outside)]
    data = pa.table({"sym": pa.array(syms).dictionary_encode(),
                     "d": pa.array([18262] * len(syms), pa.int32()).cast(pa.date32()),
                     "id": pa.array(range(len(syms)), pa.int64())})
    t.append(data)
    assert canonical(t.scan().to_arrow()).equals(canonical(data))
    for s in syms:
        got = t.scan(symbols=[s]).to_polars()
        assert got["sym"].cast(pl.String).to_list() == [s]
    table_dir = os.path.realpath(db.session.store.path("ticks"))
    for dirpath, dirnames, files in os.walk(db.session.store.root):
        for name in dirnames + files:
            real = os.path.realpath(os.path.join(dirpath, name))
            if real == os.path.join(db.session.store.root, ".hfq-node"):   # the node's identity
                continue
            assert real.startswith(table_dir + os.sep) or real == table_dir
    assert list(outside.iterdir()) == []


def test_encode_component_is_safe_and_injective():
    values = list(HOSTILE_SYMBOLS) + ["a", "A", "%41", "v%41", "é", "e\u0301", "x" * 200,
                                      "x" * 201]
    encoded = [encode_component(v) for v in values]
    assert len(set(encoded)) == len(values)
    for e in encoded:
        assert e not in ("", ".", "..") and "/" not in e and "\\" not in e and "\x00" not in e
        assert len(e) <= 96 or len(e) == 65


def test_invalid_table_names(db):
    for bad in ("../x", "", "a/b", "1abc", "x" * 200, "a b"):
        with pytest.raises(hfq.errors.InvalidNameError, match="invalid table name"):
            db.create_table(bad, SCHEMA, partition_by=hfq.Value("d"))
        with pytest.raises(hfq.errors.InvalidNameError):
            db[bad]


PX = Schema({"symbol": SYMBOL, "d": DATE, "px": hfq.schema.DOUBLE})


def px_rows(sym, n=3):
    return pa.table({"symbol": pa.array([sym] * n).dictionary_encode(),
                     "d": pa.array([18628] * n, pa.int32()).cast(pa.date32()),
                     "px": pa.array([1.0 + i for i in range(n)])})


class SlowWriter:
    """A writer that has written its rows but not committed yet."""

    def __init__(self, db, table, sym):
        self.write = Write(db.session, table.snapshot())
        self.rows = self.write.rows()
        self.rows.write(PX.conform(px_rows(sym)))

    def spill(self):
        self.rows._spill()

    def finish(self, op):
        self.write.stage_all(self.rows.flush())
        return self.write.commit(op)

    def abort(self):
        self.write.abort()


def slow_writer(db, table, sym):
    return SlowWriter(db, table, sym)


def test_commit_after_vacuum_forgot_versions_is_the_new_head(db):
    t = db.create_table("t", PX, partition_by=hfq.Value("d"), sort_by=("symbol",))
    writer = slow_writer(db, t, "SLOW")           # starts from version 0
    for sym in "ABC":
        t.append(px_rows(sym))
    assert t.vacuum(keep_versions=1, grace_s=0)["versions_forgotten"] == 3
    committed = writer.finish("append")
    assert committed.version == t.refresh().version == 4
    assert sorted(set(t.scan().to_arrow()["symbol"].to_pylist())) == ["A", "B", "C", "SLOW"]


def test_writer_from_before_a_drop_cannot_commit_into_the_new_table(db):
    t = db.create_table("t", PX, partition_by=hfq.Value("d"), sort_by=("symbol",))
    t.append(px_rows("OLD"))
    writer = slow_writer(db, t, "W")
    db.drop_table("t")
    t2 = db.create_table("t", PX, partition_by=hfq.Value("d"), sort_by=("symbol",))
    t2.append(px_rows("NEW"))
    with pytest.raises(hfq.errors.CommitConflictError, match="dropped and created again"):
        writer.finish("append")
    writer.abort()
    assert t2.scan().to_arrow()["symbol"].to_pylist() == ["NEW"] * 3


def test_vacuum_keeps_what_a_recent_reader_and_a_live_writer_need(db):
    t = db.create_table("t", PX, partition_by=hfq.Value("d"), sort_by=("symbol",))
    t.append(px_rows("A"))
    t.append(px_rows("B"))
    scan = t.scan()                               # a reader planned against version 2
    t.compact()
    t.vacuum(keep_versions=1)                     # default grace: version 2 is too recent
    assert scan.to_arrow().num_rows == 6
    writer = slow_writer(db, t, "W")
    writer.spill()                                # its fragment is on disk, not committed
    old = time.time() - 7200
    for rel, _ in db.session.store.walk_files("t/data"):
        os.utime(db.session.store.path(rel), (old, old))  # ... and looks two hours old
    t.vacuum()                                    # but its writer (this process) is alive
    writer.finish("append")
    assert t.scan().count() == 9
    t.vacuum(keep_versions=1, grace_s=0)
    assert t.scan().count() == 9 and t.verify() >= 1


def test_a_failed_write_leaves_no_file_behind(tmp_path):
    """Fragments spilled before the error (and their temporaries) are gone when it raises."""
    db = hfq.connect(str(tmp_path / "db"), memory_budget=64 << 10, csv_block_bytes=16 << 10)
    t = db.create_table("t", PX, partition_by=hfq.Value("d"), sort_by=("symbol",))
    t.append(px_rows("KEEP"))
    kept = sorted(rel for rel, _ in db.session.store.walk_files("t/data"))
    good = PX.conform(px_rows("A", n=20_000))          # passes the budget: spilled to disk
    bad = pa.table({"symbol": ["B"], "d": ["not a date"], "px": [1.0]})
    with pytest.raises(hfq.errors.SchemaMismatchError):
        t.append([good, bad])
    assert sorted(rel for rel, _ in db.session.store.walk_files("t/data")) == kept
    assert t.refresh().version == 1 and len(t) == 3
