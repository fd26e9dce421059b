"""Mergeable reducers: monoids whose partial results combine in any order and tree shape.

A map function turns one partition into a partial *state* (``reducer.of(values)``); the driver
merges states with ``reducer.merge`` starting from ``reducer.identity()`` and turns the final
state into the answer with ``reducer.finalize``.  For every reducer here, splitting the data any
way and merging the partial states gives the one-pass answer (exactly for counts, min and max;
to rounding for floating-point sums and moments, which use Chan's pairwise update).

>>> from hfq import reduce as hr
>>> r = hr.Mean()
>>> r.finalize(r.merge(r.of([1.0, 2.0]), r.of([3.0])))
2.0
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Count", "First", "Grouped", "Last", "Max", "Mean", "Min", "OLSMoments", "Reducer",
           "Std", "Sum", "Var", "WeightedMean", "as_reducer"]


class Reducer:
    """A monoid: ``merge`` is associative and ``identity()`` is its neutral element."""

    def identity(self) -> Any:
        raise NotImplementedError

    def merge(self, a: Any, b: Any) -> Any:
        raise NotImplementedError

    def finalize(self, state: Any) -> Any:
        return state

    def of(self, values) -> Any:
        """The state of one partition's values (a numpy array, polars Series, list...)."""
        raise NotImplementedError

    def merge_all(self, states) -> Any:
        return functools.reduce(self.merge, states, self.identity())


def _array(values) -> np.ndarray:
    if hasattr(values, "to_numpy"):
        values = values.to_numpy()
    return np.asarray(values, dtype=np.float64)


@dataclass(frozen=True)
class Count(Reducer):
    """Number of values (or rows): states are ints."""

    def identity(self) -> int:
        return 0

    def merge(self, a: int, b: int) -> int:
        return int(a) + int(b)

    def of(self, values) -> int:
        return len(values)


@dataclass(frozen=True)
class Sum(Reducer):
    """Sum of values: exact for integers; for floats merged partial sums (NaN propagates)."""

    def identity(self) -> Any:
        return 0

    def merge(self, a, b):
        return a + b

    def of(self, values):
        arr = values.to_numpy() if hasattr(values, "to_numpy") else np.asarray(values)
        with np.errstate(over="ignore", invalid="ignore"):   # IEEE: overflow gives +-inf
            total = arr.sum()
        return total.item() if hasattr(total, "item") else total


def _nan(value) -> bool:
    return isinstance(value, float) and value != value


@dataclass(frozen=True)
class Min(Reducer):
    """Smallest value; None for no values; NaN if any value is NaN (as numpy)."""

    _pick = staticmethod(min)
    _numpy = "min"

    def identity(self) -> Any:
        return None

    def merge(self, a, b):
        if a is None or _nan(b):
            return b
        if b is None or _nan(a):
            return a
        return self._pick(a, b)

    def of(self, values):
        arr = values.to_numpy() if hasattr(values, "to_numpy") else np.asarray(values)
        return getattr(arr, self._numpy)().item() if len(arr) else None


@dataclass(frozen=True)
class Max(Min):
    """Largest value; None for no values; NaN if any value is NaN (as numpy)."""

    _pick = staticmethod(max)
    _numpy = "max"


@dataclass(frozen=True)
class Var(Reducer):
    """Variance (``ddof`` 1 by default); state ``(n, mean, m2)`` merged with Chan's update,
    which stays accurate for data far from zero (no sum-of-squares cancellation)."""

    ddof: int = 1

    def identity(self) -> tuple[int, float, float]:
        return (0, 0.0, 0.0)

    def merge(self, a, b):
        na, ma, qa = a
        nb, mb, qb = b
        if na == 0:
            return b
        if nb == 0:
            return a
        n = na + nb
        delta = mb - ma
        return (n, ma + delta * nb / n, qa + qb + delta * delta * na * nb / n)

    def of(self, values):
        arr = _array(values)
        if len(arr) == 0:
            return self.identity()
        with np.errstate(over="ignore", invalid="ignore"):   # IEEE: overflow gives +-inf
            mean = float(arr.mean())
            return (len(arr), mean, float(((arr - mean) ** 2).sum()))

    def finalize(self, state) -> float:
        n, _, m2 = state
        return m2 / (n - self.ddof) if n > self.ddof else math.nan


@dataclass(frozen=True)
class Std(Var):
    """Standard deviation (square root of :class:`Var`)."""

    def finalize(self, state) -> float:
        return math.sqrt(super().finalize(state))


@dataclass(frozen=True)
class Mean(Var):
    """Mean of values (NaN for none); shares :class:`Var`'s stable state."""

    def finalize(self, state) -> float:
        n, mean, _ = state
        return mean if n else math.nan


def _order(value) -> tuple:
    """A total order on values: numbers, then NaN, then None (ties must break the same way
    whatever the merge order, or First/Last would not be commutative)."""
    if value is None:
        return (2, 0)
    if isinstance(value, float) and value != value:
        return (1, 0)
    return (0, value)


@dataclass(frozen=True)
class First(Reducer):
    """The value at the earliest time; ties go to the smallest value.  State ``(time, value)``
    or None; ``of(times, values)``."""

    _latest = False

    def identity(self):
        return None

    def merge(self, a, b):
        if a is None:
            return b
        if b is None:
            return a
        ka, kb = (a[0], _order(a[1])), (b[0], _order(b[1]))
        return a if (ka >= kb if self._latest else ka <= kb) else b

    def of(self, times, values):
        t = times.to_numpy() if hasattr(times, "to_numpy") else np.asarray(times)
        v = values.to_list() if hasattr(values, "to_list") else list(values)
        if len(t) == 0:
            return None
        edge = t.max() if self._latest else t.min()
        best = None
        for i in np.flatnonzero(t == edge):
            cand = (t[i].item() if hasattr(t[i], "item") else t[i], v[i])
            best = cand if best is None else self.merge(best, cand)
        return best

    def finalize(self, state):
        return None if state is None else state[1]


@dataclass(frozen=True)
class Last(First):
    """The value at the latest time; ties go to the largest value."""

    _latest = True


@dataclass(frozen=True)
class WeightedMean(Reducer):
    """Sum(w * x) / Sum(w) with state ``(sum of weights, weighted mean)`` merged like Chan's
    mean update (no large running sum to lose digits in); ``of(values, weights)``."""

    def identity(self):
        return (0.0, 0.0)

    def merge(self, a, b):
        wa, ma = a
        wb, mb = b
        if wa == 0:
            return b
        if wb == 0:
            return a
        w = wa + wb
        return (w, ma + (mb - ma) * (wb / w))

    def of(self, values, weights):
        x, w = _array(values), _array(weights)
        total = float(w.sum())
        if total == 0:
            return (0.0, 0.0)
        return (total, float((w * x).sum() / total))

    def finalize(self, state) -> float:
        w, mean = state
        return mean if w else math.nan


@dataclass(frozen=True)
class Grouped(Reducer):
    """One ``inner`` state per key (minute, symbol, ...): state ``{key: state}``, merged key by
    key; ``of(keys, *columns)`` applies ``inner.of`` to each key's rows."""

    inner: Reducer

    def identity(self) -> dict:
        return {}

    def merge(self, a: dict, b: dict) -> dict:
        out = dict(a)
        for key, state in b.items():
            out[key] = self.inner.merge(out[key], state) if key in out else state
        return out

    def of(self, keys, *columns) -> dict:
        k = keys.to_numpy() if hasattr(keys, "to_numpy") else np.asarray(keys)
        if len(k) == 0:
            return {}
        order = np.argsort(k, kind="stable")
        sorted_keys = k[order]
        cuts = np.flatnonzero(sorted_keys[1:] != sorted_keys[:-1]) + 1
        cols = [c.to_numpy() if hasattr(c, "to_numpy") else np.asarray(c) for c in columns]
        out = {}
        for rows in np.split(order, cuts):
            key = k[rows[0]]
            out[key.item() if hasattr(key, "item") else key] = \
                self.inner.of(*(c[rows] for c in cols))
        return out

    def finalize(self, state: dict) -> dict:
        return {key: self.inner.finalize(s) for key, s in sorted(state.items())}


@dataclass(frozen=True)
class OLSMoments(Reducer):
    """Sufficient statistics of a linear regression of y on ``k - 1`` regressors: row count,
    column means and the *centred* cross-product matrix of ``[x..., y]``, merged with the
    multivariate form of Chan's update.  State ``(n, mean_hi, mean_lo, C)``.

    Centring keeps the fit accurate when regressors sit far from zero with little variance
    (x near 1e6): raw sums of squares would cancel.  The means are kept as a double-double
    (``hi + lo``): Chan's merge needs the difference of two partitions' means, and with plain
    doubles that difference carries an error of ``eps * |mean|`` -- relative ``2e-7`` for x
    near 1e6 with spread 1e-3 -- while ``hi`` parts of close means subtract exactly.

    ``of(x, y)``: ``x`` a (rows, k-1) array, ``y`` a vector; rows with NaN in any column are
    dropped, never zero-filled.
    """

    def identity(self):
        return (0, None, None, None)

    def merge(self, a, b):
        na, ha, la, ca = a
        nb, hb, lb, cb = b
        if na == 0:
            return b
        if nb == 0:
            return a
        n = na + nb
        delta = (hb - ha) + (lb - la)
        step = delta * (nb / n)
        hi = ha + step
        lo = la + ((ha - hi) + step)   # what the rounding of ``hi`` lost
        return (n, hi, lo, ca + cb + np.outer(delta, delta) * (na * nb / n))

    def of(self, x, y):
        x = np.asarray(x, dtype=np.float64)
        if x.ndim == 1:
            x = x[:, None]
        z = np.column_stack([x, np.asarray(y, dtype=np.float64)])
        z = z[~np.isnan(z).any(axis=1)]
        if len(z) == 0:
            return self.identity()
        hi = z.mean(axis=0)
        lo = (z - hi).mean(axis=0)
        centred = (z - hi) - lo
        return (len(z), hi, lo, centred.T @ centred)

    def finalize(self, state):
        """``(n, means, centred cross-products)``."""
        n, hi, lo, c = state
        return (n, None if hi is None else hi + lo, c)


@dataclass(frozen=True)
class _Binary(Reducer):
    """A plain binary function: merged left to right, with no identity (None when empty)."""

    fn: Callable[[Any, Any], Any]

    def identity(self) -> Any:
        return _EMPTY

    def merge(self, a, b):
        if a is _EMPTY:
            return b
        if b is _EMPTY:
            return a
        return self.fn(a, b)

    def finalize(self, state):
        return None if state is _EMPTY else state


_EMPTY = object()


def as_reducer(reduce: Reducer | Callable[[Any, Any], Any]) -> Reducer:
    """A reducer as given, or a binary function wrapped as one."""
    if isinstance(reduce, Reducer):
        return reduce
    if isinstance(reduce, type) and issubclass(reduce, Reducer):
        return reduce()
    if callable(reduce):
        return _Binary(reduce)
    raise TypeError(f"reduce must be an hfq.reduce reducer or a binary function, not "
                    f"{type(reduce).__name__}")
