"""The intraday quoted-spread curve: ``avg((ofr - bid) / (ofr + bid) * 2)`` by minute of day.

The published query: quotes between 09:30:00 and 15:59:59 with ``ofr > bid``, ``bid > 0`` and
``ofr / bid < 1.2``, grouped by minute of day.  Each partition returns, per minute, the count
and the sum of the spread; the driver adds them up (in partition order: the answer is the same
however the work was scheduled) and divides once.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

import polars as pl

if TYPE_CHECKING:
    from hfq.table import Table

__all__ = ["spread_by_minute"]


def _time(value: str | dt.time) -> dt.time:
    return value if isinstance(value, dt.time) else dt.time.fromisoformat(value)


def spread_by_minute(table: Table, *, dates: Any = None, symbols: Any = None,
                     start: str | dt.time = "09:30:00", end: str | dt.time = "15:59:59",
                     max_ratio: float = 1.2, progress: bool | None = None) -> pl.DataFrame:
    """Average relative quoted spread per minute of day: columns ``minute`` (time of day),
    ``avg_spread`` and ``n`` (quotes counted), one row per minute with quotes."""
    lo, hi = _time(start), _time(end)
    bid, ofr, time = pl.col("bid"), pl.col("ofr"), pl.col("time")
    where = (time.is_between(lo, hi) & (ofr > bid) & (bid > 0) & (ofr / bid < max_ratio))

    def per_minute(df: pl.DataFrame) -> pl.DataFrame:
        return (df.group_by(minute=time.dt.hour().cast(pl.Int32) * 60 + time.dt.minute())
                .agg(sum=((ofr - bid) / (ofr + bid) * 2).sum(), n=pl.len()))

    def merge(a: pl.DataFrame, b: pl.DataFrame) -> pl.DataFrame:
        return pl.concat([a, b]).group_by("minute").agg(pl.col("sum").sum(),
                                                        pl.col("n").sum())

    partial = table.map_reduce(per_minute, merge, columns=["time", "bid", "ofr"], where=where,
                               dates=dates, symbols=symbols, progress=progress)
    empty = pl.DataFrame(schema={"minute": pl.Time, "avg_spread": pl.Float64, "n": pl.UInt32})
    if partial is None or partial.height == 0:
        return empty
    minute = pl.col("minute")
    return (partial.sort("minute")
            .select(minute=pl.time(minute // 60, minute % 60),
                    avg_spread=pl.col("sum") / pl.col("n"), n="n")
            .cast(empty.schema))
