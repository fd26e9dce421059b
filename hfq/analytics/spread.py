"""The intraday quoted-spread curve: ``avg((ofr - bid) / (ofr + bid) * 2)`` by minute of day.

The published query: quotes between 09:30:00 and 15:59:59 with ``ofr > bid``, ``bid > 0`` and
``ofr / bid < 1.2``, grouped by minute of day.  Each partition returns, per minute, the count
and the sum of the spread; the driver adds them up (in partition order: the answer is the same
however the work was scheduled) and divides once.  Rows with a null time or price are not
counted (as in SQL, where comparisons with NULL are not true).
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from hfq.session import map_reduce

if TYPE_CHECKING:
    from hfq.session import TableLike

__all__ = ["spread_by_minute"]


def _time(value: str | dt.time) -> dt.time:
    return value if isinstance(value, dt.time) else dt.time.fromisoformat(value)


def spread_by_minute(table: TableLike, *, dates: Any = None, symbols: Any = None,
                     start: str | dt.time = "09:30:00", end: str | dt.time = "15:59:59",
                     max_ratio: float = 1.2, engine: str = "numba",
                     progress: bool | None = None) -> pl.DataFrame:
    """Average relative quoted spread per minute of day: columns ``minute`` (time of day),
    ``avg_spread`` and ``n`` (quotes counted), one row per minute with quotes.

    ``engine="numba"`` runs one fused kernel per partition (filters + per-minute sums);
    ``engine="polars"`` states the same query as polars expressions (slower; kept as an
    independent implementation the tests compare against).

    Examples
    --------
    >>> from hfq import analytics as ha
    >>> from hfq.demo import example_quotes
    >>> quotes = example_quotes(days=2)
    >>> curve = ha.spread_by_minute(quotes, dates=("2007-08-01", "2007-08-02"))
    >>> curve.columns, str(curve["minute"][0]), str(curve["minute"][-1])
    (['minute', 'avg_spread', 'n'], '09:30:00', '15:59:00')
    >>> bool(curve["avg_spread"].is_between(0, 0.2).all())
    True
    >>> quotes.db.close()   # stops the embedded Ray the first analytic started
    """
    lo, hi = _time(start), _time(end)
    partial: pl.DataFrame | None
    if engine == "numba":
        partial = _numba(table, lo, hi, max_ratio, dates, symbols, progress)
    elif engine == "polars":
        partial = _polars(table, lo, hi, max_ratio, dates, symbols, progress)
    else:
        raise ValueError(f"engine must be 'numba' or 'polars', not {engine!r}")
    empty = pl.DataFrame(schema={"minute": pl.Time, "avg_spread": pl.Float64, "n": pl.UInt32})
    if partial is None or partial.height == 0:
        return empty
    minute = pl.col("minute")
    return (partial.filter(pl.col("n") > 0).sort("minute")
            .select(minute=pl.time(minute // 60, minute % 60),
                    avg_spread=pl.col("sum") / pl.col("n"), n="n")
            .cast(empty.schema))


_NS_PER_MINUTE = 60 * 1_000_000_000


def _ns(t: dt.time) -> int:
    return ((t.hour * 60 + t.minute) * 60 + t.second) * 1_000_000_000 + t.microsecond * 1000


def _numba(table: TableLike, lo: dt.time, hi: dt.time, max_ratio: float, dates: Any, symbols: Any,
           progress: bool | None) -> pl.DataFrame:
    from hfq.analytics.kernels import MINUTES, floats, spread_minutes, time_ns
    lo_ns, hi_ns, ratio = _ns(lo), _ns(hi), float(max_ratio)
    # only the window's minutes travel back (390 of the day's 1,440 for a session)
    first = lo_ns // _NS_PER_MINUTE
    stop = max(first, hi_ns // _NS_PER_MINUTE + 1)

    def per_minute(df: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        sums, counts = np.zeros(MINUTES), np.zeros(MINUTES, dtype=np.int64)
        spread_minutes(time_ns(df["time"]), floats(df["bid"]), floats(df["ofr"]),
                       lo_ns, hi_ns, ratio, sums, counts)
        return sums[first:stop], counts[first:stop]

    def merge(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]
              ) -> tuple[np.ndarray, np.ndarray]:
        return a[0] + b[0], a[1] + b[1]

    sums, counts = map_reduce(table, per_minute, merge, columns=["time", "bid", "ofr"],
                                    dates=dates, symbols=symbols, progress=progress) or (
        np.zeros(stop - first), np.zeros(stop - first, dtype=np.int64))
    return pl.DataFrame({"minute": np.arange(first, stop, dtype=np.int32), "sum": sums,
                         "n": counts})


def _polars(table: TableLike, lo: dt.time, hi: dt.time, max_ratio: float, dates: Any,
            symbols: Any, progress: bool | None) -> pl.DataFrame | None:
    bid, ofr, time = pl.col("bid"), pl.col("ofr"), pl.col("time")
    where = (time.is_between(lo, hi) & (ofr > bid) & (bid > 0) & (ofr / bid < max_ratio))

    def per_minute(df: pl.DataFrame) -> pl.DataFrame:
        return (df.group_by(minute=time.dt.hour().cast(pl.Int32) * 60 + time.dt.minute())
                .agg(sum=((ofr - bid) / (ofr + bid) * 2).sum(), n=pl.len()))

    def merge(a: pl.DataFrame, b: pl.DataFrame) -> pl.DataFrame:
        return pl.concat([a, b]).group_by("minute").agg(pl.col("sum").sum(),
                                                        pl.col("n").sum())

    return map_reduce(table, per_minute, merge, columns=["time", "bid", "ofr"], where=where,
                            dates=dates, symbols=symbols, progress=progress)
