"""Shared data and the DuckDB oracle for the query-engine tests.

Every test database gets the same four tables (quotes, trades, readings, device_info), and
DuckDB gets the very rows hfq stores (read back with ``to_arrow``) -- DuckDB is the
independent oracle, never the engine.  Quotes and trades are made unique on
(symbol, date, time) so that ORDER BY ... LIMIT and window frames have one right answer.
"""

from __future__ import annotations

import functools
import math

import duckdb
import polars as pl
import pyarrow as pa

import hfq

DAYS = ("2007-08-01", "2007-08-02")
SCHEME = hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 4))


def _unique(table: pa.Table, keys: list[str], schema: hfq.schema.Schema) -> pa.Table:
    df = pl.from_arrow(table)
    assert isinstance(df, pl.DataFrame)
    return schema.conform(df.unique(keys, keep="first", maintain_order=True).to_arrow())


@functools.lru_cache(maxsize=1)
def frames() -> dict[str, pa.Table]:
    quotes = _unique(hfq.synth.taq_table(dates=DAYS, rows_per_day=6000, symbols=25, seed=7),
                     ["symbol", "date", "time"], hfq.schemas.TAQ)
    trades = _unique(hfq.synth.trades_table(dates=DAYS, rows_per_day=1500, quotes_per_day=6000,
                                            symbols=25, seed=7),
                     ["symbol", "date", "time"], hfq.schemas.TRADES)
    readings = pa.Table.from_batches(hfq.synth.readings_batches(
        start="2016-11-15", days=2, devices=12, interval_s=900, seed=7))
    info = hfq.synth.device_info_table(devices=12, seed=7)
    return {"quotes": quotes, "trades": trades, "readings": readings, "device_info": info}


def load(db: hfq.Database) -> None:
    """Create and fill the four tables in ``db``."""
    f = frames()
    db.create_table("quotes", hfq.schemas.TAQ, partition_by=SCHEME,
                    sort_by=("symbol", "time")).append(f["quotes"])
    db.create_table("trades", hfq.schemas.TRADES, partition_by=SCHEME,
                    sort_by=("symbol", "time")).append(f["trades"])
    db.create_table("readings", hfq.schemas.READINGS,
                    partition_by=hfq.Compo(hfq.Value("time", by="day"),
                                           hfq.Hash("device_id", 3)),
                    sort_by=("device_id", "time")).append(f["readings"])
    db.create_table("device_info", hfq.schemas.DEVICE_INFO,
                    partition_by=hfq.Hash("device_id", 2), sort_by=("device_id",)
                    ).append(f["device_info"])


def oracle(db: hfq.Database) -> duckdb.DuckDBPyConnection:
    """DuckDB over the rows the tables of ``db`` hold."""
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute("SET threads = 1")
    for name in ("quotes", "trades", "readings", "device_info"):
        con.register(name, db[name].to_arrow())
    return con


def _normal(df: pl.DataFrame) -> pl.DataFrame:
    out = []
    for i, (name, dtype) in enumerate(df.schema.items()):
        col = pl.col(name)
        if isinstance(dtype, (pl.Categorical, pl.Enum)):
            col = col.cast(pl.String)
        elif dtype.is_integer() or (isinstance(dtype, pl.Decimal) and dtype.scale == 0):
            col = col.cast(pl.Int64)   # DuckDB sums integers as HUGEINT
        elif dtype.is_float() or isinstance(dtype, pl.Decimal):
            col = col.cast(pl.Float64)
        elif isinstance(dtype, pl.Datetime):
            col = col.dt.cast_time_unit("us")
            if dtype.time_zone:
                col = col.dt.convert_time_zone("UTC")
            else:
                col = col.dt.replace_time_zone("UTC")
        out.append(col.alias(f"c{i}"))
    return df.select(out)


def assert_same(got: pl.DataFrame, want: pl.DataFrame, *, ordered: bool = False,
                what: str = "") -> None:
    """Equal row for row (``ordered``) or as multisets; floats to 1e-9 relative."""
    a, b = _normal(got), _normal(want)
    assert a.width == b.width, f"{what}: {a.width} columns, oracle {b.width}\n{got}\n{want}"
    assert a.height == b.height, f"{what}: {a.height} rows, oracle {b.height}\n{got}\n{want}"
    mismatched = [(x, y) for x, y in zip(a.dtypes, b.dtypes) if x != y and
                  pl.Null not in (x, y)]
    assert not mismatched, f"{what}: types differ {mismatched}"
    if not ordered and a.height:
        exact = [c for c, t in a.schema.items() if not t.is_float()]
        floats = [c for c, t in a.schema.items() if t.is_float()]
        keys = exact + [pl.col(c).round_sig_figs(6) for c in floats]
        a = a.sort(keys, nulls_last=True, maintain_order=True)
        b = b.sort(keys, nulls_last=True, maintain_order=True)
    for c, t in a.schema.items():
        x, y = a[c].to_list(), b[c].to_list()
        if t.is_float():
            for i, (u, v) in enumerate(zip(x, y)):
                assert _close(u, v), f"{what}: row {i} column {c}: {u} != {v}\n{got}\n{want}"
        else:
            assert x == y, f"{what}: column {c} differs\n{got}\n{want}"


def _close(u: float | None, v: float | None) -> bool:
    if u is None or v is None:
        return u is None and v is None
    if math.isnan(u) or math.isnan(v):
        return math.isnan(u) and math.isnan(v)
    if math.isinf(u) or math.isinf(v):
        return u == v
    return abs(u - v) <= 1e-9 * max(abs(u), abs(v)) + 1e-12
