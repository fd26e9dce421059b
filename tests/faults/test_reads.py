"""Checksummed reads: a damaged partition file is a named error, never a wrong answer.

One embedded database per codec (zstd, lz4, none) holds a small TAQ table in record batches of
400 rows.  Each trial flips one bit of one stored file -- in its header and schema, its
dictionaries, each record batch, its footer -- runs a read, restores the file, and checks the
outcome against the answer computed before any damage (the oracle):

* a full read (``to_arrow``, ``map_reduce``) touches every byte: it must raise
  :class:`~hfq.errors.CorruptPartitionError` naming table, partition, file, node (and the
  record batch when the flip is inside one);
* a point read (one symbol) must raise exactly when the flip is in what it decodes (the
  file's frame or one of its batches) and otherwise return the oracle's rows.

Truncated, missing and undecodable files are named errors too, and so are files recorded
before batch checksums existed (checked against the whole-file CRC-32).
"""

from __future__ import annotations

import os
import random
import zlib
from dataclasses import replace

import polars as pl
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest
from faultkit import canonical

import hfq
from hfq import reduce as hr
from hfq.catalog.records import BatchStats, Fragment
from hfq.errors import CorruptPartitionError
from hfq.storage.fragment import read_fragment

CODECS = ("zstd", "lz4", "none")
DAYS = ("2007-08-01", "2007-08-02")
FLIPS_PER_REGION = 3


class Damaged:
    """One database with its table, the oracle answers, and a way to flip bits of a file."""

    def __init__(self, root: str, codec: str) -> None:
        # no partition cache on the node: every map_reduce reads the files again
        self.db = hfq.connect(root, compression=codec, batch_rows=400, threads=2,
                              cache_bytes=0)
        self.table = self.db.create_table(
            "quotes", hfq.schemas.TAQ, partition_by=hfq.Value("date"),
            sort_by=("symbol", "time"))
        self.table.append(hfq.synth.taq_table(dates=DAYS, rows_per_day=2000, symbols=12,
                                              seed=5))
        self.full = canonical(self.table.to_arrow())
        self.symbol = self.full["symbol"][1000]
        self.point = canonical(self.table.to_arrow(symbols=[self.symbol]))
        # the file of the first day, and what the point read decodes of it
        part = self.table.snapshot().partitions[self.table.scan(dates=DAYS[0]).plan.units[0]
                                                .partition]
        self.fragment = part.fragments[0]
        self.path = os.path.join(self.db.session.store.root, self.fragment.file)
        unit = next(u for u in self.table.scan(symbols=[self.symbol]).plan.units
                    if u.partition == self.table.scan(dates=DAYS[0]).plan.units[0].partition)
        kept = unit.batches[0]
        self.touched = set(range(len(self.fragment.batches)) if kept is None else kept)
        with open(self.path, "rb") as f:
            self.original = f.read()

    def regions(self) -> dict[str, list[tuple[int, int]]]:
        """Byte ranges of the file by kind: header (magic + schema), dictionaries, each
        record batch, footer."""
        spans = [b.span for b in self.fragment.batches]
        assert all(s is not None for s in spans)
        first = min(s[0] for s in spans)
        last = max(s[0] + s[1] for s in spans)
        dictionaries, header_end = [], first
        source = pa.BufferReader(self.original)
        source.seek(8)
        while source.tell() < first:
            start = source.tell()
            message = ipc.read_message(source)
            if message.type == "dictionary":
                dictionaries.append((start, source.tell()))
                header_end = min(header_end, start)
        if not dictionaries:   # format 2 keeps each file's dictionaries in its schema
            schema = ipc.open_file(pa.BufferReader(self.original)).schema
            for field in schema:
                raw = (field.metadata or {}).get(b"hfq.dict")
                at = self.original.find(raw) if raw else -1
                if 0 <= at < header_end:
                    dictionaries.append((at, at + len(raw)))
        out = {"header": [(0, header_end)], "dictionaries": dictionaries,
               "footer": [(last, len(self.original))]}
        for i, (off, n) in enumerate(spans):
            out[f"batch {i}"] = [(off, off + n)]
        return out

    def flip(self, pos: int, bit: int) -> None:
        data = bytearray(self.original)
        data[pos] ^= 1 << bit
        with open(self.path, "wb") as f:
            f.write(bytes(data))

    def restore(self) -> None:
        with open(self.path, "wb") as f:
            f.write(self.original)


@pytest.fixture(scope="module", params=CODECS)
def damaged(request, tmp_path_factory):
    d = Damaged(str(tmp_path_factory.mktemp(request.param)), request.param)
    yield d
    d.db.close()


def positions(d: Damaged, seed: int) -> list[tuple[str, int, int]]:
    """(region, byte, bit) flips: a few per region, deterministic."""
    rng = random.Random(seed)
    out = []
    for name, ranges in d.regions().items():
        assert ranges, name   # every kind of region exists in these files
        for _ in range(FLIPS_PER_REGION):
            lo, hi = rng.choice(ranges)
            out.append((name, rng.randrange(lo, hi), rng.randrange(8)))
    return out


def assert_named(exc: CorruptPartitionError, d: Damaged, region: str) -> None:
    message = str(exc)
    assert exc.file == d.fragment.file and d.fragment.file in message
    assert "table 'quotes'" in message
    assert f"partition '{d.fragment.file.split('/')[2]}'" in message
    assert exc.node == d.db.session.nodes.local and exc.node in message
    if region.startswith("batch ") and exc.batch is not None:
        assert exc.batch == int(region.split()[1]), (region, message)
        assert f"record batch {exc.batch}" in message


def test_the_files_have_every_kind_of_region(damaged):
    regions = damaged.regions()
    assert len([r for r in regions if r.startswith("batch ")]) == 5
    assert regions["dictionaries"] and regions["header"][0][1] > 8
    # the regions cover the file exactly once: nothing is left unverified
    covered = sorted(r for name, ranges in regions.items() for r in ranges
                     if name != "dictionaries" or r[0] >= regions["header"][0][1])
    gaps = [(a[1], b[0]) for a, b in zip(covered, covered[1:]) if a[1] != b[0]]
    assert covered[0][0] == 0 and covered[-1][1] == len(damaged.original)
    # between header/dictionaries and the batches there may be padding the header owns
    assert all(b - a < 64 for a, b in gaps), gaps


def test_a_flipped_bit_anywhere_is_a_named_error_on_a_full_read(damaged):
    trials = positions(damaged, seed=1)
    for region, pos, bit in trials:
        damaged.flip(pos, bit)
        try:
            with pytest.raises(CorruptPartitionError) as info:
                damaged.table.to_arrow()
            assert_named(info.value, damaged, region)
        finally:
            damaged.restore()
    assert canonical(damaged.table.to_arrow()).equals(damaged.full)


def test_a_point_read_checks_what_it_touches_and_answers_right_otherwise(damaged):
    errors = answers = 0
    for region, pos, bit in positions(damaged, seed=2):
        damaged.flip(pos, bit)
        touched = not region.startswith("batch ") or int(region.split()[1]) in damaged.touched
        try:
            if touched:
                with pytest.raises(CorruptPartitionError) as info:
                    damaged.table.to_arrow(symbols=[damaged.symbol])
                assert_named(info.value, damaged, region)
                errors += 1
            else:
                got = canonical(damaged.table.to_arrow(symbols=[damaged.symbol]))
                assert got.equals(damaged.point), (region, pos, bit)
                answers += 1
        finally:
            damaged.restore()
    assert errors and answers   # both cases really happened


def test_map_reduce_on_a_damaged_file_is_a_named_error(damaged):
    total = damaged.table.map_reduce(lambda df: hr.Sum().of(df["bid"]), hr.Sum(),
                                     columns=["bid"])
    assert total == pytest.approx(damaged.full["bid"].sum(), rel=1e-12)
    for region, pos, bit in positions(damaged, seed=3)[::4]:
        damaged.flip(pos, bit)
        try:
            with pytest.raises(CorruptPartitionError) as info:
                damaged.table.map_reduce(lambda df: hr.Sum().of(df["bid"]), hr.Sum(),
                                         columns=["bid"])
            assert_named(info.value, damaged, region)
        finally:
            damaged.restore()


def test_a_truncated_or_missing_file_is_a_named_error(damaged):
    for keep in (0, 7, len(damaged.original) // 2, len(damaged.original) - 1):
        with open(damaged.path, "wb") as f:
            f.write(damaged.original[:keep])
        try:
            with pytest.raises(CorruptPartitionError, match="truncated") as info:
                damaged.table.to_arrow()
            assert_named(info.value, damaged, "file")
        finally:
            damaged.restore()
    os.remove(damaged.path)
    try:
        with pytest.raises(CorruptPartitionError, match="missing") as info:
            damaged.table.to_arrow(symbols=[damaged.symbol])
        assert_named(info.value, damaged, "file")
    finally:
        damaged.restore()


def test_compaction_reads_are_checked_and_leave_the_table_as_it_was(damaged):
    t = damaged.table
    t.append(hfq.synth.taq_table(dates=DAYS[:1], rows_per_day=50, symbols=3, seed=9))
    version = t.version
    region, pos, bit = positions(damaged, seed=4)[0]
    damaged.flip(pos, bit)
    try:
        with pytest.raises(CorruptPartitionError):
            t.compact()
        assert t.refresh().version == version
    finally:
        damaged.restore()


# -- the storage layer alone: old records, undecodable bytes --------------------------------
def _record(tmp_path, codec: str = "zstd") -> tuple[hfq.Database, Fragment, str]:
    db = hfq.connect(str(tmp_path / "db"), compression=codec, batch_rows=100)
    t = db.create_table("t", hfq.schema.Schema({"x": hfq.schema.LONG, "s": hfq.schema.SYMBOL}),
                        partition_by=hfq.Hash("x", 1), sort_by=("x",))
    t.append(pa.table({"x": list(range(500)), "s": ["a", "b"] * 250}))
    fragment = next(iter(t.snapshot().fragments()))
    return db, fragment, os.path.join(db.session.store.root, fragment.file)


def test_files_recorded_without_batch_checksums_are_checked_whole(tmp_path):
    db, fragment, path = _record(tmp_path)
    old = replace(fragment, batches=tuple(BatchStats(b.rows, b.stats) for b in fragment.batches))
    logical = db["t"].schema.arrow
    assert read_fragment(db.session.store, old, logical, batches=[1]).num_rows == 100
    with open(path, "rb") as f:
        data = bytearray(f.read())
    data[fragment.batches[4].span[0] + 50] ^= 8     # a batch the read below does not touch
    with open(path, "wb") as f:
        f.write(bytes(data))
    # the new record checks only batch 1: intact; the old one checks the whole file
    assert read_fragment(db.session.store, fragment, logical, batches=[1]).num_rows == 100
    with pytest.raises(CorruptPartitionError, match="CRC-32"):
        read_fragment(db.session.store, old, logical, batches=[1], node="n1")


def test_bytes_that_pass_the_checksum_but_do_not_decode_are_a_named_error(tmp_path):
    db, fragment, path = _record(tmp_path)
    junk = b"ARROW1\x00\x00" + bytes(range(256)) * 4
    with open(path, "wb") as f:
        f.write(junk)
    forged = Fragment(fragment.file, fragment.rows, len(junk), zlib.crc32(junk))
    with pytest.raises(CorruptPartitionError, match="cannot be decoded") as info:
        read_fragment(db.session.store, forged, db["t"].schema.arrow, node="n1")
    assert isinstance(info.value.__cause__, pa.ArrowException)   # the original, chained
    assert "table 't'" in str(info.value) and "on node n1" in str(info.value)


def test_records_keep_their_checksums_through_json_and_planning(tmp_path):
    db, fragment, _ = _record(tmp_path)
    assert all(b.span is not None and b.crc32 is not None for b in fragment.batches)
    assert Fragment.from_json(fragment.to_json()) == fragment
    shipped = fragment.without_stats()
    assert [(b.span, b.crc32) for b in shipped.batches] == \
        [(b.span, b.crc32) for b in fragment.batches]
    assert all(not b.stats for b in shipped.batches)
    # an old record (no checksum keys) still reads back, without checksums
    old = fragment.to_json()
    for b in old["batches"]:
        del b["span"], b["crc32"]
    assert all(b.span is None for b in Fragment.from_json(old).batches)
    frame = pl.from_arrow(db["t"].to_arrow())
    assert frame.height == 500
