"""numba kernels for the analytics' hot loops, each one pass over plain numpy arrays.

They run inside the node servers on the columns of one partition (zero-copy views of the
cached frame) and release the GIL, so a server's compute threads run them side by side.  Each
has a numpy/polars oracle in ``tests/unit/test_kernels.py``.  Compiled code is cached on the
node's disk (``NUMBA_CACHE_DIR``), so only the first job on a fresh node pays compilation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from numba import njit

if TYPE_CHECKING:
    import polars as pl

__all__ = ["MINUTES", "columns", "floats", "ols_moments", "ols_residuals", "spread_minutes",
           "time_ns"]

MINUTES = 24 * 60
_NS_PER_MINUTE = 60 * 1_000_000_000


def time_ns(series: pl.Series) -> np.ndarray:
    """A polars Time column as int64 nanoseconds since midnight (nulls as -1, which no
    session window contains); zero-copy when there are no nulls."""
    physical = series.to_physical()
    if physical.null_count():
        physical = physical.fill_null(-1)
    return physical.to_numpy()


def floats(series: pl.Series) -> np.ndarray:
    """A numeric polars column as float64 numpy (nulls as NaN, which no comparison passes)."""
    import polars as pl
    if series.dtype != pl.Float64:
        series = series.cast(pl.Float64)
    return series.to_numpy()


@njit(cache=True, nogil=True)
def spread_minutes(time: np.ndarray, bid: np.ndarray, ofr: np.ndarray, lo_ns: int, hi_ns: int,
                   max_ratio: float, sums: np.ndarray, counts: np.ndarray
                   ) -> None:  # pragma: no cover
    """Add ``(ofr - bid) / (ofr + bid) * 2`` of the quotes with ``lo_ns <= time <= hi_ns``,
    ``ofr > bid``, ``bid > 0`` and ``ofr / bid < max_ratio`` to ``sums[minute]`` and count them
    in ``counts[minute]`` (minute of day).  NaN prices fail every comparison."""
    for i in range(time.shape[0]):
        t = time[i]
        b = bid[i]
        o = ofr[i]
        if t >= lo_ns and t <= hi_ns and o > b and b > 0.0 and o / b < max_ratio:
            m = t // _NS_PER_MINUTE
            sums[m] += (o - b) / (o + b) * 2.0
            counts[m] += 1


def columns(frame: pl.DataFrame, exprs: Sequence[pl.Expr], where: pl.Expr | None = None
            ) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
    """``exprs`` evaluated on a polars frame as a tuple of float64 numpy columns (zero-copy
    where polars allows; nulls as NaN), and ``where`` as a boolean mask (nulls False; all
    True without one) -- the inputs of the OLS kernels, with no filtered copy of the rows."""
    if frame.height == 0:   # (constant expressions would give one row of an empty frame)
        empty = np.empty(0)
        empty.flags.writeable = False
        return (empty,) * len(exprs), np.zeros(0, dtype=np.bool_)
    if where is not None:
        exprs = [*exprs, where.fill_null(False).alias("__where")]
    out = frame.select(exprs)
    if out.height != frame.height:
        raise ValueError(f"expressions must give one value per row; got {out.height} for "
                         f"{frame.height} rows")
    cols = [floats(out[:, j]) for j in range(len(exprs) - (where is not None))]
    for c in cols:   # one numba type for the tuple: every column read-only
        c.flags.writeable = False
    mask = (out["__where"].to_numpy() if where is not None
            else np.ones(out.height, dtype=np.bool_))
    return tuple(cols), mask


@njit(cache=True, nogil=True)
def _complete(cols: tuple[np.ndarray, ...], mask: np.ndarray, i: int) -> bool:  # pragma: no cover
    if not mask[i]:
        return False
    for j in range(len(cols)):
        if np.isnan(cols[j][i]):
            return False
    return True


@njit(cache=True, nogil=True)
def ols_moments(cols: tuple[np.ndarray, ...], mask: np.ndarray
                ) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover
    """Row count, mean (as ``hi + lo``) and centred cross-products of the columns ``cols``
    (``[x..., y]``) over the rows with ``mask`` set and no NaN -- the state of
    :class:`hfq.reduce.OLSMoments`.  Two passes: the sums, then the products of the
    deviations from that mean (and their sum, ``lo``, which corrects it)."""
    k = len(cols)
    n_rows = cols[0].shape[0]
    total = np.zeros(k)
    n = 0
    for i in range(n_rows):
        if _complete(cols, mask, i):
            n += 1
            for j in range(k):
                total[j] += cols[j][i]
    hi = np.zeros(k)
    lo = np.zeros(k)
    c = np.zeros((k, k))
    if n == 0:
        return n, hi, lo, c
    hi = total / n
    d = np.empty(k)
    for i in range(n_rows):
        if _complete(cols, mask, i):
            for j in range(k):
                d[j] = cols[j][i] - hi[j]
                lo[j] += d[j]
            for a in range(k):
                for b in range(a + 1):
                    c[a, b] += d[a] * d[b]
    lo /= n
    for a in range(k):   # about the corrected mean: sum (d - lo)(d - lo)' = sum d d' - n lo lo'
        for b in range(a + 1):
            c[a, b] -= n * lo[a] * lo[b]
            c[b, a] = c[a, b]
    return n, hi, lo, c


@njit(cache=True, nogil=True)
def ols_residuals(cols: tuple[np.ndarray, ...], mask: np.ndarray, hi: np.ndarray,
                  lo: np.ndarray, beta: np.ndarray, const: bool
                  ) -> tuple[float, np.ndarray]:  # pragma: no cover
    """The second pass of a fit: residuals ``e = y - x . beta`` of the complete rows of
    ``cols`` (``[x..., y]``, ``mask`` set), with every column shifted by ``hi + lo`` first
    (the means: a centred fit, whose constant is then 0; zeros for a fit through the origin).
    Returns the residual sum of squares and the HC "meat" ``sum e^2 w w'`` with ``w = [1, x]``
    (``const``) or ``x``."""
    k = len(cols)
    n_rows = cols[0].shape[0]
    p = k - 1
    q = p + 1 if const else p
    meat = np.zeros((q, q))
    w = np.empty(q)
    ssr = 0.0
    for i in range(n_rows):
        if not _complete(cols, mask, i):
            continue
        e = (cols[p][i] - hi[p]) - lo[p]
        off = 0
        if const:
            w[0] = 1.0
            off = 1
        for j in range(p):
            x = (cols[j][i] - hi[j]) - lo[j]
            w[off + j] = x
            e -= x * beta[j]
        e2 = e * e
        ssr += e2
        for a in range(q):
            for b in range(a + 1):
                meat[a, b] += e2 * w[a] * w[b]
    for a in range(q):
        for b in range(a):
            meat[b, a] = meat[a, b]
    return ssr, meat


@njit(cache=True, nogil=True)
def runs(sym: np.ndarray, time: np.ndarray, bar_ns: int) -> np.ndarray:  # pragma: no cover
    """Start index of each run of rows with the same symbol code and bar (``time // bar_ns``)
    -- the groups of bars over rows sorted by symbol, then time."""
    n = time.shape[0]
    starts = np.empty(n, dtype=np.int64)
    count = 0
    for i in range(n):
        if i == 0 or sym[i] != sym[i - 1] or time[i] // bar_ns != time[i - 1] // bar_ns:
            starts[count] = i
            count += 1
    return starts[:count]


@njit(cache=True, nogil=True)
def quote_bars(starts: np.ndarray, bid: np.ndarray, ofr: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover
    """Per run: mean bid, mean offer, open/high/low/close of the mid, quote count.  NaN
    prices are missing values (left out; NaN where a run has none)."""
    r = starts.shape[0]
    n = bid.shape[0]
    out = np.full((6, r), np.nan)
    count = np.empty(r, dtype=np.int64)
    for k in range(r):
        lo = starts[k]
        hi = starts[k + 1] if k + 1 < r else n
        sb = 0.0
        nb = 0
        so = 0.0
        no = 0
        seen = False
        for i in range(lo, hi):
            b = bid[i]
            o = ofr[i]
            if not np.isnan(b):
                sb += b
                nb += 1
            if not np.isnan(o):
                so += o
                no += 1
            if not (np.isnan(b) or np.isnan(o)):
                mid = (b + o) / 2
                if not seen:
                    out[2, k] = mid
                    out[3, k] = mid
                    out[4, k] = mid
                    seen = True
                out[3, k] = max(out[3, k], mid)
                out[4, k] = min(out[4, k], mid)
                out[5, k] = mid
        if nb:
            out[0, k] = sb / nb
        if no:
            out[1, k] = so / no
        count[k] = hi - lo
    return out, count


@njit(cache=True, nogil=True)
def trade_bars(starts: np.ndarray, price: np.ndarray, size: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover
    """Per run: open/high/low/close, volume, VWAP, trade count.  NaN prices (and sizes) are
    missing values."""
    r = starts.shape[0]
    n = price.shape[0]
    out = np.full((6, r), np.nan)
    count = np.empty(r, dtype=np.int64)
    for k in range(r):
        lo = starts[k]
        hi = starts[k + 1] if k + 1 < r else n
        volume = 0.0
        notional = 0.0
        traded = 0.0
        seen = False
        for i in range(lo, hi):
            p = price[i]
            s = size[i]
            if not np.isnan(s):
                volume += s
            if np.isnan(p):
                continue
            if not seen:
                out[0, k] = p
                out[1, k] = p
                out[2, k] = p
                seen = True
            out[1, k] = max(out[1, k], p)
            out[2, k] = min(out[2, k], p)
            out[3, k] = p
            if not np.isnan(s):
                notional += p * s
                traded += s
        out[4, k] = volume
        if traded:
            out[5, k] = notional / traded
        count[k] = hi - lo
    return out, count
