"""Thin partitions (issue 16): cheap to write (dictionaries compacted, encodings reused within a
write) and, with a table's ``compact_after`` policy, cheap to read however thin the appends."""

from __future__ import annotations

import datetime as dt
import os

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

import hfq
from conftest import canonical
from hfq import faults, synth
from hfq.storage import encoding
from hfq.storage.fragment import stored_column
from hfq.write import compact_dictionaries

DAY = "2024-01-02"


def thin_slices(pieces: int, rows: int = 2000, symbols: int = 60) -> list[pa.Table]:
    """One day cut into ``pieces`` consecutive time slices (an hour of a live day at a time)."""
    day = synth.taq_table(dates=[DAY], rows_per_day=rows, symbols=symbols)
    day = day.take(pa.array(np.argsort(day.column("time").to_numpy(), kind="stable")))
    step = -(-day.num_rows // pieces)
    return [day.slice(i * step, step) for i in range(pieces)]


def make(db, name="q", **options):
    return db.create_table(name, hfq.schemas.TAQ, sort_by=("symbol", "time"),
                           partition_by=hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 4)),
                           **options)


def test_compact_after_keeps_thin_appends_one_file_per_partition(db):
    t = make(db, compact_after=2)
    slices = thin_slices(6)
    versions = []
    for piece in slices:
        versions.append(t.append(piece))
    parts = t.partitions()
    assert parts["files"].to_list() == [1] * parts.height
    everything = pa.concat_tables(slices)
    assert canonical(t.to_arrow()).equals(canonical(everything))
    ops = [t.snapshot(v).op for v in t.versions()]
    assert ops == ["create", "append"] + ["append", "compact"] * 5
    # time travel across the merges: each version holds exactly the slices appended by then
    for i, version in enumerate(versions):
        got = t.scan(version=version).to_arrow()
        assert canonical(got).equals(canonical(pa.concat_tables(slices[:i + 1])))
    # the rows of each partition are sorted, as one append would have left them
    for frame in t.scan().iter_arrow():
        df = pl.from_arrow(frame).with_columns(pl.col("symbol").cast(pl.String))
        assert df.equals(df.sort(["symbol", "time"], maintain_order=True))


def test_without_the_policy_appends_pile_up_and_compact_merges(db):
    t = make(db)
    for piece in thin_slices(3):
        t.append(piece)
    assert t.partitions()["files"].max() == 3
    assert [t.snapshot(v).op for v in t.versions()] == ["create"] + ["append"] * 3


def test_threshold_and_fragments_of_a_batch_or_more_stay(tmp_path):
    db = hfq.connect(str(tmp_path / "db"), batch_rows=128)
    t = make(db, compact_after=3)
    big, *small = thin_slices(5, rows=12_000)     # the first slice: > 128 rows a partition
    t.append(big)
    big_files = {f.file for f in t.snapshot().fragments()}
    assert all(f.rows >= 128 for f in t.snapshot().fragments())
    smaller = [s.slice(0, 100) for s in small]   # < 128 rows a partition
    t.append(smaller[0])
    t.append(smaller[1])
    assert t.partitions()["files"].max() == 3    # 1 big + 2 small: below the threshold
    t.append(smaller[2])                          # 3 small: merged into one
    fragments = t.snapshot().fragments()
    assert big_files <= {f.file for f in fragments}
    assert t.partitions()["files"].max() == 2
    expected = pa.concat_tables([big, *smaller[:3]])
    assert canonical(t.to_arrow()).equals(canonical(expected))


def test_merging_small_appends_keeps_the_arrival_order(tmp_path):
    """A table sorted by symbol only keeps each symbol's rows in arrival order: merging small
    fragments must neither move earlier rows after later ones (a small append, a big one,
    small ones: only the small run at the end merges, where it stood) nor reorder them, so
    SQL first/last and a scan see the ticks as they came."""
    db = hfq.connect(str(tmp_path / "db"), batch_rows=1000)
    t = db.create_table("quotes", hfq.schemas.TAQ, partition_by=hfq.Value("date"),
                        sort_by=("symbol",), compact_after=2)
    ticks = pl.from_arrow(synth.taq_table(dates=("2007-08-01",), rows_per_day=3000,
                                          symbols=1, seed=1)).sort("time")
    cuts = [0, 10, 2980, 2990, 2995, 3000]       # small, big, then three small appends
    for lo, hi in zip(cuts, cuts[1:]):
        t.append(ticks[lo:hi])
    rows = [f.rows for f in t.snapshot().fragments()]
    assert rows[:2] == [10, 2970] and sum(rows) == 3000 and len(rows) == 3, rows
    assert pl.from_arrow(t.to_arrow()).equals(ticks.select(t.schema.names))
    got = db.sql("SELECT first(time) AS f, last(time) AS l FROM quotes").collect()
    assert (got["f"][0], got["l"][0]) == (ticks["time"][0], ticks["time"][-1])


def test_what_replaces_fragments_stands_where_they_stood(tmp_path):
    """A change replacing the first two of three fragments puts its fragment first, not after
    the third (which a concurrent append may have added meanwhile)."""
    from hfq.write import Write
    db = hfq.connect(str(tmp_path / "db"))
    t = db.create_table("quotes", hfq.schemas.TAQ, partition_by=hfq.Value("date"),
                        sort_by=("symbol",))
    ticks = pl.from_arrow(synth.taq_table(dates=("2007-08-01",), rows_per_day=300,
                                          symbols=1, seed=2)).sort("time")
    for lo, hi in ((0, 100), (100, 200), (200, 300)):
        t.append(ticks[lo:hi])
    m = t.snapshot()
    (path, entry), = m.partitions.items()
    first, second, third = entry.fragments
    with Write(db.session, m) as write:
        nodes = db.session.nodes
        rows = pa.concat_tables(nodes.read_file(f, m.schema.arrow) for f in (first, second))
        write.stage(path, entry.key, write.files.write(db.session.nodes, path, entry.key, rows))
        write.replace(path, [first.file, second.file])
        write.commit("compact")
    after = t.refresh().snapshot().partitions[path].fragments
    assert [f.rows for f in after] == [200, 100] and after[1].file == third.file
    assert pl.from_arrow(t.to_arrow()).equals(ticks.select(t.schema.names))


def test_a_failed_merge_leaves_the_append_and_no_file(tmp_path, db):
    t = make(db, compact_after=2)
    first, second, third = thin_slices(3)
    t.append(first)
    faults.arm("compact.before_commit", "raise")
    try:
        version = t.append(second)             # the append commits, its merge fails
    finally:
        faults.disarm()
    assert t.snapshot(version).op == "append" and t.refresh().version == version
    assert t.partitions()["files"].max() == 2
    referenced = {f.file for v in t.versions() for f in t.snapshot(v).fragments()}
    root = db.session.store.root
    on_disk = {os.path.relpath(os.path.join(d, f), root)
               for d, _, fs in os.walk(os.path.join(root, "q", "data")) for f in fs}
    assert on_disk == referenced, "the failed merge left files behind"
    t.append(third)                             # the next append merges all three
    assert t.partitions()["files"].max() == 1
    assert canonical(t.to_arrow()).equals(canonical(pa.concat_tables([first, second, third])))


def test_csv_loads_follow_the_policy(tmp_path, db):
    t = make(db, compact_after=2)
    paths = []
    for i, piece in enumerate(thin_slices(3)):
        path = tmp_path / f"part{i}.csv"
        synth_frame = pl.from_arrow(piece).with_columns(
            pl.col("date").dt.strftime("%Y%m%d"), pl.col("time").cast(pl.String))
        synth_frame.write_csv(path)
        paths.append(path)
        db.load_csv("q", str(path))
    assert t.refresh().partitions()["files"].max() == 1
    expected = pl.concat([pl.read_csv(p, schema_overrides={"mmid": pl.String}) for p in paths])
    assert t.to_polars().height == expected.height


def test_compact_after_is_validated(db):
    with pytest.raises(ValueError, match="compact_after must be an int >= 2"):
        make(db, compact_after=1)


# -- cheap small files ------------------------------------------------------------------------
def test_compacted_dictionaries_keep_values_and_nulls():
    dictionary = pa.array([f"S{i}" for i in range(1000)])
    indices = pa.array([7, None, 999, 7, 3], pa.int32())
    table = pa.table({"s": pa.DictionaryArray.from_arrays(indices, dictionary),
                      "x": [1, 2, 3, 4, 5]})
    out = compact_dictionaries(table)
    assert out.column("s").to_pylist() == ["S7", None, "S999", "S7", "S3"]
    assert len(out.column("s").chunk(0).dictionary) == 3
    assert out.schema == table.schema


def test_encoding_hints_are_lossless_when_they_do_not_hold():
    """A write reuses the first partition's encodings for small ones; values the hint cannot
    hold (not decimals, NaN, -0.0, wider ints) fall back to measuring, bit for bit."""
    hints: dict[str, str] = {}
    rng = np.random.default_rng(3)
    first = pa.table({"px": np.round(rng.uniform(10, 100, 3000), 2),
                      "n": pa.array(rng.integers(0, 100, 3000), pa.int64())})
    encoding.encode(first, "zstd", 65536, hints)
    assert hints["px"].startswith("scale") and "narrow" in hints["n"]
    odd = pa.table({"px": [0.1 + 0.2, float("nan"), -0.0, 1e300] * 30,
                    "n": pa.array([2 ** 40, -5, 0, 7] * 30, pa.int64())})
    for table in (first, odd):
        physical = encoding.encode(table, "zstd", 65536, hints)
        back = encoding.decode(physical, table.schema)
        assert canonical(back).equals(canonical(table))


def test_thin_partitions_round_trip_exactly(db):
    t = make(db)
    dates = [(dt.date(2024, 1, 1) + dt.timedelta(days=d)).isoformat() for d in range(3)]
    data = synth.taq_table(dates=dates, rows_per_day=800, symbols=300)
    t.append(data)
    assert canonical(t.to_arrow()).equals(canonical(data))
    # each file stores only the symbols of its partition, not the 300 of the day
    for fragment in t.snapshot().fragments():
        with pa.memory_map(os.path.join(db.session.store.root, fragment.file)) as source:
            stored = stored_column(source, "symbol")
        assert len(stored.dictionary) == len(pa.compute.unique(stored.indices)) < 300
