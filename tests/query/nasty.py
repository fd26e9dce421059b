"""Adversarial tables for the SQL trust tests, and DuckDB over the same rows.

``m`` is issue 24's 4-row table (bid = [1.0, NULL, NaN, 2.0], bidsiz = [5, NULL, 7, NULL])
with a column of every storage type holding the nasty values: int64 extremes, -0.0, +-inf,
empty and unicode strings, a Sunday, midnight, duplicate timestamps, sub-second times.  It is
stored twice: ``m`` over several partitions (date x symbol bucket, so every query also runs
node stage + driver merge) and ``m1`` in one.  ``w`` holds 2,400 rows over 3 days and 4
buckets (empty and one-row partitions included) drawn from the same nasty values, for the
merges of aggregates and windows across partitions.
"""

from __future__ import annotations

import datetime as dt
import functools

import duckdb
import numpy as np
import pyarrow as pa

import hfq
from hfq.schema import (
    BOOL,
    DATE,
    DATETIME,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    SHORT,
    STRING,
    SYMBOL,
    TIME,
    TIMESTAMP,
    Schema,
)

SCHEMA = Schema([("symbol", SYMBOL), ("date", DATE), ("time", DATETIME), ("ts", TIMESTAMP),
                 ("tod", TIME), ("bid", DOUBLE), ("bidsiz", INT), ("big", LONG),
                 ("small", SHORT), ("name", STRING), ("flag", BOOL), ("f", FLOAT)])
I64 = 2**63
NAN, INF = float("nan"), float("inf")
UTC = dt.timezone.utc


def _m() -> pa.Table:
    d = dt.date
    t = dt.datetime
    return pa.table({
        "symbol": ["A", "B", "A", "B"],
        "date": [d(2016, 11, 13), d(2016, 11, 14), d(2016, 11, 14), d(2016, 11, 15)],
        "time": [t(2016, 11, 13, 9, 30, tzinfo=UTC), t(2016, 11, 14, tzinfo=UTC),
                 t(2016, 11, 14, tzinfo=UTC), t(2016, 11, 15, 23, 59, 59, tzinfo=UTC)],
        "ts": [t(2016, 11, 13, 9, 30, 0, 123456), t(2016, 11, 14), t(2016, 11, 14, 0, 0, 0, 1),
               t(2016, 11, 15, 23, 59, 59, 999999)],
        "tod": [dt.time(9, 30), dt.time(0), dt.time(16, 0), dt.time(23, 59, 59, 999000)],
        "bid": [1.0, None, NAN, 2.0],
        "bidsiz": [5, None, 7, None],
        "big": [I64 - 1, -I64, 0, None],
        "small": [-32768, 32767, None, 0],
        "name": ["", "x", None, "héllo"],
        "flag": [True, None, False, True],
        "f": pa.array([-0.0, INF, NAN, -INF], pa.float32()),
    })


def _w(rows: int = 2400, seed: int = 24) -> pa.Table:
    rng = np.random.default_rng(seed)
    days = [dt.date(2016, 11, 13), dt.date(2016, 11, 14), dt.date(2016, 11, 15)]
    symbols = ["A", "B", "C", "D", "E", "F", "G"]
    day = rng.integers(0, 3, rows)
    sym = rng.choice(len(symbols), rows, p=[0.3, 0.3, 0.2, 0.1, 0.05, 0.04, 0.01])
    seconds = rng.integers(0, 86400, rows)
    seconds[rng.random(rows) < 0.1] = 34200          # duplicates at 09:30
    seconds[rng.random(rows) < 0.05] = 0              # midnight
    bid = rng.normal(100, 20, rows).round(2)
    special = rng.random(rows)
    bid = np.where(special < 0.03, NAN, np.where(special < 0.05, -0.0, bid))
    bid_null = rng.random(rows) < 0.1
    size = rng.integers(-50, 1000, rows)
    size_null = rng.random(rows) < 0.1
    big = rng.integers(-(10**12), 10**12, rows)
    names = np.array(["", "x", "héllo", "AB", "b"])[rng.integers(0, 5, rows)]
    time = [dt.datetime.combine(days[i], dt.time(), UTC) + dt.timedelta(seconds=int(s))
            for i, s in zip(day, seconds)]
    # one symbol with one row on one day: a one-row partition
    sym[0], day[0] = symbols.index("G"), 0
    return pa.table({
        "symbol": [symbols[i] for i in sym],
        "date": [days[i] for i in day],
        "time": [dt.datetime.combine(days[day[i]], dt.time(), UTC) +
                 dt.timedelta(seconds=int(seconds[i])) for i in range(rows)],
        "ts": [x.replace(tzinfo=None) + dt.timedelta(microseconds=int(u))
               for x, u in zip(time, rng.integers(0, 10**6, rows))],
        "tod": [(dt.datetime.min + dt.timedelta(seconds=int(s))).time() for s in seconds],
        "bid": pa.array(np.where(bid_null, 0, bid), mask=bid_null),
        "bidsiz": pa.array(size.astype(np.int32), mask=size_null),
        "big": pa.array(big),
        "small": pa.array(rng.integers(-300, 300, rows).astype(np.int16)),
        "name": pa.array(names.tolist(), mask=rng.random(rows) < 0.1),
        "flag": pa.array(rng.random(rows) < 0.5, mask=rng.random(rows) < 0.1),
        "f": pa.array(rng.normal(0, 1, rows).astype(np.float32)),
    })


@functools.lru_cache(maxsize=1)
def frames() -> dict[str, pa.Table]:
    return {"m": _m(), "w": _w()}


def load(db: hfq.Database) -> None:
    """Tables ``m`` (multi-partition), ``m1`` (one partition) and ``w`` in ``db``."""
    f = frames()
    many = hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 2))
    for name, rows, scheme in (("m", f["m"], many), ("m1", f["m"], hfq.Hash("symbol", 1)),
                               ("w", f["w"], hfq.Compo(hfq.Value("date"),
                                                       hfq.Hash("symbol", 4)))):
        db.create_table(name, SCHEMA, partition_by=scheme,
                        sort_by=("symbol", "time")).append(SCHEMA.conform(rows))


def oracle(db: hfq.Database) -> duckdb.DuckDBPyConnection:
    """DuckDB over the rows the tables hold (read back from hfq), in UTC."""
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute("SET threads = 1")
    for name in ("m", "m1", "w"):
        con.register(name, db[name].to_arrow())
    return con
