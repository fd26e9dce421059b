"""A write whose commit fails after (or while) publishing its version keeps the version's files;
one that fails before the publish removes them (``Write.abort``: files go only while
``Transaction.published`` is False).  Before, the abort removed the data files whenever
``Catalog.commit`` raised: a failure between the publish and the claim, or reading the head
back, left a committed version naming files that were gone.  The failures are fault points and
monkeypatched store calls, in this process: no timing."""

from __future__ import annotations

import errno
import os

import polars as pl
import pyarrow as pa
import pytest
from faultkit import assert_no_leftovers, canonical, files_under
from test_write import DATES, csv_table

import hfq
from hfq import faults, synth
from hfq.catalog.catalog import Catalog
from hfq.catalog.records import Manifest
from hfq.errors import WriteError
from hfq.storage.store import LocalStore


@pytest.fixture
def table(tmp_path):
    """A table of 2 days x 3 buckets (tests/faults/test_write.py), with one day of rows."""
    t, _ = csv_table(tmp_path, 10)
    t.append(synth.taq_table(dates=DATES[:1], rows_per_day=300, symbols=30))
    return t


@pytest.fixture
def data():
    return synth.taq_table(dates=DATES, rows_per_day=2000, symbols=60, seed=7)


def assert_published_with_its_files(root, before: Manifest, old: pa.Table,
                                    data: pa.Table) -> None:
    """A new reader sees the version after ``before``, every file it names is there and
    passes its checksums, and its rows are ``old`` + ``data`` (polars oracle)."""
    fresh = hfq.connect(str(root))["quotes"]
    assert fresh.version == before.version + 1
    new_files = fresh.snapshot().files() - before.files()
    assert len(new_files) >= 6                                 # 2 days x 3 buckets at least
    assert all(os.path.isfile(os.path.join(root, f)) for f in new_files)
    assert fresh.verify() == len(fresh.snapshot().files())    # every file read, checksums ok
    assert_no_leftovers(fresh, root)                           # nothing missing, nothing stray
    got = canonical(fresh.scan().to_arrow())
    want = canonical(pl.concat([pl.from_arrow(old), pl.from_arrow(data)], how="vertical"))
    assert got.equals(want)


@pytest.mark.parametrize("point", ["catalog.commit.before_claim",
                                   "catalog.commit.after_publish"])
def test_a_write_failing_after_its_publish_keeps_the_files_the_version_names(
        tmp_path, table, data, point):
    before, old = table.snapshot(), table.scan().to_arrow()
    faults.arm(point, "raise")
    try:
        with pytest.raises(faults.FaultInjected, match=point):
            table.append(data)
    finally:
        faults.disarm()
    assert_published_with_its_files(tmp_path / "db", before, old, data)


def test_an_io_error_after_the_publish_is_a_write_error_and_the_files_stay(
        tmp_path, monkeypatch, table, data):
    """Writing the claim fails (EIO) once the record is published: the error says the
    files are kept, and they are."""
    before, old = table.snapshot(), table.scan().to_arrow()

    def claim(self, name, number):
        raise OSError(errno.EIO, os.strerror(errno.EIO), f"{name}/_claims/{number}")

    monkeypatch.setattr(Catalog, "_claim", claim)
    with pytest.raises(WriteError, match="after .or while. publishing its version .its files "
                                         "are kept.") as info:
        table.append(data)
    assert info.value.errno == errno.EIO
    monkeypatch.undo()
    assert_published_with_its_files(tmp_path / "db", before, old, data)


def test_a_publish_failing_half_way_keeps_the_files(tmp_path, monkeypatch, table, data):
    """The record is made visible, then the publish raises (the unlink of the temporary
    fails): the outcome is unknown to the writer, so nothing goes -- and the version is
    there."""
    before, old = table.snapshot(), table.scan().to_arrow()
    original = LocalStore.create_exclusive

    def create_exclusive(store, src, dst):
        won = original(store, src, dst)
        if "/_versions/" in dst:
            raise OSError(errno.EIO, os.strerror(errno.EIO), dst)
        return won

    monkeypatch.setattr(LocalStore, "create_exclusive", create_exclusive)
    with pytest.raises(WriteError, match="its files are kept"):
        table.append(data)
    monkeypatch.undo()
    assert_published_with_its_files(tmp_path / "db", before, old, data)


@pytest.mark.parametrize("lost_race", [False, True], ids=["first_attempt", "after_a_lost_race"])
def test_a_write_failing_before_its_publish_removes_its_files(
        tmp_path, monkeypatch, table, data, lost_race):
    """The opposite case: nothing is on record, every file of the change goes (also when
    an attempt lost the race for its number first: the lost publish is known)."""
    root = tmp_path / "db"
    before, version = files_under(root), table.version
    old = canonical(table.scan().to_arrow())
    lost: list[str] = []
    if lost_race:
        original = LocalStore.create_exclusive

        def create_exclusive(store, src, dst):
            if "/_versions/" in dst and not lost:
                lost.append(dst)
                store.remove(src)
                return False               # another writer took the number (as it looks)
            return original(store, src, dst)

        monkeypatch.setattr(LocalStore, "create_exclusive", create_exclusive)
    faults.arm("catalog.commit.before_publish", "raise@2" if lost_race else "raise")
    try:
        with pytest.raises(faults.FaultInjected, match="before_publish"):
            table.append(data)
    finally:
        faults.disarm()
    assert len(lost) == lost_race
    assert files_under(root) == before
    fresh = hfq.connect(str(root))["quotes"]
    assert fresh.version == version
    assert canonical(fresh.scan().to_arrow()).equals(old)
