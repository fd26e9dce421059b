"""Edge cases found in review: nulls against statistics, timestamp partition keys, lossy casts,
constant where= expressions, names."""

from __future__ import annotations

import datetime as dt

import polars as pl
import pyarrow as pa
import pytest

import hfq
from hfq import schema as s

UTC = dt.timezone.utc
SCH = s.Schema({"symbol": s.SYMBOL, "date": s.DATE, "px": s.DOUBLE})
DEV = s.Schema({"time": s.DATETIME, "device_id": s.SYMBOL, "v": s.DOUBLE})


def test_null_symbols_and_dates_never_match_filters(db):
    t = db.create_table("t", SCH, partition_by=hfq.Value("date"), sort_by=("symbol",))
    t.append(pa.table({"symbol": ["A", None, "A"], "date": [dt.date(2024, 1, 2)] * 3,
                       "px": [1.0, 2.0, 3.0]}))
    scan = t.scan(symbols=["A"])
    assert scan.count() == 2
    assert scan.to_arrow()["symbol"].to_pylist() == ["A", "A"]
    t2 = db.create_table("t2", SCH, partition_by=hfq.Hash("symbol", 2),
                         sort_by=("symbol", "date"))
    t2.append(pa.table({"symbol": ["A"] * 3, "date": [dt.date(2024, 1, 2), None,
                                                       dt.date(2024, 1, 2)],
                        "px": [1.0, 2.0, 3.0]}))
    assert t2.scan(dates="2024-01-02").count() == 2
    assert t2.to_arrow(dates="2024-01-02").num_rows == 2


@pytest.mark.parametrize("scheme", [
    hfq.Range("time", (dt.datetime(2024, 1, 2, tzinfo=UTC), dt.datetime(2024, 1, 3, tzinfo=UTC))),
    hfq.Range("time", (dt.datetime(2024, 1, 1, 19, tzinfo=dt.timezone(dt.timedelta(hours=-5))),)),
    hfq.Value("time"),
    hfq.Compo(hfq.Value("time", by="day"), hfq.Hash("device_id", 2)),
])
def test_dates_on_timestamp_partition_keys(db, scheme):
    t = db.create_table("r", DEV, partition_by=scheme, sort_by=("device_id", "time"))
    t.append(pa.table({"time": pa.array([dt.datetime(2024, 1, 1, 12), dt.datetime(2024, 1, 2, 12),
                                         dt.datetime(2024, 1, 3, 12)], pa.timestamp("s", tz="UTC")),
                       "device_id": ["d"] * 3, "v": [1.0, 2.0, 3.0]}))
    got = t.to_arrow(dates="2024-01-02")["v"].to_pylist()
    assert got == [2.0]
    assert t.to_arrow(dates=("2024-01-02", "2024-01-03"))["v"].to_pylist() == [2.0, 3.0]


def test_by_day_on_nanoseconds_and_nulls(db):
    sch = s.Schema({"ts": s.TIMESTAMP, "sym": s.SYMBOL, "v": s.DOUBLE})
    t = db.create_table("n", sch, partition_by=hfq.Value("ts", by="day"), sort_by=("sym", "ts"))
    t.append(pa.table({"ts": pa.array([1_700_000_000_123_456_789, -1], pa.timestamp("ns")),
                       "sym": ["a", "b"], "v": [1.0, 2.0]}))
    assert sorted(t.partitions()["key"].list.first().to_list()) == ["1969-12-31", "2023-11-14"]
    assert t.to_arrow(dates="2023-11-14")["v"].to_pylist() == [1.0]
    with pytest.raises(hfq.errors.SchemaMismatchError, match="null values"):
        t.append(pa.table({"ts": pa.array([None], pa.timestamp("ns")), "sym": ["a"],
                           "v": [1.0]}))


def test_lossy_casts_are_refused(db):
    sch = s.Schema({"d": s.DATE, "f": s.FLOAT})
    t = db.create_table("c", sch, partition_by=hfq.Value("d"))
    with pytest.raises(hfq.errors.SchemaMismatchError, match="not narrowed implicitly"):
        t.append(pa.table({"d": [dt.date(2024, 1, 2)], "f": pa.array([0.1], pa.float64())}))
    with pytest.raises(hfq.errors.SchemaMismatchError, match="not cut to dates"):
        t.append(pa.table({"d": pa.array([dt.datetime(2024, 1, 2, 15, 30)], pa.timestamp("s")),
                           "f": pa.array([0.5], pa.float32())}))
    assert len(t) == 0


def test_a_tables_own_pandas_output_appends_back_unchanged(db, quotes):
    """to_pandas gives DATE as datetime64 at midnight and SECOND as timedelta64 since midnight:
    append takes them back exactly, and refuses a time of day in a date, a fraction of a
    second in a SECOND column and a duration outside one day."""
    import pandas as pd
    data = hfq.synth.taq_table(dates=("2007-08-01", "2007-08-02"), rows_per_day=300, symbols=7,
                               seed=3)
    quotes.append(data)
    df = quotes.scan().to_pandas()
    assert str(df["date"].dtype).startswith("datetime64") and \
        str(df["time"].dtype).startswith("timedelta64")
    copy = db.create_table("copy", hfq.schemas.TAQ, partition_by=hfq.Value("date"))
    copy.append(df)
    order = ["symbol", "date", "time", "bid", "ofr", "bidsiz", "ofrsiz", "mode", "ex", "mmid"]
    assert pl.from_arrow(copy.to_arrow()).sort(order).equals(
        pl.from_arrow(quotes.to_arrow()).sort(order))
    for column, shift, why in (("date", pd.Timedelta(hours=3), "not cut to dates"),
                               ("time", pd.Timedelta(milliseconds=500), "would lose data"),
                               ("time", pd.Timedelta(hours=20), r"\[0, 24 h\)"),
                               ("time", -pd.Timedelta(hours=12), r"\[0, 24 h\)")):
        bad = df.copy()
        bad[column] = bad[column] + shift
        with pytest.raises(hfq.errors.SchemaMismatchError, match=why):
            copy.append(bad)
    assert len(copy.refresh()) == len(quotes)


def test_constant_where(db):
    t = db.create_table("t", SCH, partition_by=hfq.Value("date"), sort_by=("symbol",))
    t.append(pa.table({"symbol": ["A", "B"], "date": [dt.date(2024, 1, 2)] * 2,
                       "px": [1.0, 2.0]}))
    assert t.scan(where=pl.lit(False)).to_arrow().num_rows == 0
    assert t.scan(where=pl.lit(True)).to_arrow().num_rows == 2


def test_names_with_a_trailing_newline_are_refused(db):
    with pytest.raises(hfq.errors.InvalidNameError):
        db.create_table("quotes\n", SCH, partition_by=hfq.Value("date"))
