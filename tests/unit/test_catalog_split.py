"""The split catalog (issue 16) and idempotent loads (issue 15 item 3).

A version is a small record pointing at immutable per-day pieces shared between versions: a
commit writes the pieces of the days it touched, a one-day plan reads one day's piece, ``len``
and ``version`` read none.  Old (format 1) tables open, time-travel and migrate.  Concurrent
commits (made deterministic with a fault point) lose and duplicate nothing.  ``load_csv``
remembers what it loaded and refuses the same content again, through the API and the CLI.
Every answer is checked against polars on the same rows.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import pathlib
import subprocess
import sys

import polars as pl
import pyarrow as pa
import pytest

import hfq
from conftest import ROOT, in_thread
from hfq import faults
from hfq.catalog.catalog import Catalog
from hfq.catalog.records import Partitions
from hfq.errors import DuplicateLoadError
from hfq.schema import DATE, LONG, SYMBOL, Schema
from hfq.testing.formats import rewrite_as_format_1

SCHEMA = Schema({"sym": SYMBOL, "d": DATE, "id": LONG})
SCHEME = hfq.Compo(hfq.Value("d"), hfq.Hash("sym", 8))


def rows(day: int, first: int, n: int = 30, symbols: int = 11) -> pa.Table:
    return pa.table({"sym": pa.array([f"S{i % symbols}" for i in range(n)]).dictionary_encode(),
                     "d": pa.array([dt.date(2024, 1, day)] * n, pa.date32()),
                     "id": pa.array(range(first, first + n), pa.int64())})


def oracle(*batches: pa.Table, day: int | None = None, sym: str | None = None) -> list[int]:
    frame = pl.concat([pl.from_arrow(b) for b in batches]).with_columns(
        pl.col("sym").cast(pl.String))
    if day is not None:
        frame = frame.filter(pl.col("d") == dt.date(2024, 1, day))
    if sym is not None:
        frame = frame.filter(pl.col("sym") == sym)
    return sorted(frame["id"].to_list())


def ids(t: hfq.Table, **scan: object) -> list[int]:
    return sorted(t.scan(columns=["id"], **scan).to_polars()["id"].to_list())  # type: ignore


def make(root: str, days: int) -> tuple[hfq.Table, list[pa.Table]]:
    t = hfq.connect(root).create_table("t", SCHEMA, partition_by=SCHEME, sort_by=("sym", "id"))
    batches = [rows(d, 100 * d) for d in range(1, days + 1)]
    for b in batches:
        t.append(b)
    return t, batches


class Reads:
    """Counts the catalog's reads of manifest pieces and version records."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, catalog: Catalog) -> None:
        self.paths: list[str] = []
        original = catalog.store.read_bytes

        def read_bytes(rel: str) -> bytes:
            self.paths.append(rel)
            return original(rel)

        monkeypatch.setattr(catalog.store, "read_bytes", read_bytes)

    def pieces(self) -> int:
        return sum("/_manifests/" in p for p in self.paths)


def test_a_one_day_plan_reads_one_days_piece_and_len_reads_none(tmp_path, monkeypatch):
    root = str(tmp_path / "db")
    made, batches = make(root, 6)
    count = made.partitions().height             # (day, bucket) pairs holding rows
    db = hfq.connect(root)                      # a fresh handle: nothing cached
    reads = Reads(monkeypatch, db.session.catalog)
    t = db["t"]
    assert (len(t), t.version, len(t.snapshot().partitions)) == (180, 6, count)
    assert t.schema == SCHEMA and reads.pieces() == 0
    assert ids(t, dates="2024-01-03") == oracle(*batches, day=3)
    assert reads.pieces() == 1
    plan = t.scan(dates="2024-01-03", symbols=["S4"]).plan
    assert plan.partitions_total == count and len(plan.units) == 1 and reads.pieces() == 1
    assert ids(t, dates="2024-01-03", symbols=["S4"]) == oracle(*batches, day=3, sym="S4")
    assert ids(t, symbols=["S4"]) == oracle(*batches, sym="S4")   # every day's piece
    assert reads.pieces() == 6


@pytest.mark.parametrize("dates", [("2024-01-02", "2024-01-04"), ("2024-01-05", None),
                                   (None, "2024-01-01"), ("2024-01-04", "2024-01-04"),
                                   ("2023-12-01", "2023-12-31"), ("2024-01-07", None)])
def test_date_ranges_keep_exactly_the_days_in_range(tmp_path, monkeypatch, dates):
    """The days are found by a binary search of the version's references: each range reads
    the pieces of its days only and returns what polars does."""
    root = str(tmp_path / "db")
    _, batches = make(root, 6)
    db = hfq.connect(root)
    reads = Reads(monkeypatch, db.session.catalog)
    lo, hi = (dt.date.fromisoformat(d) if d else None for d in dates)
    want = [d for d in range(1, 7) if (lo is None or dt.date(2024, 1, d) >= lo) and
            (hi is None or dt.date(2024, 1, d) <= hi)]
    expected = sorted(i for d in want for i in oracle(*batches, day=d))
    plan = db["t"].scan(dates=dates).plan
    assert sorted({u.key[0] for u in plan.units}) == [f"2024-01-0{d}" for d in want]
    assert ids(db["t"], dates=dates) == expected and reads.pieces() == len(want)


def test_a_commit_writes_the_pieces_of_the_days_it_touched(tmp_path):
    root = str(tmp_path / "db")
    t, batches = make(root, 5)
    before = t.snapshot()
    pieces = pathlib.Path(root, "t", "_manifests")
    names = set(os.listdir(pieces))
    t.append(rows(3, 5000))                     # one day changed
    after = t.snapshot()
    assert len(set(os.listdir(pieces)) - names) == 1
    assert isinstance(before.partitions, Partitions) and isinstance(after.partitions, Partitions)
    changed = [g for g in after.partitions.refs
               if after.partitions.refs[g] != before.partitions.refs[g]]
    assert changed == ["d=v2024-01-03"]
    record = pathlib.Path(root, "t", "_versions", f"{after.version:020d}.json")
    assert record.stat().st_size < 4000
    assert ids(t) == oracle(*batches, rows(3, 5000))


def test_a_format_1_table_opens_travels_in_time_and_migrates(tmp_path):
    root = str(tmp_path / "db")
    _, batches = make(root, 3)
    rewrite_as_format_1(root, "t")
    t = hfq.connect(root)["t"]
    assert not isinstance(t.snapshot().partitions, Partitions)
    assert len(t) == 90 and ids(t) == oracle(*batches)
    assert ids(t, version=2) == oracle(*batches[:2])
    assert t.append(rows(4, 900)) == 4          # the migration: all groups as pieces
    assert isinstance(t.snapshot().partitions, Partitions)
    fresh = hfq.connect(root)["t"]
    assert ids(fresh) == oracle(*batches, rows(4, 900)) and len(fresh) == 120
    assert ids(fresh, version=3) == oracle(*batches)          # format 1, still readable
    assert ids(fresh, version=1) == oracle(batches[0])
    assert fresh.db.check() == []
    fresh.vacuum(keep_versions=1, grace_s=0)
    assert fresh.versions() == [4] and ids(hfq.connect(root)["t"]) == oracle(*batches,
                                                                             rows(4, 900))


def test_time_travel_across_splits_compaction_and_vacuum(tmp_path):
    root = str(tmp_path / "db")
    t, batches = make(root, 3)
    t.append(rows(2, 7000))                     # version 4: day 2 has two files a partition
    t.compact()                                 # version 5: one file a partition
    expected = {1: oracle(batches[0]), 2: oracle(*batches[:2]), 3: oracle(*batches),
                4: oracle(*batches, rows(2, 7000)), 5: oracle(*batches, rows(2, 7000))}
    fresh = hfq.connect(root)["t"]
    for version, want in expected.items():
        assert ids(fresh, version=version) == want, version
        assert fresh.snapshot(version).rows == len(want)
    assert fresh.snapshot(5).partitions["d=v2024-01-02/sym=h0"].fragments[0].rows > 0
    removed = fresh.vacuum(keep_versions=2, grace_s=0)
    assert removed["versions_forgotten"] == 4 and removed["files_removed"] > 0
    assert ids(hfq.connect(root)["t"], version=4) == expected[4]
    assert hfq.connect(root).check() == []      # no piece a kept version needs went


def test_concurrent_commits_to_the_same_days_lose_and_duplicate_nothing(tmp_path):
    """A is held after building its pieces (one symbol on days 1 and 2), B commits to days 2
    and 3 from the same head; A's publish loses, it rebuilds on B's version: every row once
    (and the partitions of day 2 that neither touched stay)."""
    root = str(tmp_path / "db")
    _, batches = make(root, 2)
    gate = str(tmp_path / "gate")
    faults.arm("catalog.commit.before_publish", f"pause:{gate}@1")
    a_rows = pa.concat_tables([rows(1, 10_000, symbols=1), rows(2, 11_000, symbols=1)])
    b_rows = pa.concat_tables([rows(2, 20_000, symbols=2), rows(3, 21_000)])
    thread, result = in_thread(lambda: hfq.connect(root)["t"].append(a_rows))
    try:
        while not os.path.exists(gate + ".reached"):
            assert thread.is_alive(), result
            thread.join(0.01)
        assert hfq.connect(root)["t"].append(b_rows) == 3
    finally:
        pathlib.Path(gate).touch()
        thread.join(60)
        faults.disarm()
    assert result.get("value") == 4, result
    t = hfq.connect(root)["t"]
    assert ids(t) == oracle(*batches, a_rows, b_rows)
    parts = t.partitions()
    assert parts["partition"].n_unique() == parts.height == t.snapshot().partitions.__len__()
    assert parts["rows"].sum() == len(t) == len(oracle(*batches, a_rows, b_rows))
    assert ids(t, version=3) == oracle(*batches, b_rows)


# -- idempotent loads ---------------------------------------------------------------------------
def write_csv(path: pathlib.Path, table: pa.Table) -> str:
    frame = pl.from_arrow(table).with_columns(pl.col("sym").cast(pl.String))
    frame.write_csv(path)
    return str(path)


def test_load_csv_refuses_the_same_content_again(tmp_path):
    db = hfq.connect(str(tmp_path / "db"))
    db.create_table("t", SCHEMA, partition_by=SCHEME, sort_by=("sym", "id"))
    first = write_csv(tmp_path / "a.csv", rows(1, 0))
    other = write_csv(tmp_path / "b.csv", rows(2, 500))
    assert db.load_csv("t", first).version == 1
    copy = tmp_path / "copy.csv"
    copy.write_bytes(pathlib.Path(first).read_bytes())      # same content, another name
    for again in (first, str(copy)):
        with pytest.raises(DuplicateLoadError, match=r"loaded by version 1 \(from .*a\.csv\)"):
            db.load_csv("t", [other, again])
    t = db["t"]
    assert t.refresh().version == 1 and ids(t) == oracle(rows(1, 0))
    report = db.load_csv("t", [other, str(copy)], duplicates="skip")
    assert report.version == 2 and report.files == [other]
    assert db.load_csv("t", [first, other], duplicates="skip").version == 2   # nothing new
    assert db.load_csv("t", first, duplicates="append").version == 3
    assert ids(t.refresh()) == oracle(rows(1, 0), rows(2, 500), rows(1, 0))
    third = write_csv(tmp_path / "c.csv", rows(3, 900))
    with pytest.raises(DuplicateLoadError, match="this load"):
        hfq.connect(str(tmp_path / "db")).load_csv("t", [third, third])


def test_cli_ingest_twice_and_check_through_the_entry_point(tmp_path):
    root = str(tmp_path / "db")
    db = hfq.connect(root)
    db.create_table("t", SCHEMA, partition_by=SCHEME, sort_by=("sym", "id"))
    csv = write_csv(tmp_path / "a.csv", rows(1, 0))
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))

    def hfq_cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "hfq.cli", "--root", root, *args],
                              capture_output=True, text=True, env=env, timeout=120)

    assert hfq_cli("ingest", "t", csv, "--no-progress").returncode == 0
    again = hfq_cli("ingest", "t", csv, "--no-progress")
    assert again.returncode == 1 and "Traceback" not in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1 and "loaded by version 1" in again.stderr
    skipped = hfq_cli("ingest", "t", csv, "--duplicates", "skip", "--json")
    assert skipped.returncode == 0 and json.loads(skipped.stdout)["version"] == 1
    ok = hfq_cli("check", "--json")
    assert ok.returncode == 0 and json.loads(ok.stdout) == {"ok": True, "problems": [],
                                                            "unreachable": []}
    os.remove(os.path.join(root, "t", "_versions", f"{1:020d}.json"))
    bad = hfq_cli("check", "--json")
    assert bad.returncode == 1
    [problem] = json.loads(bad.stdout)["problems"]
    assert problem["version"] == "1" and "missing" in problem["problem"]
    assert hfq_cli("check", "--repair").returncode == 0
    assert hfq.connect(root)["t"].version == 0 and hfq_cli("check").returncode == 0
