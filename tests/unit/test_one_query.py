"""One lazy read type (issue 25): ``scan``, ``query``, ``to_*`` and ``db.sql`` build the same
:class:`hfq.Query`; a plain read (row-wise filters and a projection) runs through the read path,
anything else through the engine's stages, with the same answer -- checked against polars over
the same rows, nasty rows included.  One error type for a bad argument, naming it."""

from __future__ import annotations

import datetime as dt
import math

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

import hfq
from conftest import canonical
from hfq.errors import ArgumentError

DAYS = [dt.date(2024, 1, 2), dt.date(2024, 1, 3), dt.date(2024, 1, 4)]


def _rows(n: int) -> pa.Table:
    rng = np.random.default_rng(7)
    bids = rng.normal(50, 10, n).round(2)
    bids[::17] = np.nan
    bid = [None if i % 23 == 0 else float(b) for i, b in enumerate(bids)]
    bid[5], bid[6], bid[7] = math.inf, -math.inf, -0.0
    return pa.table({
        "symbol": pa.array([f"S{i % 7}" if i % 50 else "ONE" for i in range(n)]),
        "date": pa.array([DAYS[i % 2] for i in range(n)], pa.date32()),
        "time": pa.array([dt.time(9, 30 + (i % 3), 0) for i in range(n)], pa.time32("s")),
        "bid": pa.array(bid, pa.float64()),
        "ofr": pa.array(rng.normal(50.1, 10, n).round(2)),
        "bidsiz": pa.array([None if i % 11 == 0 else i for i in range(n)], pa.int32()),
        "ofrsiz": pa.array(np.full(n, 2**31 - 1), pa.int32()),
        "mode": pa.array(np.zeros(n), pa.int32()),
        "ex": pa.array(["P" if i % 3 else "" for i in range(n)]),
        "mmid": pa.array([None if i % 4 else "FLOW" for i in range(n)])})


LONE = pa.table({"symbol": ["LONE"], "date": pa.array([DAYS[2]], pa.date32()),
                       "time": pa.array([dt.time(16, 0)], pa.time32("s")), "bid": [1.0],
                       "ofr": [1.01], "bidsiz": pa.array([1], pa.int32()),
                       "ofrsiz": pa.array([1], pa.int32()), "mode": pa.array([0], pa.int32()),
                       "ex": ["N"], "mmid": pa.array([None], pa.string())})   # one row


@pytest.fixture
def table(db):
    t = db.create_table("q", hfq.schemas.TAQ,
                        partition_by=hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 3)),
                        sort_by=("symbol", "time"))
    t.append(_rows(600))
    t.append(LONE)
    return t


def _oracle(t: hfq.Table) -> pl.DataFrame:
    """The rows appended, conformed to the schema by Arrow and read by polars alone."""
    rows = pa.concat_tables([t.schema.conform(_rows(600)), t.schema.conform(LONE)])
    return pl.from_arrow(rows)


CASES = [
    dict(),
    dict(columns=["symbol", "bid"]),
    dict(dates="2024-01-02"),
    dict(dates=("2024-01-03", None), symbols=["S1", "ONE"]),
    dict(symbols="LONE"),
    dict(symbols="NOPE"),                                     # nothing: an empty answer
    dict(where=pl.col("bid") > 50, columns=["time", "bid", "symbol"]),
    dict(where=pl.col("bid").is_nan() | pl.col("bidsiz").is_null(), dates=DAYS[0]),
]


def _want(all_rows: pl.DataFrame, case: dict) -> pl.DataFrame:
    df = all_rows
    dates = case.get("dates")
    if dates is not None:
        lo, hi = (dates, dates) if not isinstance(dates, tuple) else dates
        lo = dt.date.fromisoformat(lo) if isinstance(lo, str) else lo
        hi = dt.date.fromisoformat(hi) if isinstance(hi, str) else hi
        df = df.filter((pl.col("date") >= lo) if lo else True,
                       (pl.col("date") <= hi) if hi else True)
    symbols = case.get("symbols")
    if symbols is not None:
        df = df.filter(pl.col("symbol").cast(pl.String).is_in([symbols] if isinstance(symbols, str)
                                                              else symbols))
    if case.get("where") is not None:
        df = df.filter(case["where"])
    return df.select(case.get("columns") or df.columns)


@pytest.mark.parametrize("case", CASES, ids=[str(sorted(c)) for c in CASES])
def test_every_read_path_gives_the_same_rows(table, tmp_path, case):
    want = canonical(_want(_oracle(table), case))
    scan = table.scan(**case)
    assert isinstance(scan, hfq.Query)
    assert scan.explain().startswith("scan q @ version")   # a plain read
    got = {
        "to_polars": scan.to_polars(),
        "to_arrow": pl.from_arrow(scan.to_arrow()),
        "iter_arrow": pl.concat([pl.from_arrow(x) for x in scan.iter_arrow()] or
                                [scan.to_polars().clear()]),
        "Table.to_polars": table.to_polars(**case),
        "chained": _chained(table, case).collect(),
        # an extra step makes it an engine query: node and driver stages, same rows
        "engine": _engine(_chained(table, case)).collect(),
    }
    for how, frame in got.items():
        assert canonical(frame.select(want.columns)).equals(want), how
    assert scan.count() == want.height == _engine(_chained(table, case)).count()
    pandas = scan.to_pandas()
    assert list(pandas.columns) == want.columns and len(pandas) == want.height
    assert sum(b.num_rows for b in scan.iter_batches()) == want.height


def _chained(t: hfq.Table, case: dict) -> hfq.Query:
    q = t.query(dates=case.get("dates"), symbols=case.get("symbols"))
    if case.get("where") is not None:
        q = q.filter(case["where"])
    return q.select(*(case.get("columns") or t.schema.names))


def _engine(q: hfq.Query) -> hfq.Query:
    """``q`` with a step that is no plain read's (a computed column, dropped again)."""
    return q.with_columns(__x=pl.lit(1)).select(*q.columns)


def test_sql_plain_reads_take_the_read_path_and_agree(table, db):
    q = db.sql("SELECT symbol, bid FROM q WHERE symbol = 'S1' AND date = DATE '2024-01-02'")
    assert q.explain().startswith("scan q @ version")
    want = canonical(_oracle(table).filter(pl.col("symbol").cast(pl.String) == "S1",
                                           pl.col("date") == DAYS[0]).select("symbol", "bid"))
    assert canonical(q.collect()).equals(want)
    assert q.plan.partitions_total > len(q.plan.units) == 1   # pruned to one partition


def test_a_filter_over_all_rows_is_not_a_plain_read(table):
    above = pl.col("bidsiz") > pl.col("bidsiz").mean()   # the mean of every row, not a partition's
    q = table.query().filter(above).select("symbol", "bidsiz")
    assert not q.explain().startswith("scan")
    want = _oracle(table).filter(above).select("symbol", "bidsiz")
    assert canonical(q.collect()).equals(canonical(want))


BAD = [("dates", dict(dates="yesterday"), "is not a date"),
       ("dates", dict(dates=("2024-01-03", "2024-01-02")), "the first date is after the second"),
       ("symbols", dict(symbols=[1, 2]), "symbols are strings"),
       ("columns", dict(columns=["nope"]), "no column 'nope'"),
       ("where", dict(where="bid > 0"), "a polars expression"),
       ("where", dict(where=pl.col("px") > 0), "uses column 'px'")]


@pytest.mark.parametrize("argument, bad, message", BAD, ids=[f"{a}-{m}" for a, _, m in BAD])
def test_one_error_for_a_bad_argument_on_every_path(table, argument, bad, message):
    def paths():
        yield lambda: table.scan(**bad)
        yield lambda: table.to_pandas(**bad)
        yield lambda: table.map_reduce(None, hfq.reduce.Count(), **bad)
        if argument in ("dates", "symbols"):
            yield lambda: table.query(**bad)
            yield lambda: table.quality(**bad)
    for call in paths():
        with pytest.raises(ArgumentError, match=message) as info:
            call()
        assert info.value.argument == argument
        assert isinstance(info.value, hfq.errors.QueryError) and \
            isinstance(info.value, hfq.errors.SchemaMismatchError)
    with pytest.raises(ArgumentError, match="version=: a committed version number"):
        table.scan(version="latest")
