"""CSV ingest: exact round trip with the raw TAQ format, errors with file:line:column, rejects,
bounded memory."""

from __future__ import annotations

import gzip
import os

import polars as pl
import pyarrow as pa
import pytest
from conftest import canonical

import hfq
from hfq import synth
from hfq.errors import CsvError

HEADER = "symbol,date,time,bid,ofr,bidsiz,ofrsiz,mode,ex,mmid\n"
GOOD = "A,20070801,6:24:34,1,0,1,0,12,P,\nIBM,20070801,9:30:00,101.25,101.3,5,3,12,N,FLOW\n"


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return str(path)


def test_raw_taq_csv_loads_exactly(tmp_path, quotes, db):
    path = tmp_path / "taq_20070801.csv"
    synth.write_taq_csv(str(path), dates=("2007-08-01",), rows_per_day=30_000, symbols=80)
    expected = pa.Table.from_batches(synth.taq_batches(dates=("2007-08-01",),
                                                       rows_per_day=30_000, symbols=80))
    report = db.load_csv("quotes", str(path))
    assert report.rows == 30_000 and report.version == 1
    assert report.bytes == os.path.getsize(path)
    assert canonical(quotes.scan().to_arrow()).equals(canonical(expected))


def test_globs_many_files_small_blocks_and_gzip(tmp_path):
    db = hfq.connect(str(tmp_path / "db"), csv_block_bytes=8192, memory_budget=1 << 20)
    t = db.create_table("quotes", hfq.schemas.TAQ,
                        partition_by=hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 3)),
                        sort_by=("symbol", "time"))
    files = synth.taq_csv_files(str(tmp_path / "csv"), dates=("2007-08-01", "2007-08-02"),
                                rows_per_day=3000, symbols=40)
    gz = tmp_path / "csv" / "extra.csv.gz"
    with open(files[0], "rb") as src, gzip.open(gz, "wb") as dst:
        dst.write(src.read())
    report = db.load_csv("quotes", [str(tmp_path / "csv" / "taq_*.csv"), str(gz)])
    assert report.rows == 9000
    expected = pl.concat([pl.read_csv(files[0], infer_schema=False),
                          pl.read_csv(files[1], infer_schema=False),
                          pl.read_csv(files[0], infer_schema=False)])
    got = t.scan().to_polars()
    assert got.height == expected.height
    assert sorted(got["symbol"].cast(pl.String).to_list()) == sorted(expected["symbol"].to_list())
    # small blocks and a tiny budget spill; the load still commits one sorted file a partition
    assert t.partitions()["files"].max() == 1


@pytest.mark.parametrize("body, line, column, reason", [
    (GOOD + "B,20070801,6:24:34,x1,0,1,0,12,P,\n", 4, "bid", "'x1' is not a valid DOUBLE"),
    (GOOD + "B,20070832,6:24:34,1,0,1,0,12,P,\n", 4, "date", "'20070832' is not a valid DATE"),
    (GOOD + "B,20070801,6:74:34,1,0,1,0,12,P,\n", 4, "time", "is not a time of day"),
    (GOOD + "B,20070801,6:24:34,1,0,1,0,12,P\n", 4, "ex", "expected 10 fields, found 9"),
    (GOOD + "B,20070801,6:24:34,1,0,99999999999,0,12,P,\n", 4, "bidsiz", "out of range"),
    (GOOD + "B,20070801,6:24:34,1,0,1,0,12,PQ,\n", 4, "ex", "longer than one character"),
])
def test_bad_value_names_file_line_column_and_changes_nothing(tmp_path, quotes, db, body, line,
                                                              column, reason):
    db.load_csv("quotes", write(tmp_path / "ok.csv", HEADER + GOOD))
    before = quotes.version
    path = write(tmp_path / "bad.csv", HEADER + body)
    with pytest.raises(CsvError) as info:
        db.load_csv("quotes", path)
    err = info.value
    assert str(err).startswith(f"{path}:{line}: column {column!r}: ")
    assert reason in str(err)
    assert (err.path, err.line, err.column) == (path, line, column)
    assert quotes.version == before and len(quotes) == 2


def test_bad_line_number_counts_across_blocks(tmp_path):
    db = hfq.connect(str(tmp_path / "db"), csv_block_bytes=1024, memory_budget=1 << 20)
    db.create_table("quotes", hfq.schemas.TAQ, partition_by=hfq.Value("date"))
    rows = [f"S{i % 7},20070801,9:{i % 60:02d}:00,1.5,1.6,1,1,12,N," for i in range(2000)]
    rows[1234] = "S1,20070801,9:30:00,1.5,oops,1,1,12,N,"
    path = write(tmp_path / "big.csv", HEADER + "\n".join(rows) + "\n")
    with pytest.raises(CsvError, match=rf"big.csv:{1234 + 2}: column 'ofr': 'oops'"):
        db.load_csv("quotes", path)
    assert len(db["quotes"]) == 0


def test_header_mismatch(tmp_path, quotes, db):
    path = write(tmp_path / "h.csv", "symbol,date,time,bid,ofr,bidsiz,ofrsiz,mode,ex,venue\n")
    with pytest.raises(CsvError, match=r"h.csv:1: the header does not match the table: "
                                       r"missing columns \['mmid'\]; unexpected columns "
                                       r"\['venue'\]"):
        db.load_csv("quotes", path)


def test_missing_file_is_a_clear_error(tmp_path, quotes, db):
    with pytest.raises(CsvError, match="no file matches"):
        db.load_csv("quotes", str(tmp_path / "nope_*.csv"))


def test_skip_writes_rejects_and_loads_the_rest(tmp_path, quotes, db):
    body = (GOOD + "B,20070801,6:24:34,x1,0,1,0,12,P,\n" + "C,20070801,7:00:00,2,2.1,1,1,12,N,\n"
            + "D,2007-13-01,7:00:00,2,2.1,1,1,12,N,\n")
    path = write(tmp_path / "mixed.csv", HEADER + body)
    rejects = tmp_path / "rejects.csv"
    report = db.load_csv("quotes", path, on_error="skip", reject_path=str(rejects))
    assert report.rows == 3 and report.rejected == 2
    assert report.reject_path == str(rejects)
    rej = pl.read_csv(rejects, infer_schema=False)
    assert rej["line"].to_list() == ["4", "6"]
    assert rej["column"].to_list() == ["bid", "date"]
    assert sorted(quotes.scan().to_polars()["symbol"].cast(pl.String)) == ["A", "C", "IBM"]


def test_headerless_and_iso_dates(tmp_path, quotes, db):
    path = write(tmp_path / "iso.csv", "A,2007-08-01,09:30:00,1,2,1,1,12,N,\n")
    report = db.load_csv("quotes", path, header=False)
    assert report.rows == 1
    assert str(quotes.scan().to_polars()["date"][0]) == "2007-08-01"


def test_readings_csv_with_offsets(tmp_path, db):
    t = db.create_table("readings", hfq.schemas.READINGS,
                        partition_by=hfq.Value("time", by="day"), sort_by=("device_id", "time"))
    path = tmp_path / "readings.csv"
    synth.write_readings_csv(str(path), days=1, devices=5, interval_s=3600)
    expected = pa.Table.from_batches(synth.readings_batches(days=1, devices=5, interval_s=3600))
    db.load_csv("readings", str(path))
    assert canonical(t.scan().to_arrow()).equals(canonical(expected))


def test_csv_five_times_the_memory_budget(tmp_path):
    """A CSV 5x the budget loads; the writer never buffers more than its share of the budget."""
    budget = 256 << 10
    db = hfq.connect(str(tmp_path / "db"), memory_budget=budget, csv_block_bytes=32 << 10)
    t = db.create_table("quotes", hfq.schemas.TAQ,
                        partition_by=hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 4)),
                        sort_by=("symbol", "time"))
    path = tmp_path / "big.csv"
    n = synth.write_taq_csv(str(path), dates=("2007-08-01",), rows_per_day=40_000, symbols=50)
    assert os.path.getsize(path) > 5 * budget
    from hfq import write as writer_module
    peaks = []
    original = writer_module.PartitionWriter._spill

    def spy(self):
        peaks.append(self._buffered)
        return original(self)

    writer_module.PartitionWriter._spill = spy
    try:
        report = db.load_csv("quotes", str(path))
    finally:
        writer_module.PartitionWriter._spill = original
    assert report.rows == n == len(t)
    assert peaks, "the writer never had to spill: the test does not exercise the budget"
    block_rows_bytes = 3 * (32 << 10) * 4  # one parsed block of 32 KiB text, generously
    assert max(peaks) <= budget // 2 + block_rows_bytes
    expected = pa.Table.from_batches(synth.taq_batches(dates=("2007-08-01",),
                                                       rows_per_day=40_000, symbols=50))
    assert canonical(t.scan().to_arrow()).equals(canonical(expected))


def test_empty_times_and_timestamps_are_nulls(tmp_path, db):
    sch = hfq.schema.Schema({"symbol": hfq.schema.SYMBOL, "date": hfq.schema.DATE,
                             "time": hfq.schema.SECOND, "ts": hfq.schema.DATETIME,
                             "px": hfq.schema.DOUBLE})
    t = db.create_table("q", sch, partition_by=hfq.Value("date"), sort_by=("symbol", "time"))
    path = write(tmp_path / "nt.csv", "symbol,date,time,ts,px\n"
                 "A,2024-01-02,09:30:00,2024-01-02 09:30:00,1.5\n"
                 "A,2024-01-02,,2024-01-02 09:30:01,\n"
                 "A,2024-01-02,09:30:02,,2.5\n")
    assert db.load_csv("q", path).rows == 3
    got = t.scan().to_polars()
    assert got["time"].null_count() == 1 and got["ts"].null_count() == 1
    assert got["px"].null_count() == 1


@pytest.mark.parametrize("bad", ["A,2024-01-02,1_000,1.0", "A,2024-01-02,+5,1.0",
                                 "A,2024-01-02,5,1_0", "A,20240102,5,1.0",
                                 "A,2024-01-02,\u0663,1.0"])
def test_values_only_arrow_refuses_are_still_located(tmp_path, db, bad):
    """The validators accept these; the loader then asks Arrow itself, line by line."""
    sch = hfq.schema.Schema({"symbol": hfq.schema.SYMBOL, "date": hfq.schema.DATE,
                             "n": hfq.schema.INT, "x": hfq.schema.DOUBLE})
    db.create_table("q", sch, partition_by=hfq.Value("date"), sort_by=("symbol",))
    body = "symbol,date,n,x\nA,2024-01-02,1,1.0\n" + bad + "\nB,2024-01-02,2,2.0\n"
    path = write(tmp_path / "d.csv", body)
    with pytest.raises(CsvError, match=r"d.csv:3: column ") as info:
        db.load_csv("q", path)
    assert info.value.line == 3
    report = db.load_csv("q", path, on_error="skip", reject_path=str(tmp_path / "rej.csv"))
    assert (report.rows, report.rejected) == (2, 1)


def test_line_numbers_of_many_bad_blocks_read_the_file_about_once(tmp_path, monkeypatch):
    db = hfq.connect(str(tmp_path / "db"), csv_block_bytes=2048, memory_budget=1 << 20)
    db.create_table("quotes", hfq.schemas.TAQ, partition_by=hfq.Value("date"))
    rows = [f"S{i % 7},20070801,9:{i % 60:02d}:00,1.5,1.6,1,1,12,N," for i in range(3000)]
    for i in range(0, 3000, 97):
        rows[i] = "S1,20070801,9:30:00,1.5,bad,1,1,12,N,"
    path = write(tmp_path / "many.csv", HEADER + "\n".join(rows) + "\n")
    from hfq.ingest import csv as csv_module
    read = []
    original = csv_module._BlockReader.line_at

    def counting(self, offset):
        before = self._checkpoint[0] if offset >= self._checkpoint[0] else 0
        read.append(offset - before)
        return original(self, offset)

    monkeypatch.setattr(csv_module._BlockReader, "line_at", counting)
    report = db.load_csv("quotes", path, on_error="skip", reject_path=str(tmp_path / "r.csv"))
    assert report.rejected == len(range(0, 3000, 97))
    rejected = pl.read_csv(tmp_path / "r.csv", infer_schema=False)["line"].cast(int).to_list()
    assert rejected == [i + 2 for i in range(0, 3000, 97)]
    assert sum(read) <= os.path.getsize(path)
