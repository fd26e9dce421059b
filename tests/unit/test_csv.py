"""CSV ingest: exact round trip with the raw TAQ format, errors with file:line:column, rejects,
bounded memory."""

from __future__ import annotations

import gzip
import os

import polars as pl
import pyarrow as pa
import pytest

import hfq
from conftest import canonical, csv_nulls
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
    assert canonical(quotes.scan().to_arrow()).equals(canonical(csv_nulls(expected)))


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


DATE_HELP = "(YYYYMMDD or YYYY-MM-DD)"
INT_HELP = "(decimal digits with an optional leading '-' only)"


@pytest.mark.parametrize("body, line, column, reason", [
    (GOOD + "B,20070801,6:24:34,x1,0,1,0,12,P,\n", 4, "bid", "value 'x1' is not a valid DOUBLE"),
    (GOOD + "B,20070832,6:24:34,1,0,1,0,12,P,\n", 4, "date",
     f"value '20070832' is not a valid DATE {DATE_HELP}"),
    (GOOD + "B,20070801,6:74:34,1,0,1,0,12,P,\n", 4, "time",
     "value '6:74:34' is not a valid SECOND (H:MM:SS or HH:MM:SS; a fraction only of zeros)"),
    (GOOD + "B,20070801,6:24:34,1,0,1,0,12,P\n", 4, "ex", "expected 10 fields, found 9"),
    (GOOD + "B,20070801,6:24:34,1,0,99999999999,0,12,P,\n", 4, "bidsiz",
     "value '99999999999' is not a valid INT (out of range -2147483648..2147483647)"),
    (GOOD + "B,20070801,6:24:34,1,0,1,0,12,PQ,\n", 4, "ex",
     "value 'PQ' is not a valid CHAR (longer than one character)"),
    # strict values (issue 14 item 4): a date read as a number once loaded 2000801 as 0200-08-01
    (GOOD + "B,2000801,6:24:34,1,0,1,0,12,P,\n", 4, "date",
     f"value '2000801' is not a valid DATE {DATE_HELP}"),
    (GOOD + "B,200700801,6:24:34,1,0,1,0,12,P,\n", 4, "date",      # was an OverflowError
     f"value '200700801' is not a valid DATE {DATE_HELP}"),
    (GOOD + "B,,6:24:34,1,0,1,0,12,P,\n", 4, "date",                # a partition column
     "value '' is not a valid DATE (a partition column cannot be empty)"),
    (GOOD + "B,2007-08-01T00,6:24:34,1,0,1,0,12,P,\n", 4, "date",
     f"value '2007-08-01T00' is not a valid DATE {DATE_HELP}"),
    (GOOD + "B,20070801,6:24:34,1,0,0x10,0,12,P,\n", 4, "bidsiz",   # Arrow reads 16
     f"value '0x10' is not a valid INT {INT_HELP}"),
    (GOOD + "B,20070801,6:24:34,1,0,1,0,0X1F,P,\n", 4, "mode",
     f"value '0X1F' is not a valid INT {INT_HELP}"),
    (GOOD + "B,20070801,6:24:34,1,0,+5,0,12,P,\n", 4, "bidsiz",
     f"value '+5' is not a valid INT {INT_HELP}"),
    (GOOD + "B,20070801,6:24:34,1,0,1_0,0,12,P,\n", 4, "bidsiz",
     f"value '1_0' is not a valid INT {INT_HELP}"),
    (GOOD + "B,20070801,6:24:34.5,1,0,1,0,12,P,\n", 4, "time",      # SECOND has no fraction
     "value '6:24:34.5' is not a valid SECOND (H:MM:SS or HH:MM:SS; a fraction only of zeros)"),
    (GOOD + "B,20070801,24:00:00,1,0,1,0,12,P,\n", 4, "time",
     "value '24:00:00' is not a valid SECOND (H:MM:SS or HH:MM:SS; a fraction only of zeros)"),
    (GOOD + "B,20070801,6:24:34,1_0,0,1,0,12,P,\n", 4, "bid", "value '1_0' is not a valid DOUBLE"),
    (GOOD + "  \n", 4, "symbol", "expected 10 fields, found 1"),   # blank is empty, not spaces
])
def test_bad_value_names_file_line_column_and_changes_nothing(tmp_path, quotes, db, body, line,
                                                              column, reason):
    db.load_csv("quotes", write(tmp_path / "ok.csv", HEADER + GOOD))
    before = quotes.version
    path = write(tmp_path / "bad.csv", HEADER + body)
    with pytest.raises(CsvError) as info:
        db.load_csv("quotes", path)
    err = info.value
    assert str(err) == f"{path}:{line}: column {column!r}: {reason}"
    assert (err.path, err.line, err.column) == (path, line, column)
    assert quotes.version == before and len(quotes) == 2


def test_bad_line_number_counts_across_blocks(tmp_path):
    db = hfq.connect(str(tmp_path / "db"), csv_block_bytes=1024, memory_budget=1 << 20)
    db.create_table("quotes", hfq.schemas.TAQ, partition_by=hfq.Value("date"))
    rows = [f"S{i % 7},20070801,9:{i % 60:02d}:00,1.5,1.6,1,1,12,N," for i in range(2000)]
    rows[1234] = "S1,20070801,9:30:00,1.5,oops,1,1,12,N,"
    path = write(tmp_path / "big.csv", HEADER + "\n".join(rows) + "\n")
    with pytest.raises(CsvError, match=rf"big.csv:{1234 + 2}: column 'ofr': value 'oops' is not"):
        db.load_csv("quotes", path)
    assert len(db["quotes"]) == 0


def test_header_mismatch(tmp_path, quotes, db):
    path = write(tmp_path / "h.csv", "symbol,date,time,bid,ofr,bidsiz,ofrsiz,mode,ex,venue\n")
    with pytest.raises(CsvError, match=r"h.csv:1: the header does not match the table: "
                                       r"missing columns \['mmid'\]; unexpected columns "
                                       r"\['venue'\]"):
        db.load_csv("quotes", path)


def test_a_refused_file_is_closed_while_its_error_is_held(tmp_path, quotes, db):
    """The error (and its traceback, kept by a notebook as ``sys.last_value``) must not hold
    the CSV open: a header refused before the first block, and a bad value mid-file."""
    header = write(tmp_path / "h.csv", "symbol,date,time,bid,ofr,bidsiz,ofrsiz,mode,ex,venue\n")
    value = write(tmp_path / "v.csv", HEADER + GOOD + "B,20070801,6:24:34,x1,0,1,0,12,P,\n")
    held = []
    for path in (header, value):
        with pytest.raises(CsvError) as info:
            db.load_csv("quotes", path)
        held.append(info.value)
        fds = [os.readlink(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd")
               if os.path.exists(f"/proc/self/fd/{fd}")]
        assert str(path) not in fds, f"{path} is still open"
    assert len(held) == 2


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
    assert canonical(t.scan().to_arrow()).equals(canonical(csv_nulls(expected)))


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


@pytest.mark.parametrize("bad, column", [("A,2024-01-02,1_000,1.0", "n"),
                                         ("A,2024-01-02,+5,1.0", "n"),
                                         ("A,2024-01-02,5,1_0", "x"),
                                         ("A,2024-01-02,\u0663,1.0", "n")])
@pytest.mark.parametrize("validators", ["exact", "blind"])
def test_values_arrow_refuses_are_located(tmp_path, db, monkeypatch, bad, column, validators):
    """The exact validators name these; with validators that see nothing wrong ("blind"),
    the loader still finds the line by asking Arrow itself, halving the block."""
    if validators == "blind":
        from hfq.ingest import csv as csv_module
        monkeypatch.setattr(csv_module, "check_field", lambda *a, **k: None)
    sch = hfq.schema.Schema({"symbol": hfq.schema.SYMBOL, "date": hfq.schema.DATE,
                             "n": hfq.schema.INT, "x": hfq.schema.DOUBLE})
    db.create_table("q", sch, partition_by=hfq.Value("date"), sort_by=("symbol",))
    body = "symbol,date,n,x\nA,2024-01-02,1,1.0\n" + bad + "\nB,2024-01-02,2,2.0\n"
    path = write(tmp_path / "d.csv", body)
    with pytest.raises(CsvError, match=rf"d.csv:3: column '{column}': value ") as info:
        db.load_csv("q", path)
    assert (info.value.line, info.value.column) == (3, column)
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


# -- strict values: every valid spelling loads exactly, blank lines anywhere ---------------------
MIXED = hfq.schema.Schema({"i": hfq.schema.LONG, "symbol": hfq.schema.SYMBOL,
                           "d": hfq.schema.DATE, "t": hfq.schema.SECOND, "tm": hfq.schema.TIME,
                           "ts": hfq.schema.DATETIME, "n": hfq.schema.INT,
                           "x": hfq.schema.DOUBLE, "b": hfq.schema.BOOL})


def _mixed_rows(n: int, seed: int = 7) -> tuple[str, pl.DataFrame]:
    """CSV text whose values use every documented spelling, with blank lines (also before
    the header, first in the data, CRLF) -- and the values it means, built independently."""
    import datetime as dt
    import random
    rnd = random.Random(seed)
    lines, truth = ["", "\r", "i,symbol,d,t,tm,ts,n,x,b\r", "", "\r"], []
    for i in range(n):
        day = dt.date(2024, 1, 1) + dt.timedelta(days=rnd.randrange(3))
        sec = rnd.randrange(86400)
        ms = rnd.randrange(1000)
        when = dt.datetime(2024, 1, 2) + dt.timedelta(seconds=rnd.randrange(-10**6, 10**6))
        num = rnd.randrange(-2**31, 2**31)
        x = rnd.choice([rnd.uniform(-1e6, 1e6), float(rnd.randrange(-99, 99)), 0.5e-300,
                        float("inf"), float("-inf"), 1e300])
        flag = rnd.random() < 0.5
        h, m, s = sec // 3600, sec // 60 % 60, sec % 60
        frac = rnd.choice(["", f".{ms // 100}", f".{ms // 10:02d}", f".{ms:03d}"])
        millis = sec * 1000 + (int(frac[1:].ljust(3, "0")) if frac else 0)
        offset = rnd.choice([None, 0, 2, -5])
        local = when + dt.timedelta(hours=offset or 0)
        ts_text = local.strftime(rnd.choice(["%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S"]))
        if offset is not None:
            ts_text += "Z" if offset == 0 and rnd.random() < 0.5 else f"{offset:+03d}:00"
        elif rnd.random() < 0.2:      # a date alone: midnight (its "-DD" is no offset)
            when = dt.datetime.combine(when.date(), dt.time())
            ts_text = when.strftime("%Y-%m-%d")
        fields = [str(i), rnd.choice(["A", "IBM", "BRK.B"]),
                  day.strftime(rnd.choice(["%Y%m%d", "%Y-%m-%d"])),
                  rnd.choice([f"{h}:{m:02d}:{s:02d}", f"{h:02d}:{m:02d}:{s:02d}"]),
                  f"{h:02d}:{m:02d}:{s:02d}{frac}", ts_text,
                  rnd.choice([str(num), f" {num}", f"{num}\t"]),
                  rnd.choice([repr(x), f"{x:.17e}", f"{x:.17E}"]) if abs(x) != float("inf")
                  else rnd.choice(["inf", "Infinity", "INF"]) if x > 0 else "-inf",
                  rnd.choice(["true", "True", "TRUE", "1"] if flag else ["false", "FALSE", "0"])]
        lines.append(",".join(fields) + rnd.choice(["", "\r"]))
        if rnd.random() < 0.05:
            lines.append(rnd.choice(["", "\r"]))
        truth.append({"i": i, "symbol": fields[1], "d": day, "t": dt.time(h, m, s),
                      "tm": millis, "ts": when, "n": num, "x": x, "b": flag})
    frame = pl.DataFrame(truth).with_columns(
        pl.col("tm").cast(pl.Int64).mul(1_000_000).cast(pl.Time),
        pl.col("ts").dt.replace_time_zone("UTC").dt.cast_time_unit("ms"))
    return "\n".join(lines) + "\n\n", frame


def test_every_documented_spelling_loads_exactly(tmp_path):
    """Compact and ISO dates, H:MM:SS and HH:MM:SS, millisecond TIMEs, offsets and Z, signed
    and padded ints, exponents and infinities, blank lines everywhere (before the header, as
    the first data line, CRLF, at block ends): the loaded values are the ones the generator
    meant, and equal to polars' own parse of the same text."""
    db = hfq.connect(str(tmp_path / "db"), csv_block_bytes=4096, memory_budget=1 << 20)
    t = db.create_table("m", MIXED, partition_by=hfq.Value("d"), sort_by=("i",))
    text, truth = _mixed_rows(3000)
    path = tmp_path / "mixed.csv"
    path.write_bytes(text.encode())
    assert db.load_csv("m", str(path)).rows == 3000
    got = t.scan().to_polars().with_columns(pl.col("symbol").cast(pl.String),
                                            pl.col("ts").dt.cast_time_unit("ms")).sort("i")
    assert canonical(got).equals(canonical(truth.select(got.columns)))
    # an independent parse of the same file by polars (its own number and date parsers)
    ref = pl.read_csv(path, infer_schema=False).filter(pl.col("i").is_not_null())
    ref = ref.select(
        pl.col("i").cast(pl.Int64),
        pl.coalesce(pl.col("d").str.to_date("%Y%m%d", strict=False),
                    pl.col("d").str.to_date("%Y-%m-%d", strict=False)).alias("d"),
        pl.col("n").str.strip_chars().cast(pl.Int32),
        pl.col("x").str.strip_chars().cast(pl.Float64),
    ).sort("i")
    assert canonical(got.select(ref.columns)).equals(canonical(ref))


def test_first_data_line_blank_loads(tmp_path, quotes, db):
    """The issue's case: the format used to be guessed from the first data line."""
    path = write(tmp_path / "blank.csv", HEADER + "\n" + GOOD)
    assert db.load_csv("quotes", path).rows == 2
    bad = write(tmp_path / "blank_bad.csv",
                HEADER + "\n\n" + GOOD + "\nB,2000801,6:24:34,1,0,1,0,12,P,\n")
    with pytest.raises(CsvError) as info:
        db.load_csv("quotes", bad)
    assert str(info.value) == (f"{bad}:7: column 'date': value '2000801' is not a valid DATE "
                               f"{DATE_HELP}")
    assert len(quotes.refresh()) == 2


@pytest.mark.parametrize("line, column, reason", [
    ("A,2024-01-02 09:30:00.5,1,09:30:00,1", "ts",
     "value '2024-01-02 09:30:00.5' is not a valid DATETIME (finer than a second)"),
    ("A,20070-01-01 00:00:00,1,09:30:00,1", "ts",
     "value '20070-01-01 00:00:00' is not a valid DATETIME "
     "(YYYY-MM-DD[ hh:mm:ss[.f]][Z|+hh:mm])"),
    ("A,,1,09:30:00,1", "ts", "value '' is not a valid DATETIME (a partition column cannot be "
                              "empty)"),
    ("A,2024-01-02 09:30:00,,09:30:00,1", "n",
     "value '' is not a valid LONG (a partition column cannot be empty)"),
    ("A,2024-01-02 09:30:00,1,09:30:00.1234,1", "t",
     "value '09:30:00.1234' is not a valid TIME (H:MM:SS or HH:MM:SS, optionally .fff; "
     "further digits only zeros)"),
    ("B,2300-01-01 00:00:00,1,09:30:00,1", "ns",
     "value '2300-01-01 00:00:00' is not a valid TIMESTAMP (outside 1677-09-21..2262-04-11, "
     "the range of nanoseconds in 64 bits)"),
])
def test_timestamps_times_and_key_columns_are_strict(tmp_path, db, line, column, reason):
    sch = hfq.schema.Schema({"dev": hfq.schema.SYMBOL, "ts": hfq.schema.DATETIME,
                             "n": hfq.schema.LONG, "t": hfq.schema.TIME,
                             "ns": hfq.schema.TIMESTAMP})
    t = db.create_table("r", sch, partition_by=hfq.Compo(hfq.Value("ts", by="day"),
                                                         hfq.Hash("n", 3)), sort_by=("dev",))
    head = "dev,ts,n,t,ns\nA,2024-01-02 09:30:00,1,09:30:00.123,2024-01-02 09:30:00.000000001\n"
    if column == "ns":
        line = "B,2024-01-02 09:30:00,1,09:30:00," + line.split(",")[1]
    path = write(tmp_path / "r.csv", head + line + "\n")
    with pytest.raises(CsvError) as info:
        db.load_csv("r", path)
    assert str(info.value) == f"{path}:3: column {column!r}: {reason}"
    assert len(t.refresh()) == 0


def test_float_nan_from_pandas_stays_nan(db):
    """The documented choice (hfq/ingest/frames.py): NaN is a value and stays NaN; pd.NA in a
    nullable column is null.  pyarrow's from_pandas alone would have made the NaN null."""
    import numpy as np
    import pandas as pd
    sch = hfq.schema.Schema({"k": hfq.schema.LONG, "x": hfq.schema.DOUBLE,
                             "y": hfq.schema.DOUBLE, "f": hfq.schema.FLOAT})
    t = db.create_table("nan", sch, partition_by=hfq.Hash("k", 2), sort_by=("k",))
    frame = pd.DataFrame({"k": [1, 2, 3], "x": [1.5, np.nan, -np.inf],
                          "y": pd.array([1.0, None, 2.0], dtype="Float64"),
                          "f": np.array([np.nan, 1, 2], dtype=np.float32)})
    t.append(frame)
    got = t.to_polars().sort("k")
    expected = pl.from_pandas(frame, nan_to_null=False)
    assert got["x"].is_nan().to_list() == [False, True, False] and got["x"].null_count() == 0
    assert got["y"].null_count() == 1 and got["y"].is_null().to_list() == [False, True, False]
    assert canonical(got).equals(canonical(expected.with_columns(pl.col("f").cast(pl.Float32))))
    assert t.to_pandas().sort_values("k")["x"].isna().tolist() == [False, True, False]
