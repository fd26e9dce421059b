"""CSV loads in one pass (issue 25): one expansion of the paths, every file read once (its
SHA-256 taken while it is parsed), one NULL rule for every type, and what hfq writes loads back
unchanged.  DuckDB reads the same files as the oracle."""

from __future__ import annotations

import datetime as dt
import os
import threading

import duckdb
import fsspec
import polars as pl
import pyarrow as pa
import pytest
from fsspec.implementations.local import LocalFileSystem

import hfq
from conftest import canonical
from hfq.errors import DuplicateLoadError
from hfq.schema import CHAR, DATE, DOUBLE, INT, SECOND, STRING, SYMBOL, TIME, Schema


class CountingFS(LocalFileSystem):
    """The local disk, counting the opens and the bytes read of every file."""

    protocol = "countfs"
    root_marker = "/"
    lock = threading.Lock()
    opens: dict[str, int] = {}
    bytes_read: dict[str, int] = {}
    globs = 0

    @classmethod
    def _strip_protocol(cls, path):   # noqa: ANN001, ANN206 - fsspec's signature
        path = path[len("countfs://"):] if str(path).startswith("countfs://") else path
        return super()._strip_protocol(path)

    def glob(self, path, **kwargs):   # noqa: ANN001, ANN201
        with self.lock:
            CountingFS.globs += 1
        return super().glob(path, **kwargs)

    def _open(self, path, mode="rb", **kwargs):   # noqa: ANN001, ANN202
        fh = super()._open(path, mode, **kwargs)
        name = self._strip_protocol(path)
        with self.lock:
            CountingFS.opens[name] = CountingFS.opens.get(name, 0) + 1
        read, readinto = fh.read, getattr(fh, "readinto", None)

        def counted_read(n=-1):   # noqa: ANN001, ANN202
            data = read(n)
            with self.lock:
                CountingFS.bytes_read[name] = CountingFS.bytes_read.get(name, 0) + len(data)
            return data

        fh.read = counted_read
        if readinto is not None:
            def counted_readinto(buffer):   # noqa: ANN001, ANN202
                n = readinto(buffer)
                with self.lock:
                    CountingFS.bytes_read[name] = CountingFS.bytes_read.get(name, 0) + (n or 0)
                return n
            fh.readinto = counted_readinto
        return fh


@pytest.fixture
def counting():
    fsspec.register_implementation("countfs", CountingFS, clobber=True)
    CountingFS.opens, CountingFS.bytes_read, CountingFS.globs = {}, {}, 0
    yield CountingFS


SCHEMA = Schema({"symbol": SYMBOL, "date": DATE, "time": SECOND, "bid": DOUBLE, "size": INT,
                 "ex": CHAR, "mmid": SYMBOL, "note": STRING})


def _table(db: hfq.Database, name: str = "t") -> hfq.Table:
    return db.create_table(name, SCHEMA,
                           partition_by=hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 2)),
                           sort_by=("symbol", "time"))


def _write(path, rows: list[str]) -> str:
    path.write_text("symbol,date,time,bid,size,ex,mmid,note\n" + "\n".join(rows) + "\n")
    return str(path)


def test_each_file_is_read_once_while_it_is_hashed(tmp_path, db, counting):
    t = _table(db)
    files = [_write(tmp_path / f"d{i}.csv", [f"S{j},2024-01-0{i},9:30:0{j},1.5,{j},P,FLOW,x"
                                            for j in range(i + 1)]) for i in range(1, 4)]
    report = db.load_csv("t", f"countfs://{tmp_path}/d*.csv")
    assert report.rows == 2 + 3 + 4 and len(t.refresh()) == 9
    assert counting.globs == 1, "the paths were expanded more than once"
    for path in files:   # one open, every byte once: the hash came from the parse
        size = os.path.getsize(path)
        assert counting.opens.get(path) == 1, counting.opens
        assert counting.bytes_read.get(path) == size, (counting.bytes_read, size)
    # the ledger has each file's SHA-256: loading one again is refused
    with pytest.raises(DuplicateLoadError, match="loaded by version 1"):
        db.load_csv("t", f"countfs://{files[0]}")


def test_a_file_of_a_loaded_size_is_hashed_first_and_skipped_unread(tmp_path, db, counting):
    _table(db)
    first = _write(tmp_path / "a.csv", ["A,2024-01-02,9:30:00,1.5,1,P,FLOW,x"])
    db.load_csv("t", first)
    same = _write(tmp_path / "b.csv", ["A,2024-01-02,9:30:00,1.5,1,P,FLOW,x"])   # same bytes
    report = db.load_csv("t", f"countfs://{same}", duplicates="skip")
    assert report.rows == 0 and report.version == 1
    assert counting.opens == {same: 1}, "hashed once to find it loaded, and not parsed"


def test_empty_fields_are_null_for_every_type_as_duckdb_reads_them(tmp_path, db):
    t = _table(db)
    path = _write(tmp_path / "n.csv", [
        'A,2024-01-02,9:30:00,1.5,1,P,FLOW,x',
        'A,2024-01-02,9:30:01,,,,,',            # every optional field empty
        'B,2024-01-02,9:30:02,2.5,3,"","",""',   # quoted empties
        'B,2024-01-02,,3.5,4,Q,EDGX," "',       # an empty time; a blank is text
    ])
    db.load_csv("t", path)
    got = t.refresh().to_polars().sort("symbol", "bid", nulls_last=True)
    want = pl.from_arrow(duckdb.sql(
        f"SELECT * FROM read_csv('{path}', types={{'time': 'TIME', 'size': 'INTEGER'}}) "
        "ORDER BY symbol, bid NULLS LAST").arrow())
    for column in ("mmid", "ex", "note", "bid", "size"):
        assert got[column].cast(pl.String).to_list() == \
            want[column].cast(pl.String).to_list(), column
    counts = db.sql("SELECT count(mmid) AS m, count(ex) AS e, count(note) AS n, "
                    "count(time) AS t FROM t").collect().row(0)
    assert counts == duckdb.sql(f"SELECT count(mmid), count(ex), count(note), count(time) "
                                f"FROM read_csv('{path}')").fetchall()[0] == (2, 2, 2, 3)


def test_empty_text_can_be_kept_as_empty_text(tmp_path, db):
    t = _table(db)
    path = _write(tmp_path / "e.csv", ['A,2024-01-02,9:30:00,1.5,1,,,',
                                       'A,2024-01-02,9:30:01,,,P,"",'])
    db.load_csv("t", path, empty_text="empty")
    got = t.refresh().to_polars().sort("time")
    assert got["mmid"].cast(pl.String).to_list() == ["", ""]
    assert got["note"].to_list() == ["", ""] and got["ex"].cast(pl.String).to_list() == ["", "P"]
    assert got["bid"].to_list() == [1.5, None]   # numbers: empty is null all the same


def test_an_empty_partition_key_is_refused_naming_the_line(tmp_path, db):
    t = _table(db)
    path = _write(tmp_path / "k.csv", ['A,2024-01-02,9:30:00,1.5,1,P,,',
                                       ',2024-01-02,9:30:01,1,1,P,,'])
    with pytest.raises(hfq.errors.CsvError, match=r"k\.csv:3: column 'symbol'.*cannot be empty"):
        db.load_csv("t", path)
    assert len(t.refresh()) == 0


def test_what_hfq_writes_loads_back_unchanged(tmp_path, db):
    schema = Schema({"symbol": SYMBOL, "date": DATE, "time": SECOND, "t_ms": TIME,
                     "bid": DOUBLE, "mmid": SYMBOL})
    src = db.create_table("src", schema, partition_by=hfq.Value("date"), sort_by=("symbol",))
    src.append(pa.table({
        "symbol": ["A", "B", "C"], "date": [dt.date(2024, 1, 2)] * 3,
        "time": [dt.time(0, 0), dt.time(9, 0), dt.time(23, 59, 59)],
        "t_ms": [dt.time(0, 0), dt.time(9, 30, 0, 123000), dt.time(23, 59, 59, 999000)],
        "bid": [1.5, float("nan"), None], "mmid": ["FLOW", None, "EDGX"]}))
    plain, engine = str(tmp_path / "plain.csv"), str(tmp_path / "engine.csv")
    assert src.scan().to_csv(plain) == 3
    # an engine result: times come back as polars' nanosecond times (09:00:00.000000000)
    assert db.sql("SELECT symbol, date, time, t_ms, bid, mmid FROM src ORDER BY symbol"
                  ).to_csv(engine) == 3
    assert "09:00:00.000000000" in (tmp_path / "engine.csv").read_text()
    for name, path in (("back1", plain), ("back2", engine)):
        back = db.create_table(name, schema, partition_by=hfq.Value("date"), sort_by=("symbol",))
        db.load_csv(name, path)
        got, want = back.refresh().to_polars(), src.to_polars()
        assert got.schema == want.schema, name
        assert canonical(got).equals(canonical(want)), (name, got.rows(), want.rows())


@pytest.mark.parametrize("text, ok", [("09:00:00.000000000", True), ("09:00:00.0", True),
                                      ("09:00:00.000000001", False), ("09:00:00.5", False)])
def test_a_second_takes_a_fraction_only_of_zeros(tmp_path, db, text, ok):
    t = db.create_table("s", Schema({"d": DATE, "time": SECOND}), partition_by=hfq.Value("d"))
    path = tmp_path / "s.csv"
    path.write_text(f"d,time\n2024-01-02,{text}\n")
    if ok:
        db.load_csv("s", str(path))
        assert t.refresh().to_polars()["time"].to_list() == [dt.time(9, 0)]
    else:
        with pytest.raises(hfq.errors.CsvError, match="a fraction only of zeros"):
            db.load_csv("s", str(path))
