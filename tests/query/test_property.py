"""Random filters, groupings and aggregates over random rows: hfq equals DuckDB."""

from __future__ import annotations

import datetime as dt
import itertools

import duckdb
import polars as pl
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import assert_same

import hfq

SYMS = ("IBM", "MSFT", "GE", "A")
EXS = ("N", "P", "Q")
SCHEMA = hfq.schema.Schema({"symbol": hfq.schema.SYMBOL, "date": hfq.schema.DATE,
                            "time": hfq.schema.SECOND, "bid": hfq.schema.DOUBLE,
                            "bidsiz": hfq.schema.INT, "ex": hfq.schema.CHAR})

rows = st.lists(st.tuples(
    st.sampled_from(SYMS), st.sampled_from((dt.date(2007, 8, 1), dt.date(2007, 8, 2))),
    st.integers(9 * 3600, 16 * 3600), st.one_of(st.none(), st.integers(0, 10_000)),
    st.one_of(st.none(), st.integers(-5, 3000)), st.sampled_from(EXS)),
    min_size=1, max_size=80)

FILTERS = ["bid > 40", "bid <= 60.5", "bidsiz < 1000", "bidsiz IS NULL", "bid IS NOT NULL",
           "symbol IN ('IBM', 'GE')", "symbol = 'MSFT'", "ex = 'P'", "ex <> 'N'",
           "time >= '12:00:00'", "date = '2007-08-02'", "bidsiz % 2 = 0"]
KEYS = ["symbol", "date", "ex", "time_bucket(INTERVAL '30 minutes', time)", "bidsiz % 3",
        "hour(time)"]
AGGS = ["count(*)", "count(bidsiz)", "sum(bidsiz)", "avg(bid)", "min(bid)", "max(bidsiz)",
        "stddev_samp(bid)", "var_pop(bid)", "count(DISTINCT ex)", "median(bid)",
        "sum(bid * bidsiz)", "max(time)"]


def _table(data) -> pa.Table:
    cols = list(zip(*data))
    return SCHEMA.conform(pa.table({
        "symbol": pa.array(cols[0]).dictionary_encode(), "date": pa.array(cols[1]),
        "time": pa.array([dt.time(t // 3600, t // 60 % 60, t % 60) for t in cols[2]],
                         pa.time32("s")),
        "bid": pa.array([None if v is None else v / 100 for v in cols[3]], pa.float64()),
        "bidsiz": pa.array(cols[4], pa.int32()), "ex": pa.array(cols[5]).dictionary_encode()}))


_COUNTER = itertools.count()


@settings(max_examples=30)
@given(data=rows, where=st.lists(st.sampled_from(FILTERS), max_size=2, unique=True),
       keys=st.lists(st.sampled_from(KEYS), max_size=2, unique=True),
       aggs=st.lists(st.sampled_from(AGGS), min_size=1, max_size=4, unique=True))
def test_random_aggregates_equal_duckdb(tmp_path_factory, data, where, keys, aggs):
    db = hfq.connect(str(tmp_path_factory.mktemp(f"prop{next(_COUNTER)}")))
    table = _table(data)
    db.create_table("q", SCHEMA, partition_by=hfq.Compo(hfq.Value("date"),
                                                        hfq.Hash("symbol", 3)),
                    sort_by=("symbol", "time")).append(table)
    select = ", ".join([*(f"{k} AS k{i}" for i, k in enumerate(keys)),
                        *(f"{a} AS a{i}" for i, a in enumerate(aggs))])
    sql = f"SELECT {select} FROM q"
    if where:
        sql += " WHERE " + " AND ".join(where)
    if keys:
        sql += " GROUP BY " + ", ".join(f"k{i}" for i in range(len(keys)))
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.register("q", db["q"].to_arrow())
    want = con.sql(sql).pl()
    got = db.sql(sql).collect()
    if not keys and want.height == 1 and got.height == 1:
        pass
    assert_same(got, want, what=sql)
    assert isinstance(got, pl.DataFrame)
