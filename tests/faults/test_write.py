"""Clean failure of writes (issue 14 item 5): a failed append, load or compaction removes what it
wrote before it raises, in the same process; a full disk (ENOSPC, simulated deterministically at
the n-th file write) leaves the table unchanged and no file behind; ``vacuum()`` in the same
long-lived process removes what a failed write could not."""

from __future__ import annotations

import errno
import os
import threading

import pyarrow as pa
import pytest

import hfq
from hfq import faults, synth
from hfq.errors import WriteError
from hfq.storage.store import LocalStore
from hfq.write import Write

DATES = ("2024-01-02", "2024-01-03")


def files_under(root) -> set[str]:
    return {os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs}


@pytest.fixture
def table(tmp_path):
    db = hfq.connect(str(tmp_path / "db"))
    t = db.create_table("quotes", hfq.schemas.TAQ,
                        partition_by=hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 4)),
                        sort_by=("symbol", "time"))
    t.append(synth.taq_table(dates=DATES[:1], rows_per_day=300, symbols=30))
    return t


@pytest.fixture
def data():
    return synth.taq_table(dates=DATES, rows_per_day=2000, symbols=60)


class FullDisk:
    """``LocalStore.write_bytes`` fails with ENOSPC on its n-th call (after writing half the
    bytes, as a real full disk does); counts the calls."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.at = 0
        self.calls: list[str] = []
        self._lock = threading.Lock()
        original = LocalStore.write_bytes

        def write_bytes(store: LocalStore, rel: str, data, *, sync: bool = False) -> None:
            with self._lock:
                self.calls.append(rel)
                nth = len(self.calls)
            if nth == self.at:
                with open(store.path(rel), "wb") as f:
                    f.write(bytes(data)[:len(data) // 2])
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), store.path(rel))
            original(store, rel, data, sync=sync)

        monkeypatch.setattr(LocalStore, "write_bytes", write_bytes)

    def arm(self, at: int) -> None:
        self.at, self.calls = at, []


def _writes_of(run, disk: FullDisk) -> list[str]:
    """The files a successful run writes, in order (run on a copy of the state)."""
    disk.arm(0)
    run()
    return list(disk.calls)


def _empty_like(table: hfq.Table, root, **settings) -> hfq.Table:
    """An empty table like ``table`` in a database of its own (for a dry run)."""
    db = hfq.connect(str(root), **settings)
    return db.create_table(table.name, table.schema, partition_by=table.snapshot().partition_by,
                           sort_by=table.snapshot().sort_by)


def test_enospc_at_every_fragment_write_leaves_the_table_and_the_disk_as_they_were(
        tmp_path, monkeypatch, table, data):
    disk = FullDisk(monkeypatch)
    root = tmp_path / "db"
    before_files, before_version, before_rows = files_under(root), table.version, len(table)
    dry = _empty_like(table, tmp_path / "dry")
    dry.append(synth.taq_table(dates=DATES[:1], rows_per_day=300, symbols=30))
    writes = _writes_of(lambda: dry.append(data), disk)
    fragments = [i for i, rel in enumerate(writes, 1) if "/data/" in rel]
    assert len(fragments) >= 8, writes           # every partition of both days
    for n in fragments:
        disk.arm(n)
        with pytest.raises(WriteError) as info:
            table.append(data)
        assert info.value.errno == errno.ENOSPC
        assert "table 'quotes', partition date=v" in str(info.value)
        assert isinstance(info.value.__cause__, OSError)
        assert (table.refresh().version, len(table)) == (before_version, before_rows)
        assert files_under(root) == before_files, f"ENOSPC at write {n} left files behind"
    disk.arm(0)
    table.append(data)                            # the disk has room again: it loads
    assert len(table) == before_rows + data.num_rows


def csv_table(tmp_path, rows_per_day: int, **settings) -> tuple[hfq.Table, str]:
    """An empty table of 2 days x 3 buckets and a CSV file of ``rows_per_day`` rows a day."""
    db = hfq.connect(str(tmp_path / "db"), csv_block_bytes=16 << 10, **settings)
    t = db.create_table("quotes", hfq.schemas.TAQ,
                        partition_by=hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 3)),
                        sort_by=("symbol", "time"))
    csv = tmp_path / "q.csv"
    synth.write_taq_csv(str(csv), dates=DATES, rows_per_day=rows_per_day, symbols=60)
    return t, str(csv)


def test_enospc_during_a_csv_load_with_spills_leaves_nothing(tmp_path, monkeypatch):
    """The issue's case: a load whose writer spills and merges (more files per partition)."""
    t, csv = csv_table(tmp_path, 6000, memory_budget=128 << 10)
    db = t.db
    disk = FullDisk(monkeypatch)
    root = tmp_path / "db"
    before = files_under(root)
    dry = _empty_like(t, tmp_path / "dry", csv_block_bytes=16 << 10, memory_budget=128 << 10)
    writes = _writes_of(lambda: dry.db.load_csv("quotes", csv), disk)
    fragments = [i for i, rel in enumerate(writes, 1) if "/data/" in rel]
    assert len(fragments) > 6          # spills, then merges: more than one file a partition
    for n in fragments[::max(1, len(fragments) // 12)] + fragments[-1:]:
        disk.arm(n)
        with pytest.raises(WriteError, match="No space left on device"):
            db.load_csv("quotes", csv)
        assert t.refresh().version == 0 and files_under(root) == before, n


def test_enospc_writing_the_manifest_leaves_nothing(tmp_path, monkeypatch, table, data):
    disk = FullDisk(monkeypatch)
    root = tmp_path / "db"
    before, version = files_under(root), table.version
    dry = _empty_like(table, tmp_path / "dry")
    writes = _writes_of(lambda: dry.append(data), disk)
    disk.arm(max(i for i, rel in enumerate(writes, 1) if "/_versions/" in rel))
    with pytest.raises(WriteError, match="publishing the next version"):
        table.append(data)
    assert table.refresh().version == version
    assert files_under(root) == before


def test_worker_threads_finish_before_the_abort_removes(tmp_path, monkeypatch, table, data):
    """A partition still being written by a pool thread when another one fails lands before
    the abort's removal, never after it (the issue: a thread finished a fragment after the
    abort).  The first partition's write fails once the second one's has begun; the second is
    held until the writer starts shutting down, so it lands exactly in the window a wrong
    order (abort first, or a pool not waited for) would miss."""
    from hfq import write as write_module
    root = tmp_path / "db"
    before = files_under(root)
    started, go = threading.Event(), threading.Event()
    order: list[str] = []
    alive_at_abort: list[bool] = []
    writers: list[write_module.PartitionWriter] = []
    original_write, original_spill = LocalStore.write_bytes, write_module.PartitionWriter._spill
    original_exit, original_abort = write_module.PartitionWriter.__exit__, write_module.Write.abort

    def spill(self):
        if not order:
            order.extend(f"/{path}/" for path in list(self._buffers)[:2])
            writers.append(self)
        return original_spill(self)

    def write_bytes(store, rel, payload, *, sync=False):
        if order[0] in rel:                   # the first job fails, the second under way
            assert started.wait(10)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), rel)
        if order[1] in rel:
            started.set()
            assert go.wait(10)                # released when the writer shuts down
        original_write(store, rel, payload, sync=sync)

    def exit_(self, *args):
        go.set()
        return original_exit(self, *args)

    def abort(self):
        alive_at_abort.extend(t.is_alive() for w in writers for t in w._pool._threads)
        go.set()
        return original_abort(self)

    monkeypatch.setattr(LocalStore, "write_bytes", write_bytes)
    monkeypatch.setattr(write_module.PartitionWriter, "_spill", spill)
    monkeypatch.setattr(write_module.PartitionWriter, "__exit__", exit_)
    monkeypatch.setattr(write_module.Write, "abort", abort)
    with pytest.raises(WriteError):
        table.append(data)
    assert started.is_set() and alive_at_abort
    assert not any(alive_at_abort), "a pool thread was still running at the abort"
    assert files_under(root) == before


def test_vacuum_in_the_same_process_removes_what_a_failed_write_left(tmp_path, table, data):
    """The abort's removal fails (fault point); the writer process is alive, yet vacuum()
    removes the leftovers at once -- it knows the transaction is over -- while the files of a
    write still running in this process are kept."""
    root = tmp_path / "db"
    before = files_under(root)
    faults.arm("write.abort.before_remove", "raise")
    faults.arm("write.before_commit", "raise")
    try:
        with pytest.raises(faults.FaultInjected, match="write.before_commit"):
            table.append(data)
    finally:
        faults.disarm()
    left = files_under(root) - before
    assert len(left) >= 8 and all("/data/" in f for f in left)
    db = table.db
    running = Write(db.session, table.snapshot())
    fragment = running.files.write(db.session.nodes, "date=v2024-01-02/symbol=h0",
                                   ["2024-01-02", 0], data.slice(0, 10))
    report = table.vacuum()
    assert report["files_removed"] == len(left)
    assert files_under(root) - before == {fragment.file}
    running.abort()
    assert files_under(root) == before


@pytest.mark.parametrize("point", ["write.fragment.after_put", "write.before_commit",
                                   "ingest.csv.after_block"])
def test_failing_at_each_fault_point_of_a_load_leaves_nothing(tmp_path, point):
    t, csv = csv_table(tmp_path, 2000, memory_budget=1 << 20)
    db = t.db
    before = files_under(tmp_path / "db")
    faults.arm(point, "raise" if point == "write.before_commit" else "raise@2")
    try:
        with pytest.raises(faults.FaultInjected, match=point):
            db.load_csv("quotes", csv)
    finally:
        faults.disarm()
    assert t.refresh().version == 0 and files_under(tmp_path / "db") == before
    assert db.load_csv("quotes", csv).rows == 4000


def test_failing_before_a_compaction_commits_leaves_the_old_files(tmp_path, table, data):
    table.append(data)
    table.append(data)
    root = tmp_path / "db"
    before, version = files_under(root), table.version
    expected = pa.Table.from_batches(table.scan().to_arrow().to_batches())
    faults.arm("compact.before_commit", "raise")
    try:
        with pytest.raises(faults.FaultInjected):
            table.compact()
    finally:
        faults.disarm()
    assert table.refresh().version == version and files_under(root) == before
    assert table.scan().to_arrow().equals(expected)
