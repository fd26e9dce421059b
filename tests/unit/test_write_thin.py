"""Thin partitions written together (issue 16): :meth:`hfq.write.FileWriter.write_thin` sorts,
compacts, encodes and summarises the rows of every thin partition of a spill at once.  Each
file must still hold exactly its partition's rows, in the order the one-file-at-a-time path
gives them (sorted, ties in arrival order), with its own dictionaries, statistics and
checksums -- checked here against polars on the rows read back, and against the per-file
path itself."""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

import hfq
from conftest import canonical
from hfq import write as write_module
from hfq.schema import DOUBLE, INT, LONG, STRING, SYMBOL, TIMESTAMP, Schema
from hfq.storage.fragment import stored_column

SCHEMA = Schema([("k", LONG), ("sym", SYMBOL), ("t", TIMESTAMP), ("px", DOUBLE),
                 ("n", INT), ("note", STRING)])
BUCKETS = 16


def blocks(count: int = 3, rows: int = 900, seed: int = 7) -> list[pa.Table]:
    """Blocks of rows whose symbol dictionaries differ, with nulls, NaN, -0.0 and many ties
    on (sym, t) across blocks (coarse times): ``n`` numbers the rows in arrival order."""
    rng = np.random.default_rng(seed)
    out, first = [], 0
    for b in range(count):
        names = [f"S{i:02d}" for i in rng.permutation(40)[:25 + b]]
        sym = pa.DictionaryArray.from_arrays(
            pa.array(rng.integers(0, len(names), rows), pa.int32(),
                     mask=rng.random(rows) < 0.05), pa.array(names))
        px = np.round(rng.uniform(10, 20, rows), 2)
        px[rng.random(rows) < 0.02] = np.nan
        px[rng.random(rows) < 0.02] = -0.0
        start = np.datetime64("2024-01-02T09:30:00", "ns")
        t = start + rng.integers(0, 30, rows).astype("timedelta64[s]")
        out.append(pa.table({
            "k": pa.array(rng.integers(0, 10_000, rows), pa.int64()), "sym": sym,
            "t": pa.array(t, pa.timestamp("ns")), "px": px,
            "n": pa.array(np.arange(first, first + rows), pa.int32()),
            "note": pa.array([None if i % 7 == 0 else f"r{i % 13}" for i in range(rows)])}))
        first += rows
    return out


def make(db: hfq.Database, name: str = "thin", **options) -> hfq.Table:
    return db.create_table(name, SCHEMA, partition_by=hfq.Hash("k", BUCKETS),
                           sort_by=("sym", "t"), **options)


def as_frame(table: pa.Table) -> pl.DataFrame:
    return pl.from_arrow(table).with_columns(pl.col("sym").cast(pl.String))


def stored(db: hfq.Database, fragment) -> pa.Table:
    return db.session.nodes.read_file(fragment, SCHEMA.arrow)


def test_each_file_holds_its_partitions_rows_sorted_with_ties_in_arrival_order(db):
    t = make(db)
    data = blocks()
    t.append(data)                                  # three blocks: one spill, one gather
    everything = pa.concat_tables(data).unify_dictionaries().combine_chunks()
    assert canonical(t.to_arrow()).equals(canonical(everything))
    codes, keys = t.snapshot().partition_by.route(everything)
    frame = as_frame(everything).with_columns(pl.Series("part", codes))
    fragments = list(t.snapshot().fragments())
    assert len(fragments) == BUCKETS
    assert all(f.rows <= write_module.THIN_ROWS for f in fragments)   # the thin path ran
    for path, entry in t.snapshot().partitions.items():
        (fragment,) = entry.fragments
        got = as_frame(stored(db, fragment))
        want = frame.filter(pl.col("part") == keys.index(tuple(entry.key))).drop("part") \
            .sort(["sym", "t"], nulls_last=False, maintain_order=True)
        assert canonical(got).equals(canonical(want)), path
        # row for row: sorted by (sym, t), rows that tie in their arrival order (n)
        assert got["n"].to_list() == want["n"].to_list(), path
    assert t.verify() == len(fragments)


def test_each_files_statistics_and_dictionaries_are_its_own(db):
    t = make(db)
    t.append(blocks(count=2, rows=700, seed=3))
    for fragment in t.snapshot().fragments():
        rows = as_frame(stored(db, fragment))
        (batch,) = fragment.batches
        assert batch.rows == rows.height == fragment.rows
        for column in ("sym", "t", "k"):
            values = rows[column]
            stats = batch.stats[column]
            low, high = values.drop_nulls().min(), values.drop_nulls().max()
            if column == "t":
                low, high = low.isoformat(), high.isoformat()
            assert stats is not None and (stats.min, stats.max, stats.nulls) == \
                (low, high, values.null_count()), (fragment.file, column)
        with pa.memory_map(f"{db.session.store.root}/{fragment.file}") as source:
            symbols = stored_column(source, "sym")
        used = set(rows["sym"].drop_nulls().to_list())
        assert sorted(symbols.dictionary.to_pylist()) == sorted(used)


def test_thin_files_match_the_one_file_at_a_time_path(tmp_path, monkeypatch):
    """The same appends through both paths: the same rows in the same order, the same
    statistics, file by file (the per-file path is the reference)."""
    data = blocks(count=2, rows=1200, seed=11)
    tables = {}
    for label, limit in (("thin", write_module.THIN_ROWS), ("per_file", 0)):
        monkeypatch.setattr(write_module, "THIN_ROWS", limit)
        db = hfq.connect(str(tmp_path / label))
        tables[label] = make(db)
        for block in data:
            tables[label].append(block)
    thin, per_file = (tables[k].snapshot().partitions for k in ("thin", "per_file"))
    assert thin.keys() == per_file.keys()
    for path in thin:
        for a, b in zip(thin[path].fragments, per_file[path].fragments, strict=True):
            assert [x.stats for x in a.batches] == [x.stats for x in b.batches], path
            assert as_frame(stored(tables["thin"].db, a)).equals(
                as_frame(stored(tables["per_file"].db, b)))


def test_encoded_thin_files_decode_each_on_its_own(db):
    """Partitions thin enough to be written together but long enough for the encodings
    (deltas, scaled prices) to pay: every file's deltas restart at its own first row."""
    t = db.create_table("q", hfq.schemas.TAQ, partition_by=hfq.Hash("symbol", 12),
                        sort_by=("symbol", "time"))
    days = [(dt.date(2024, 1, 1) + dt.timedelta(days=d)).isoformat() for d in range(2)]
    first = hfq.synth.taq_table(dates=days[:1], rows_per_day=16_000, symbols=40, seed=1)
    t.append(first)
    fragments = list(t.snapshot().fragments())
    assert all(f.rows <= write_module.THIN_ROWS for f in fragments)
    encodings = set()
    for fragment in fragments:
        with pa.memory_map(f"{db.session.store.root}/{fragment.file}") as source:
            schema = ipc.open_file(source).schema
        encodings |= {(f.metadata or {}).get(b"hfq.enc", b"").decode() for f in schema}
    assert any("delta" in e for e in encodings), encodings
    # the next write follows the same choices (kept for this table), on other values
    second = hfq.synth.taq_table(dates=days[1:], rows_per_day=16_000, symbols=40, seed=1)
    second = second.set_column(3, "bid", pa.array(np.random.default_rng(0).uniform(
        1, 2, second.num_rows)))                    # not decimals: the hint cannot hold
    t.append(second)
    expected = pa.concat_tables([first, second]).unify_dictionaries()
    assert canonical(t.to_arrow()).equals(canonical(expected))
    assert t.verify() == len(list(t.snapshot().fragments()))


@pytest.mark.parametrize("batch_rows", [64, 100_000])
def test_partitions_over_the_limit_take_the_per_file_path(tmp_path, batch_rows):
    """Only partitions of one record batch (and at most THIN_ROWS rows) are written
    together; the others, in the same spill, one by one -- all of them read back."""
    db = hfq.connect(str(tmp_path / "db"), batch_rows=batch_rows)
    t = make(db)
    data = blocks(count=1, rows=3000, seed=5)[0]
    big = pa.concat_tables([data.slice(0, 2000).set_column(
        0, "k", pa.array(np.zeros(2000, np.int64)))] * 3)   # one partition of 6,000 rows
    t.append([data, big])
    rows = sorted(f.rows for f in t.snapshot().fragments())
    assert rows[-1] > write_module.THIN_ROWS
    assert canonical(t.to_arrow()).equals(
        canonical(pa.concat_tables([data, big]).unify_dictionaries()))
    for fragment in t.snapshot().fragments():
        assert [b.rows for b in fragment.batches] == \
            [min(batch_rows, fragment.rows - i) for i in range(0, fragment.rows, batch_rows)]


def test_a_block_with_a_huge_dictionary_leaves_each_file_its_own_values(db):
    """A block whose dictionary holds far more values than its rows use (a big CSV block's
    symbols): each thin file stores only the symbols of its rows, and reads back exactly."""
    t = make(db)
    rng = np.random.default_rng(9)
    names = pa.array([f"N{i:06d}" for i in range(60_000)])
    rows = 600
    codes = rng.integers(0, len(names), rows)
    block = blocks(count=1, rows=rows, seed=9)[0].set_column(
        1, "sym", pa.DictionaryArray.from_arrays(
            pa.array(codes, pa.int32(), mask=rng.random(rows) < 0.05), names))
    t.append(block)
    assert canonical(t.to_arrow()).equals(canonical(block))
    for fragment in t.snapshot().fragments():
        with pa.memory_map(f"{db.session.store.root}/{fragment.file}") as source:
            symbols = stored_column(source, "sym")
        used = {v for v in symbols.to_pylist() if v is not None}
        assert sorted(symbols.dictionary.to_pylist()) == sorted(used)
