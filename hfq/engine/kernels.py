"""numba kernels of the engine (compiled on first use, cached on disk)."""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["range_extreme"]


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
