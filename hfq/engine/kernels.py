"""numba kernels of the engine (compiled on first use, cached on disk)."""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["in_units", "known_window_pairs", "pairs_extreme", "range_extreme", "tree_rows",
           "tree_running", "tree_sums"]


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


def tree_sums(x: np.ndarray, begin: np.ndarray, end: np.ndarray) -> np.ndarray:
    """The sum of ``x[begin[i]:end[i]]`` for every i, added in the order of DuckDB's window
    segment tree (``window_segment_tree.cpp``, the order-dependent path of ``sum(DOUBLE)``):
    level 1 holds each aligned block of 16 values summed in order from 0.0, level k each 16
    nodes of level k - 1; a frame is added strictly left to right, its ragged leaves one by
    one and every aligned block of 16^k rows inside it as its node's one pre-summed value.
    A NULL is passed as 0.0 (adding it changes no sum: none of these is ever -0.0); an empty
    frame sums to 0.0."""
    return _tree_sums(x, begin, end, 0, 0, False)


def tree_rows(x: np.ndarray, before: int, after: int) -> np.ndarray:
    """:func:`tree_sums` over each row's ROWS frame, from ``before`` rows back to ``after``
    rows ahead, cut at ``x``'s ends (either bound may lie past the current row; both within
    ``len(x) + 1`` of it: nothing wraps), the frames' bounds made row by row."""
    none = np.empty(0, np.int64)
    return _tree_sums(x, none, none, before, after, True)


@numba.njit(cache=True)
def _tree_sums(x: np.ndarray, begin: np.ndarray, end: np.ndarray, before: int, after: int,
               rows: bool) -> np.ndarray:   # pragma: no cover - compiled
    """:func:`tree_sums` over the frames ``[begin, end)``, or with ``rows`` :func:`tree_rows`'
    (one loop: the sum's body called per row as a function ran twice as slow)."""
    n = len(x)
    levels, size, total = 1, n, n
    while size > 1:
        size = (size + 15) // 16
        total += size
        levels += 1
    off = np.zeros(levels + 1, np.int64)
    flat = np.empty(total, np.float64)
    flat[:n] = x
    size, pos = n, n
    for lv in range(1, levels):
        nodes = (size + 15) // 16
        off[lv] = pos
        for j in range(nodes):
            acc = 0.0
            for c in range(16 * j, min(16 * j + 16, size)):
                acc += flat[off[lv - 1] + c]
            flat[pos + j] = acc
        pos += nodes
        size = nodes
    m = n if rows else len(begin)
    out = np.empty(m, np.float64)
    stack = np.empty((levels + 1, 3), np.int64)
    for i in range(m):
        if rows:
            b, e = min(max(i - before, 0), n), min(max(i + after + 1, 0), n)
        else:
            b, e = begin[i], end[i]
        acc = 0.0
        if b >= e:
            out[i] = 0.0
            continue
        pb, pe = b // 16, e // 16
        if pb == pe:   # inside one block: leaf after leaf
            for j in range(b, e):
                acc += flat[j]
            out[i] = acc
            continue
        if b != pb * 16:   # the ragged left leaves
            for j in range(b, pb * 16 + 16):
                acc += flat[j]
        depth = 0
        lo, hi = b, e
        for lv in range(levels + 1):   # up: left partial nodes now, right ones stacked
            parb, pare = lo // 16, hi // 16
            if parb == pare:
                if lv:   # the middle run at the level where both ends meet
                    for j in range(lo, hi):
                        acc += flat[off[lv] + j]
                break
            if lo != parb * 16:
                if lv:
                    for j in range(lo, parb * 16 + 16):
                        acc += flat[off[lv] + j]
                parb += 1
            if hi != pare * 16 and lv:
                stack[depth, 0], stack[depth, 1], stack[depth, 2] = lv, pare * 16, hi
                depth += 1
            lo, hi = parb, pare
        while depth:   # down: the right partial nodes, upper levels first
            depth -= 1
            lv = stack[depth, 0]
            for j in range(stack[depth, 1], stack[depth, 2]):
                acc += flat[off[lv] + j]
        for j in range(pe * 16, e):   # the ragged right leaves
            acc += flat[j]
        out[i] = acc
    return out


@numba.njit(cache=True)
def range_bounds(keys: np.ndarray, width: int
                 ) -> tuple[np.ndarray, np.ndarray]:   # pragma: no cover - compiled
    """For the ascending integer ``keys``, each row's RANGE frame ``[key - width, key]`` as
    the rows ``[begin, end)``: ``np.searchsorted(keys, keys - width, "left")`` and
    ``np.searchsorted(keys, keys, "right")`` in one pass (a start that wraps past BIGINT
    gives some frame: the caller fails the query there by name)."""
    n = len(keys)
    begin = np.empty(n, np.int64)
    end = np.empty(n, np.int64)
    b, e = 0, 0
    for i in range(n):
        start = keys[i] - width
        while b < n and keys[b] < start:
            b += 1
        while e < n and keys[e] <= keys[i]:
            e += 1
        begin[i], end[i] = b, e
    return begin, end


@numba.njit(cache=True)
def tree_running(x: np.ndarray) -> np.ndarray:   # pragma: no cover - compiled
    """:func:`tree_sums` of the running frames ``x[0:i + 1]``, in one pass per level: the
    tree's sum of the first e values at a level is its sum of the first e // 16 nodes of the
    level above, then the values of the ragged block added one by one (a block of 16 is
    the one node's value)."""
    n = len(x)
    levels, size, total = 1, n, n
    while size > 1:
        size = (size + 15) // 16
        total += size
        levels += 1
    off = np.zeros(levels + 1, np.int64)
    sizes = np.zeros(levels + 1, np.int64)
    flat = np.empty(total, np.float64)
    flat[:n] = x
    sizes[0] = n
    pos = n
    for lv in range(1, levels):
        nodes = (sizes[lv - 1] + 15) // 16
        off[lv], sizes[lv] = pos, nodes
        for j in range(nodes):
            acc = 0.0
            for c in range(16 * j, min(16 * j + 16, sizes[lv - 1])):
                acc += flat[off[lv - 1] + c]
            flat[pos + j] = acc
        pos += nodes
    # the running sums of each level, from the top down: above[e] of the level above
    above = np.zeros(2, np.float64)
    for lv in range(levels - 1, -1, -1):
        m = sizes[lv]
        here = np.empty(m + 1, np.float64)
        here[0] = 0.0
        for e in range(1, m + 1):
            if e % 16 == 0 and m > 16:
                here[e] = above[e // 16]
            elif (e - 1) % 16 == 0:
                here[e] = (above[(e - 1) // 16] if m > 16 else 0.0) + flat[off[lv] + e - 1]
            else:
                here[e] = here[e - 1] + flat[off[lv] + e - 1]
        above = here
    return above[1:].copy()


@numba.njit(cache=True)
def in_units(x: np.ndarray, null: np.ndarray, scale: float, limit: float,
             rows: int) -> bool:   # pragma: no cover - compiled
    """Whether the DOUBLEs ``x`` (``null``: the rows that hold none) number at most
    ``rows``, hold one sign (zeros aside), and are each the DOUBLE nearest ``u / scale`` for
    a whole number ``u`` (divided as IEEE divides), their ``|u|`` summing under ``limit``
    -- in one pass (:func:`hfq.engine.sql.windows._in_units`).  NaN and +-inf fail.  An
    empty ``null``: no row is NULL."""
    if len(x) > rows:
        return False
    negative = positive = False
    total = 0.0
    for i in range(len(x)):
        if len(null) and null[i]:
            continue
        v = x[i]
        u = np.round(v * scale)   # (NaN: NaN, never equal; +-inf: a total past the limit)
        if u / scale != v:
            return False
        negative |= v < 0
        positive |= v > 0
        total += abs(u)
    return not (negative and positive) and total < limit
