"""Lookahead-safe joins: a left row at time ``t`` sees only right rows known by ``t``.

With ``known_at`` (the right side's knowledge-time column, :mod:`hfq.change.knowledge`) and a
``latency``, a right row is *visible* from ``v = max(on, known_at + latency)``: the first
instant at which it had both happened and been received.  A left row at ``t`` sees the right
rows with ``v <= t`` (``v < t`` without exact matches); a NULL ``known_at`` is never seen.

* Asof (backward): of the visible rows of its ``by`` keys, the one with the greatest ``on``
  -- ties to the one known last (a correction of a quote at the same time replaces it once it
  is known).  Computed exactly with one asof join: sorted by ``v``, a right row can be the
  answer only if its ``on`` is at least that of every row visible before it (then it is the
  answer from ``v`` until the next such row), so the others are dropped and a plain asof join
  on ``v`` does the rest.
* Window (``wj``/``wj1``): the aggregates over the visible rows whose ``on`` lies in the
  window; ``wj``'s row in effect at the window's start is the last visible row before it.

Examples
--------
>>> import datetime as dt, polars as pl
>>> t0 = dt.datetime(2024, 1, 2, 10)
>>> quotes = pl.DataFrame({"s": ["A", "A"], "time": [t0, t0 + dt.timedelta(seconds=2)],
...                        "known": [t0 + dt.timedelta(seconds=5), t0 + dt.timedelta(seconds=3)],
...                        "bid": [1.0, 2.0]})
>>> visible_rows(quotes.lazy(), "time", "known", 0, ("s",)).collect()["bid"].to_list()
[2.0]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

__all__ = ["VISIBLE", "known_aggregates", "known_pairs", "visible_rows"]

VISIBLE = "__visible_from"
"""The column holding each right row's ``v``."""


def visible_rows(right: pl.LazyFrame, on: str, known: str, latency: int,
                 by: Sequence[str]) -> pl.LazyFrame:
    """The right rows that can answer a known-at asof join (see the module), with their ``v``
    in :data:`VISIBLE`, sorted by it.  ``latency``: in the physical unit of ``on``."""
    dtype = right.collect_schema()[on]
    known_col = pl.col(known).cast(dtype) if latency == 0 else \
        (pl.col(known).cast(dtype).to_physical() + latency).cast(dtype)
    v = pl.max_horizontal(pl.col(on), known_col)
    frame = right.with_columns(pl.when(pl.col(known).is_not_null()).then(v)
                               .otherwise(None).alias(VISIBLE))
    frame = frame.filter(pl.col(VISIBLE).is_not_null() & pl.col(on).is_not_null())
    frame = frame.sort(VISIBLE, maintain_order=True)
    best = pl.col(on).cum_max()
    if by:
        best = best.over(list(by))
    return frame.filter(pl.col(on) >= best)


def known_pairs(start: np.ndarray, end: np.ndarray, group_lo: np.ndarray,
                left_t: np.ndarray, visible: np.ndarray, rkey: np.ndarray, lo_key: np.ndarray,
                prevailing: bool) -> tuple[np.ndarray, np.ndarray]:
    """(left row, right row) of every visible right row in each left row's window
    ``[start, end)`` -- and, with ``prevailing``, the last visible row before the window
    (not before ``group_lo``, its group's first row) unless a visible row sits exactly at the
    window's start (``rkey == lo_key``) -- in order of left row, then right row.
    ``visible``: each right row's ``v`` (int64, the maximum for never), ``left_t``: each left
    row's time, both in one unit."""
    from hfq.engine.kernels import known_window_pairs  # numba loads on first use
    a, b, c, d, e, f, g = (x.astype(np.int64) for x in (start, end, group_lo, left_t,
                                                           visible, rkey, lo_key))
    out: tuple[np.ndarray, np.ndarray] = known_window_pairs(a, b, c, d, e, f, g, prevailing)
    return out


def known_aggregates(left_rows: np.ndarray, right_rows: np.ndarray, n_left: int,
                     right: pl.DataFrame, aggs: Sequence[tuple[str, str, str]]
                     ) -> list[pl.Series]:
    """The window join's aggregates (``(output, kind, right column)``, the kinds and NULL
    rules of :func:`hfq.engine.joins.window_join_frames`) over each left row's pairs."""
    n = np.bincount(left_rows, minlength=n_left)
    empty = pl.Series(n == 0)
    has = n > 0
    first_at = np.full(n_left, -1, np.int64)
    last_at = np.full(n_left, -1, np.int64)
    if len(left_rows):
        first_at[left_rows[::-1]] = right_rows[::-1]   # the earliest pair of each row wins
        last_at[left_rows] = right_rows
    out = []
    for name, kind, src in aggs:
        values = right[src]
        if kind == "count":
            valid = values.is_not_null().to_numpy()[right_rows]
            out.append(pl.Series(name, np.bincount(left_rows, weights=valid,
                                                   minlength=n_left).astype(np.int64)))
            continue
        if kind in ("first", "last"):
            idx = np.where(has, first_at if kind == "first" else last_at, 0)
            got = values.gather(idx) if len(values) else \
                pl.Series(values.name, [None] * n_left)
            out.append(got.alias(name).set(empty, None) if len(values) else got)
            continue
        if kind == "sum" and values.dtype.is_integer():
            ints = values.fill_null(0).cast(pl.Int64).to_numpy()[right_rows]
            sums = np.zeros(n_left, np.int64)
            np.add.at(sums, left_rows, ints)
            out.append(pl.Series(name, sums, pl.Int64).set(empty, None))
            continue
        x = values.cast(pl.Float64).fill_null(np.nan).to_numpy()[right_rows]
        if kind in ("sum", "mean"):
            s = np.bincount(left_rows, weights=np.nan_to_num(x), minlength=n_left)
            res = s if kind == "sum" else s / np.where(has, n, 1)
        else:
            from hfq.engine.kernels import pairs_extreme  # numba loads on first use
            res = pairs_extreme(x, left_rows, n_left, kind == "max")
        series = pl.Series(name, res, pl.Float64).set(empty, None)
        out.append(series.cast(values.dtype) if kind in ("min", "max") else series)
    return out

