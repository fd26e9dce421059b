"""Tables: round trips, pruning == filtering, snapshots, versions, compaction, verification."""

from __future__ import annotations

import datetime as dt
import os

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

import hfq
from conftest import canonical, csv_nulls
from hfq import synth
from hfq.errors import (
    CorruptPartitionError,
    SchemaMismatchError,
    TableExistsError,
    TableNotFoundError,
)


def taq(rows=20_000, symbols=60, dates=("2007-08-01", "2007-08-02"), seed=0) -> pa.Table:
    return pa.Table.from_batches(synth.taq_batches(dates=dates, rows_per_day=rows,
                                                   symbols=symbols, seed=seed))


def test_round_trip_all_formats(quotes):
    data = taq()
    assert quotes.append(data) == 1
    assert len(quotes) == data.num_rows
    out = quotes.scan().to_arrow()
    assert out.schema == hfq.schemas.TAQ.arrow
    assert canonical(out).equals(canonical(data))
    assert canonical(quotes.scan().to_polars()).equals(canonical(data))
    pdf = quotes.scan().to_pandas()
    assert len(pdf) == data.num_rows
    assert str(pdf["symbol"].dtype) == "category"
    assert str(pdf["time"].dtype).startswith("timedelta64")
    np.testing.assert_array_equal(np.sort(pdf["bid"].to_numpy()),
                                  np.sort(data.column("bid").to_numpy()))


def test_rows_sorted_inside_each_partition(quotes):
    quotes.append(taq())
    for table in quotes.scan().iter_arrow():
        df = pl.from_arrow(table).with_columns(pl.col("symbol").cast(pl.String))
        assert df.equals(df.sort(["symbol", "time"], maintain_order=True))


@pytest.mark.parametrize("kwargs", [
    {"symbols": ["IBM", "MSFT"]},
    {"dates": "2007-08-02"},
    {"dates": ("2007-08-01", "2007-08-01"), "symbols": "GE"},
    {"dates": (None, "2007-08-01")},
    {"dates": ("20070802", None), "where": pl.col("bid") > 50},
    {"where": (pl.col("ofr") < pl.col("bid")) | (pl.col("bid") == 0)},
    {"symbols": ["NOT_A_SYMBOL"]},
    {"columns": ["time", "bid"], "symbols": ["AAPL"]},
])
def test_pruning_returns_exactly_the_filtered_full_scan(quotes, kwargs):
    data = taq()
    quotes.append(data)
    expected = pl.from_arrow(data).with_columns(pl.col("symbol").cast(pl.String))
    if "symbols" in kwargs:
        syms = kwargs["symbols"]
        expected = expected.filter(pl.col("symbol").is_in([syms] if isinstance(syms, str)
                                                          else syms))
    if "dates" in kwargs:
        d = kwargs["dates"]
        lo, hi = (d, d) if isinstance(d, str) else d
        parse = lambda x: dt.datetime.strptime(x.replace("-", ""), "%Y%m%d").date()  # noqa: E731
        if lo:
            expected = expected.filter(pl.col("date") >= parse(lo))
        if hi:
            expected = expected.filter(pl.col("date") <= parse(hi))
    if "where" in kwargs:
        expected = expected.filter(kwargs["where"])
    if "columns" in kwargs:
        expected = expected.select(kwargs["columns"])
    scan = quotes.scan(**kwargs)
    got = scan.to_arrow()
    assert canonical(got).equals(canonical(expected))
    assert scan.count() == expected.height
    if "symbols" in kwargs or "dates" in kwargs:
        assert scan.plan.rows < data.num_rows  # something was actually pruned


def test_explain_reports_kept_and_pruned(quotes):
    quotes.append(taq())
    text = quotes.scan(dates="2007-08-01", symbols=["IBM"]).explain()
    assert "partitions: 1 kept, 9 pruned of 10" in text
    assert "record batches:" in text and "rows to read:" in text


def test_one_symbol_reads_few_batches(tmp_path):
    db = hfq.connect(str(tmp_path), batch_rows=1000)
    t = db.create_table("q", hfq.schemas.TAQ, partition_by=hfq.Value("date"),
                        sort_by=("symbol", "time"))
    t.append(taq(rows=50_000, symbols=200, dates=("2007-08-01",)))
    plan = t.scan(symbols=["IBM"]).plan
    assert plan.batches_total == 50
    assert sum(len(b) if b is not None else 50 for u in plan.units for b in u.batches) <= 3


def test_snapshot_isolation_and_time_travel(quotes):
    first, second = taq(seed=1), taq(seed=2)
    quotes.append(first)
    scan = quotes.scan()                      # planned against version 1
    quotes.append(second)                     # version 2 commits meanwhile
    assert scan.to_arrow().num_rows == first.num_rows
    assert quotes.scan().to_arrow().num_rows == first.num_rows + second.num_rows
    assert quotes.scan(version=1).count() == first.num_rows
    assert quotes.versions() == [0, 1, 2]


def test_multi_file_partitions_read_sorted_and_compact(quotes):
    quotes.append(taq(seed=1, rows=5000))
    quotes.append(taq(seed=2, rows=5000))
    assert quotes.partitions()["files"].max() == 2
    merged = quotes.scan().to_arrow()
    for table in quotes.scan().iter_arrow():
        df = pl.from_arrow(table).with_columns(pl.col("symbol").cast(pl.String))
        assert df.equals(df.sort(["symbol", "time"], maintain_order=True))
    version = quotes.compact()
    assert quotes.partitions()["files"].max() == 1
    assert canonical(quotes.scan().to_arrow()).equals(canonical(merged))
    assert quotes.scan(version=version - 1).count() == merged.num_rows


def test_partitions_listing(quotes):
    quotes.append(taq())
    parts = quotes.partitions()
    assert parts.columns == ["partition", "key", "rows", "bytes", "files", "nodes", "version",
                             "checksum"]
    assert parts["nodes"].to_list() == [[quotes.db.session.nodes.local]] * 10   # the embedded node
    assert parts["rows"].sum() == 40_000
    assert parts.height == 10
    assert set(parts["version"]) == {1}


def test_verify_detects_corruption(quotes, db):
    quotes.append(taq(rows=2000))
    assert quotes.verify() == 10
    victim = next(iter(quotes.snapshot().partitions.values())).fragments[0].file
    path = db.session.store.path(victim)
    with open(path, "r+b") as f:
        f.seek(100)
        f.write(b"\xff\xfe")
    with pytest.raises(CorruptPartitionError, match="corrupt"):
        quotes.verify()


def test_tables_create_drop(db, quotes):
    assert db.tables() == ["quotes"]
    assert "quotes" in db and "nope" not in db
    with pytest.raises(TableExistsError):
        db.create_table("quotes", hfq.schemas.TAQ, partition_by=hfq.Value("date"))
    db.drop_table("quotes")
    assert db.tables() == []
    with pytest.raises(TableNotFoundError, match="no table 'quotes'"):
        db["quotes"]
    with pytest.raises(KeyError):          # also a builtin KeyError
        db["quotes"]


def test_append_frames_of_every_kind(quotes):
    data = taq(rows=1000)
    quotes.append(pl.from_arrow(data))
    quotes.append(data.to_pandas())
    quotes.append(data.to_reader(max_chunksize=300))
    quotes.append(data.select(list(reversed(data.column_names))))   # column order is free
    assert len(quotes) == 4 * data.num_rows


def test_empty_append_and_empty_scan(quotes):
    assert quotes.scan().to_arrow().num_rows == 0
    assert quotes.scan().to_arrow().schema == hfq.schemas.TAQ.arrow
    quotes.append(hfq.schemas.TAQ.arrow.empty_table())
    assert len(quotes) == 0


def test_schema_mismatch_lists_every_difference(quotes):
    bad = taq(rows=100).drop_columns(["mmid"]).append_column("extra", pa.array([1] * 200))
    bad = bad.set_column(3, "bid", pa.array(["x"] * 200))
    with pytest.raises(SchemaMismatchError) as info:
        quotes.append(bad)
    message = str(info.value)
    assert "missing columns: mmid" in message
    assert "unexpected columns: extra" in message
    assert "column 'bid'" in message and "DOUBLE" in message
    assert len(quotes) == 0


def test_encodings_round_trip_bit_exact(db):
    sch = hfq.schema.Schema({"d": hfq.schema.DATE, "s": hfq.schema.SYMBOL,
                             "p": hfq.schema.DOUBLE, "q": hfq.schema.DOUBLE,
                             "n": hfq.schema.LONG, "t": hfq.schema.TIMESTAMP})
    t = db.create_table("e", sch, partition_by=hfq.Value("d"), sort_by=("s", "t"))
    rng = np.random.default_rng(3)
    n = 100_000
    prices = np.round(rng.normal(100, 5, n), 4)
    prices[::97] = 214748.3647
    wild = rng.normal(0, 1e6, n)
    wild[5], wild[6], wild[7] = -0.0, np.nan, np.inf
    data = pa.table({
        "d": pa.array([dt.date(2020, 1, 1)] * n, pa.date32()),
        "s": pa.array(np.array(["A", "B", "C"])[rng.integers(0, 3, n)]).dictionary_encode(),
        "p": prices, "q": wild, "n": np.cumsum(rng.integers(-5, 100, n)),
        "t": pa.array(np.sort(rng.integers(0, 10**15, n)), pa.timestamp("ns")),
    })
    t.append(data)
    assert canonical(t.scan().to_arrow()).equals(canonical(data))
    files = [f for p in t.snapshot().partitions.values() for f in p.fragments]
    import pyarrow.ipc as ipc
    with pa.memory_map(db.session.store.path(files[0].file)) as src:
        meta = {f.name: (f.metadata or {}).get(b"hfq.enc", b"").decode()
                for f in ipc.open_file(src).schema}
    assert meta["p"].startswith("alp:4")       # exact 4-decimal prices are stored as integers
    assert meta["q"].startswith("plain")        # arbitrary doubles are left alone


def test_partition_column_nulls_are_rejected(db):
    sch = hfq.schema.Schema({"d": hfq.schema.DATE, "x": hfq.schema.INT})
    t = db.create_table("n", sch, partition_by=hfq.Value("d"))
    with pytest.raises(SchemaMismatchError, match="null"):
        t.append(pa.table({"d": pa.array([None, dt.date(2020, 1, 1)], pa.date32()),
                           "x": pa.array([1, 2], pa.int32())}))
    assert len(t) == 0


def test_readings_partitioned_by_day_and_device_range(db):
    t = db.create_table("readings", hfq.schemas.READINGS,
                        partition_by=hfq.Compo(hfq.Value("time", by="day"),
                                               hfq.Range("device_id", ("demo000010",
                                                                       "demo000020"))),
                        sort_by=("device_id", "time"))
    data = pa.Table.from_batches(synth.readings_batches(days=2, devices=30, interval_s=600))
    t.append(data)
    utc_days = pl.from_arrow(data)["time"].dt.date().n_unique()   # the -05 offset spills over
    assert len(t.partitions()) == 3 * utc_days
    one_day = t.scan(dates="2016-11-16", symbols=["demo000015"]).to_polars()
    expected = pl.from_arrow(data).filter(
        (pl.col("time").dt.date() == dt.date(2016, 11, 16))
        & (pl.col("device_id").cast(pl.String) == "demo000015"))
    assert canonical(one_day).equals(canonical(expected))


def test_settings_from_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("HFQ_ROOT", str(tmp_path / "envroot"))
    monkeypatch.setenv("HFQ_COMPRESSION", "lz4")
    db = hfq.connect()
    assert db.session.store.root == os.path.abspath(tmp_path / "envroot")
    assert db.settings.compression == "lz4"
    monkeypatch.setenv("HFQ_COMPRESSION", "brotli")
    with pytest.raises(ValueError, match="compression must be one of"):
        hfq.connect()


def test_fsspec_root_and_csv_url():
    """A root and CSV files behind an fsspec URL (the in-memory filesystem stands in for S3)."""
    import fsspec
    fs = fsspec.filesystem("memory")
    fs.rm("/hfqtest", recursive=True) if fs.exists("/hfqtest") else None
    with fs.open("/hfqtest/csv/taq_20070801.csv", "wb") as fh:
        synth.write_taq_csv(fh, dates=("2007-08-01",), rows_per_day=3000, symbols=30)
    db = hfq.connect("memory://hfqtest/db")
    t = db.create_table("quotes", hfq.schemas.TAQ,
                        partition_by=hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 3)),
                        sort_by=("symbol", "time"))
    report = db.load_csv("quotes", "memory://hfqtest/csv/taq_*.csv")
    assert report.rows == 3000
    expected = taq(rows=3000, symbols=30, dates=("2007-08-01",))
    assert canonical(t.scan().to_arrow()).equals(canonical(csv_nulls(expected)))
    assert db.tables() == ["quotes"]
    assert t.verify() == 3
    fs.rm("/hfqtest", recursive=True)
