"""numba kernels for the analytics' hot loops, each one pass over plain numpy arrays.

They run inside the node servers on the columns of one partition (zero-copy views of the
cached frame) and release the GIL, so a server's compute threads run them side by side.  Each
has a numpy/polars oracle in ``tests/unit/test_kernels.py``.  Compiled code is cached on the
node's disk (``NUMBA_CACHE_DIR``), so only the first job on a fresh node pays compilation.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["MINUTES", "ols_moments", "ols_residuals", "spread_minutes", "time_ns"]

MINUTES = 24 * 60
_NS_PER_MINUTE = 60 * 1_000_000_000


def time_ns(series) -> np.ndarray:
    """A polars Time column as int64 nanoseconds since midnight (nulls as -1, which no
    session window contains); zero-copy when there are no nulls."""
    physical = series.to_physical()
    if physical.null_count():
        physical = physical.fill_null(-1)
    return physical.to_numpy()


def floats(series) -> np.ndarray:
    """A numeric polars column as float64 numpy (nulls as NaN, which no comparison passes)."""
    import polars as pl
    if series.dtype != pl.Float64:
        series = series.cast(pl.Float64)
    return series.to_numpy()


@njit(cache=True, nogil=True)
def spread_minutes(time, bid, ofr, lo_ns, hi_ns, max_ratio, sums, counts):  # pragma: no cover
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


@njit(cache=True, nogil=True)
def ols_moments(z):  # pragma: no cover
    """Row count, mean (as ``hi + lo``) and centred cross-products of the rows of ``z`` (rows x
    columns) that hold no NaN -- the state of :class:`hfq.reduce.OLSMoments`."""
    n_rows, k = z.shape
    valid = np.ones(n_rows, dtype=np.bool_)
    total = np.zeros(k)
    n = 0
    for i in range(n_rows):
        for j in range(k):
            if np.isnan(z[i, j]):
                valid[i] = False
                break
        if valid[i]:
            n += 1
            for j in range(k):
                total[j] += z[i, j]
    hi = np.zeros(k)
    lo = np.zeros(k)
    c = np.zeros((k, k))
    if n == 0:
        return n, hi, lo, c
    hi = total / n
    for i in range(n_rows):
        if valid[i]:
            for j in range(k):
                lo[j] += z[i, j] - hi[j]
    lo /= n
    d = np.empty(k)
    for i in range(n_rows):
        if valid[i]:
            for j in range(k):
                d[j] = (z[i, j] - hi[j]) - lo[j]
            for a in range(k):
                for b in range(a + 1):
                    c[a, b] += d[a] * d[b]
    for a in range(k):
        for b in range(a):
            c[b, a] = c[a, b]
    return n, hi, lo, c


@njit(cache=True, nogil=True)
def ols_residuals(z, hi, lo, beta, const):  # pragma: no cover
    """The second pass of a fit: residuals ``e = y - x . beta`` of the NaN-free rows of ``z``
    (``[x..., y]``), with every column shifted by ``hi + lo`` first (the means: a centred fit,
    whose constant is then 0; zeros for a fit through the origin).  Returns the residual sum
    of squares and the HC "meat" ``sum e^2 w w'`` with ``w = [1, x]`` (``const``) or ``x``."""
    n_rows, k = z.shape
    p = k - 1
    q = p + 1 if const else p
    meat = np.zeros((q, q))
    w = np.empty(q)
    ssr = 0.0
    for i in range(n_rows):
        bad = False
        for j in range(k):
            if np.isnan(z[i, j]):
                bad = True
                break
        if bad:
            continue
        e = (z[i, p] - hi[p]) - lo[p]
        off = 0
        if const:
            w[0] = 1.0
            off = 1
        for j in range(p):
            x = (z[i, j] - hi[j]) - lo[j]
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
