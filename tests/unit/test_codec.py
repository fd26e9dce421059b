"""A table's own codec (``create_table(..., compression=...)``): kept with the table across
reconnects, used by every writer of the table whatever the database's setting, checked when
given, invisible to readers.

The codec a file was written with is read from its bytes, not from anything hfq records: Arrow
IPC compresses each buffer as one frame, and LZ4 and zstd frames start with their own magic
numbers (LZ4 frame ``04 22 4D 18``, zstd ``28 B5 2F FD``, both little-endian).
"""

from __future__ import annotations

import dataclasses
import os

import polars as pl
import pyarrow as pa
import pytest
from polars.testing import assert_frame_equal

import hfq
from conftest import canonical
from hfq import synth
from hfq.errors import ManifestError

DAY = "2024-01-02"
MAGIC = {"lz4": b"\x04\x22\x4d\x18", "zstd": b"\x28\xb5\x2f\xfd"}


def codecs_of(db: hfq.Database, table: str) -> set[str]:
    """The codecs the current version's files of ``table`` were compressed with, from their
    bytes ("none": a file holding neither frame)."""
    found = set()
    snapshot = db[table].snapshot()
    files = [f.file for p in snapshot.partitions.values() for f in p.fragments]
    assert files, f"table {table!r} has no files"
    for rel in files:
        with open(os.path.join(db.session.store.root, rel), "rb") as fh:
            data = fh.read()
        assert data[:6] == b"ARROW1"   # an IPC file, read as it is on disk
        kinds = {name for name, magic in MAGIC.items() if magic in data}
        assert len(kinds) <= 1, f"{rel} mixes codecs {kinds}"
        declared = (pa.ipc.open_file(pa.py_buffer(data)).schema.metadata or {}).get(
            b"hfq.codec")
        if declared is not None:   # format 2: the codec is used only where it pays
            assert kinds <= {declared.decode()}, f"{rel} declares {declared}, holds {kinds}"
            kinds = {declared.decode()}
        found |= kinds or {"none"}
    return found


def day(rows: int = 3000, symbols: int = 12) -> pa.Table:
    return synth.taq_table(dates=[DAY], rows_per_day=rows, symbols=symbols)


def make(db: hfq.Database, name: str = "q", **options) -> hfq.Table:
    return db.create_table(name, hfq.schemas.TAQ, sort_by=("symbol", "time"),
                           partition_by=hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 3)),
                           **options)


@pytest.mark.parametrize("codec", ["lz4", "none"])
def test_the_table_codec_outlives_the_session_and_beats_the_database_setting(tmp_path, codec):
    root = str(tmp_path / "db")
    db = hfq.connect(root)                           # the database's default: zstd
    rows = day()
    make(db, compression=codec).append(rows.slice(0, 1500))
    make(db, "plain").append(rows)
    assert codecs_of(db, "q") == {codec}
    assert codecs_of(db, "plain") == {"zstd"}
    db.close()

    again = hfq.connect(root, compression="zstd")   # another session, asking for zstd
    t = again["q"]
    assert t.snapshot().options["compression"] == codec
    t.append(rows.slice(1500))
    assert codecs_of(again, "q") == {codec}
    # the rows read back are the rows written, whatever the codec
    assert canonical(t.to_arrow()).equals(canonical(rows))


def test_a_table_without_its_own_codec_follows_the_database(tmp_path):
    db = hfq.connect(str(tmp_path / "db"), compression="lz4")
    make(db).append(day())
    assert codecs_of(db, "q") == {"lz4"}
    assert "compression" not in db["q"].snapshot().options


def test_every_writer_of_the_table_uses_its_codec(tmp_path):
    db = hfq.connect(str(tmp_path / "db"))
    rows = day(4000, 20)
    # CSV load
    path = str(tmp_path / "day.csv")
    synth.write_taq_csv(path, dates=(DAY,), rows_per_day=4000, symbols=20)
    make(db, "loaded", compression="lz4")
    db.load_csv("loaded", path)
    assert codecs_of(db, "loaded") == {"lz4"}
    assert db["loaded"].to_polars().height == 4000
    # appends, then compact() merging them
    t = make(db, "appended", compression="lz4")
    t.append(rows.slice(0, 2000))
    t.append(rows.slice(2000))
    assert set(t.partitions()["files"].to_list()) == {2}
    t.compact()
    assert set(t.partitions()["files"].to_list()) == {1}
    assert codecs_of(db, "appended") == {"lz4"}
    assert canonical(t.to_arrow()).equals(canonical(rows))
    # the compaction policy of small appends (its own write, after the append's)
    thin = make(db, "thin", compression="lz4", compact_after=2)
    for start in range(0, 4000, 1000):
        thin.append(rows.slice(start, 1000))
    assert "compact" in [thin.snapshot(v).op for v in thin.versions()]
    assert codecs_of(db, "thin") == {"lz4"}
    assert canonical(thin.to_arrow()).equals(canonical(rows))


def test_a_codec_that_does_not_exist_is_refused_with_its_name(db):
    with pytest.raises(ValueError, match=r"table 'q': compression must be one of "
                                         r"zstd, lz4, none, not 'gzip'"):
        make(db, compression="gzip")
    assert "q" not in db
    with pytest.raises(ValueError, match="compression must be one of"):
        make(db, compression=4)


def test_a_manifest_naming_an_unknown_codec_stops_writes_naming_the_table(db):
    t = make(db, compression="lz4")
    t.append(day())
    snapshot = t.snapshot()
    damaged = dataclasses.replace(snapshot, options={**snapshot.options, "compression": "brotli"})
    from hfq.write import Write
    with pytest.raises(ManifestError, match=r"table 'q' .*compression.*'brotli'"):
        Write(db.session, damaged)
    # what was written stays readable
    assert t.to_polars().height == 3000
    assert pl.from_arrow(t.to_arrow()).height == 3000


def test_minute_bars_make_their_table_lz4_unless_told(tmp_path):
    """Bars are derived and re-made cheaply: their table is created lz4 (written ~2x faster
    than zstd); ``compression=`` picks another codec, None the database's; the bars read
    back are polars' bars of the same rows."""
    from hfq import analytics as ha
    db = hfq.connect(str(tmp_path / "db"), threads=2)
    try:
        rows = day(6000, 8)
        quotes = make(db)
        quotes.append(rows)
        written = ha.minute_bars(quotes, "bars", bar="5m", progress=False)
        ha.minute_bars(quotes, "bars_z", bar="5m", progress=False, compression="zstd")
        ha.minute_bars(quotes, "bars_db", bar="5m", progress=False, compression=None)
        assert [codecs_of(db, name) for name in ("bars", "bars_z", "bars_db")] == \
            [{"lz4"}, {"zstd"}, {"zstd"}]
        assert db["bars"].snapshot().options["compression"] == "lz4"
        five = (pl.col("time").cast(pl.Int64) // 300_000_000_000 * 300_000_000_000)
        frame = pl.from_arrow(rows).sort(pl.col("symbol").cast(pl.String), "time",
                                         maintain_order=True)
        mid = (pl.col("bid") + pl.col("ofr")) / 2
        want = (frame.group_by(pl.col("symbol").cast(pl.String), "date",
                               five.cast(pl.Time).alias("time"), maintain_order=True)
                .agg(pl.col("bid").mean(), pl.col("ofr").mean(), mid.first().alias("open"),
                     mid.max().alias("high"), mid.min().alias("low"),
                     mid.last().alias("close"), pl.len().cast(pl.Int64).alias("count"))
                .sort("symbol", "time"))
        for name in ("bars", "bars_z"):
            got = (db[name].to_polars().with_columns(pl.col("symbol").cast(pl.String),
                                                     pl.col("time").cast(pl.Time))
                   .sort("symbol", "time").select(want.columns))
            assert got.height == written == want.height
            assert_frame_equal(got, want, check_exact=False, rel_tol=1e-12)
        # a rerun writes into the table as it was made: lz4 still
        ha.minute_bars(quotes, "bars", bar="5m", progress=False, compression="zstd")
        assert codecs_of(db, "bars") == {"lz4"} and len(db["bars"]) == written
    finally:
        db.close()
