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

__all__ = ["Count", "Max", "Mean", "Min", "Reducer", "Std", "Sum", "Var", "as_reducer"]


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
        total = arr.sum()
        return total.item() if hasattr(total, "item") else total


@dataclass(frozen=True)
class Min(Reducer):
    """Smallest value; None for no values."""

    def identity(self) -> Any:
        return None

    def merge(self, a, b):
        if a is None:
            return b
        if b is None:
            return a
        return min(a, b)

    def of(self, values):
        arr = values.to_numpy() if hasattr(values, "to_numpy") else np.asarray(values)
        return arr.min().item() if len(arr) else None


@dataclass(frozen=True)
class Max(Min):
    """Largest value; None for no values."""

    def merge(self, a, b):
        if a is None:
            return b
        if b is None:
            return a
        return max(a, b)

    def of(self, values):
        arr = values.to_numpy() if hasattr(values, "to_numpy") else np.asarray(values)
        return arr.max().item() if len(arr) else None


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
