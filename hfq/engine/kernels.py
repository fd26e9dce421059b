"""numba kernels of the engine (compiled on first use, cached on disk)."""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["known_window_pairs", "pairs_extreme", "range_extreme"]


@numba.njit(cache=True)
def range_extreme(x: np.ndarray, start: np.ndarray, end: np.ndarray,
                  is_max: bool) -> np.ndarray:   # pragma: no cover - compiled
    """The max (or min) of ``x[start[i]:end[i]]`` for every i (NaN for an empty range)."""
    out = np.full(len(start), np.nan)
    for i in range(len(start)):
        best = np.nan
        for j in range(start[i], end[i]):
            v = x[j]
            if np.isnan(best) or (v > best if is_max else v < best):
                best = v
        out[i] = best
    return out


@numba.njit(cache=True)
def known_window_pairs(start: np.ndarray, end: np.ndarray, group_lo: np.ndarray,
                       left_t: np.ndarray, visible: np.ndarray, rkey: np.ndarray,
                       lo_key: np.ndarray, prevailing: bool
                       ) -> tuple[np.ndarray, np.ndarray]:   # pragma: no cover - compiled
    """See :func:`hfq.engine.known.known_pairs`."""
    total = 0
    for i in range(len(start)):
        total += max(0, end[i] - start[i]) + (1 if prevailing else 0)
    left = np.empty(total, np.int64)
    right = np.empty(total, np.int64)
    k = 0
    for i in range(len(start)):
        t = left_t[i]
        if prevailing:
            at_start = False
            j = start[i]
            while j < end[i] and rkey[j] == lo_key[i]:
                if visible[j] <= t:
                    at_start = True
                j += 1
            j = start[i] - 1
            while not at_start and j >= group_lo[i]:
                if visible[j] <= t:
                    left[k] = i
                    right[k] = j
                    k += 1
                    break
                j -= 1
        for j in range(start[i], end[i]):
            if visible[j] <= t:
                left[k] = i
                right[k] = j
                k += 1
    return left[:k], right[:k]


@numba.njit(cache=True)
def pairs_extreme(x: np.ndarray, rows: np.ndarray, n: int,
                  is_max: bool) -> np.ndarray:   # pragma: no cover - compiled
    """:func:`hfq.engine.kernels.range_extreme`'s rule over each row's pairs, in order."""
    out = np.full(n, np.nan)
    for k in range(len(rows)):
        i = rows[k]
        v = x[k]
        best = out[i]
        if np.isnan(best) or (v > best if is_max else v < best):
            out[i] = v
    return out
