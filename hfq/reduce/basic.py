"""Counts, sums, extremes and moments: :class:`Count`, :class:`Sum`, :class:`Min`,
:class:`Max`, :class:`Var`, :class:`Std`, :class:`Mean`, :class:`WeightedMean`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import numpy as np
import polars as pl

from hfq.reduce.base import (
    Input,
    Reducer,
    Total,
    Value,
    _check_input,
    _check_sources,
    _complete,
    _evaluate,
    _floats,
    _present,
    _python,
)

__all__ = ["Count", "Max", "Mean", "Min", "Std", "Sum", "Var", "VarState", "WeightedMean",
           "WeightedState"]

@dataclass(frozen=True)
class Count(Reducer[int, int]):
    """Number of rows (``on`` None) or of non-null values of ``on``; states are ints.

    Parameters
    ----------
    on
        A column name or polars expression whose non-null values are counted (NaN counts);
        None counts rows.

    Examples
    --------
    >>> import polars as pl
    >>> from hfq import reduce as hr
    >>> df = pl.DataFrame({"bid": [1.0, None, float("nan")]})
    >>> hr.Count().accumulate(df), hr.Count(on="bid").accumulate(df)
    (3, 2)
    """

    on: Input = None

    def __post_init__(self) -> None:
        _check_input(self.on, "on")

    def _sources(self) -> tuple[Input, ...]:
        return () if self.on is None else (self.on,)

    def identity(self) -> int:
        """0, the count of no rows.

        Examples
        --------
        >>> from hfq import reduce as hr
        >>> hr.Count().identity()
        0
        """
        return 0

    def merge(self, a: int, b: int) -> int:
        """The sum of two counts.

        Examples
        --------
        >>> from hfq import reduce as hr
        >>> hr.Count().merge(3, 4)
        7
        """
        return int(a) + int(b)

    def accumulate(self, frame: pl.DataFrame) -> int:
        """The rows of ``frame``, or its non-null values of ``on``.

        Examples
        --------
        >>> import polars as pl
        >>> from hfq import reduce as hr
        >>> df = pl.DataFrame({"bid": [10.0, 10.5, 11.0], "ofr": [10.1, 10.4, 11.2]})
        >>> crossed = pl.when(pl.col("bid") > pl.col("ofr")).then(1)   # null where not
        >>> hr.Count(on=crossed).accumulate(df)                        # the crossed quotes
        1
        """
        if self.on is None:
            return frame.height
        values = _evaluate(frame, self.on)
        return values.len() - values.null_count()


@dataclass(frozen=True)
class Sum(Reducer[Total, Total]):
    """Sum of values: exact for integers (wrapping like numpy's int64); for floats merged
    partial sums, NaN propagating and overflow giving IEEE +-inf.  Nulls are skipped.

    ``merge`` is ``a + b``, so ``Sum()`` also merges numbers (or numpy arrays of sums,
    elementwise) that a map function computed itself.

    Parameters
    ----------
    on
        A column name or polars expression; None: the frame's only column.

    Examples
    --------
    >>> import polars as pl
    >>> from hfq import reduce as hr
    >>> df = pl.DataFrame({"bid": [1.0, 2.0, None], "ofr": [1.5, 2.5, 3.0]})
    >>> hr.Sum(on="bid").accumulate(df)
    3.0
    >>> r = hr.Sum(on=pl.col("ofr") - pl.col("bid"))
    >>> r.columns(), r.accumulate(df)
    (['ofr', 'bid'], 1.0)
    """

    on: Input = None

    def __post_init__(self) -> None:
        _check_input(self.on, "on")

    def _sources(self) -> tuple[Input, ...]:
        return (self.on,)

    def identity(self) -> Total:
        """0, the sum of no values.

        Examples
        --------
        >>> from hfq import reduce as hr
        >>> hr.Sum().identity()
        0
        """
        return 0

    def merge(self, a: Total, b: Total) -> Total:
        """``a + b``: numbers, or numpy arrays of sums elementwise.

        Examples
        --------
        >>> import numpy as np
        >>> from hfq import reduce as hr
        >>> hr.Sum().merge(2, 3.5)
        5.5
        >>> hr.Sum().merge(np.array([1, 2]), np.array([10, 20]))   # sums a map function made
        array([11, 22])
        """
        return a + b

    def accumulate(self, frame: pl.DataFrame) -> Total:
        """The sum of the non-null values: an int for integer columns, else a float.

        Examples
        --------
        >>> import polars as pl
        >>> from hfq import reduce as hr
        >>> hr.Sum(on="size").accumulate(pl.DataFrame({"size": [100, None, 300]}))
        400
        >>> hr.Sum(on="bid").accumulate(pl.DataFrame({"bid": [1.0, float("nan")]}))
        nan
        """
        (values,) = self._read(frame)
        arr = _present(values).to_numpy()
        with np.errstate(over="ignore", invalid="ignore"):   # IEEE: overflow gives +-inf
            total: Total = _python(arr.sum())
        return total


def _nan(value: Any) -> bool:
    return isinstance(value, float) and value != value


@dataclass(frozen=True)
class Min(Reducer[Value | None, Value | None]):
    """Smallest value; None for no values; NaN if any value is NaN (as numpy).  Nulls are
    skipped; non-float columns (ints, dates, strings) compare as polars does.

    Parameters
    ----------
    on
        A column name or polars expression; None: the frame's only column.

    Examples
    --------
    >>> import polars as pl
    >>> from hfq import reduce as hr
    >>> df = pl.DataFrame({"bid": [2.0, None, 1.0]})
    >>> hr.Min(on="bid").accumulate(df), hr.Min(on="bid").accumulate(df.clear())
    (1.0, None)
    """

    on: Input = None

    _largest: ClassVar[bool] = False

    def __post_init__(self) -> None:
        _check_input(self.on, "on")

    def _sources(self) -> tuple[Input, ...]:
        return (self.on,)

    def identity(self) -> Value | None:
        """None: no values.

        Examples
        --------
        >>> from hfq import reduce as hr
        >>> hr.Min().identity() is None
        True
        """
        return None

    def merge(self, a: Value | None, b: Value | None) -> Value | None:
        """The smaller (:class:`Max`: the larger) of two states; None gives way to a value,
        NaN wins.

        Examples
        --------
        >>> from hfq import reduce as hr
        >>> hr.Min().merge(2.0, 3.0), hr.Max().merge(2.0, 3.0)
        (2.0, 3.0)
        >>> hr.Min().merge(None, 3.0), hr.Min().merge(2.0, float("nan"))
        (3.0, nan)
        """
        if a is None or _nan(b):
            return b
        if b is None or _nan(a):
            return a
        return max(a, b) if self._largest else min(a, b)

    def accumulate(self, frame: pl.DataFrame) -> Value | None:
        """The smallest (:class:`Max`: largest) non-null value of ``frame``, None if none.

        Examples
        --------
        >>> import polars as pl
        >>> from hfq import reduce as hr
        >>> df = pl.DataFrame({"symbol": ["MSFT", "IBM", None], "bid": [1.0, float("nan"), 2.0]})
        >>> hr.Min(on="symbol").accumulate(df), hr.Max(on="symbol").accumulate(df)
        ('IBM', 'MSFT')
        >>> hr.Min(on="bid").accumulate(df)       # NaN propagates, as in numpy
        nan
        """
        (values,) = self._read(frame)
        values = _present(values)
        if values.len() == 0:
            return None
        if values.dtype.is_float():   # numpy's min/max propagate NaN, polars' skip it
            arr = values.to_numpy()
            return _python(arr.max() if self._largest else arr.min())
        return values.max() if self._largest else values.min()


@dataclass(frozen=True)
class Max(Min):
    """Largest value; None for no values; NaN if any value is NaN (as numpy).

    Examples
    --------
    >>> import polars as pl
    >>> from hfq import reduce as hr
    >>> hr.Max(on="size").accumulate(pl.DataFrame({"size": [100, 300, 200]}))
    300
    """

    _largest: ClassVar[bool] = True


class VarState(NamedTuple):
    """State of :class:`Var`, :class:`Std` and :class:`Mean`: count, mean and sum of squared
    deviations from it."""

    n: int
    mean: float
    m2: float


@dataclass(frozen=True)
class Var(Reducer[VarState, float]):
    """Variance with ``ddof`` (1 by default; NaN for ``ddof`` or fewer values).  State
    :class:`VarState` ``(n, mean, m2)`` merged with Chan's update, which stays accurate for
    data far from zero (no sum-of-squares cancellation).  Nulls are skipped.

    Parameters
    ----------
    on
        A column name or polars expression; None: the frame's only column.
    ddof
        Delta degrees of freedom: the divisor is ``n - ddof``.

    Examples
    --------
    >>> import polars as pl
    >>> from hfq import reduce as hr
    >>> df = pl.DataFrame({"bid": [1.0, 2.0, 3.0, 4.0]})
    >>> r = hr.Var(on="bid", ddof=0)
    >>> r.accumulate(df[:2])
    VarState(n=2, mean=1.5, m2=0.5)
    >>> r.finalize(r.merge(r.accumulate(df[:2]), r.accumulate(df[2:])))
    1.25
    """

    on: Input = None
    ddof: int = 1

    def __post_init__(self) -> None:
        _check_input(self.on, "on")

    def _sources(self) -> tuple[Input, ...]:
        return (self.on,)

    def identity(self) -> VarState:
        """``VarState(0, 0.0, 0.0)``: no values.

        Examples
        --------
        >>> from hfq import reduce as hr
        >>> hr.Var().identity()
        VarState(n=0, mean=0.0, m2=0.0)
        """
        return VarState(0, 0.0, 0.0)

    def merge(self, a: VarState, b: VarState) -> VarState:
        """Chan's update: the count, mean and squared deviations of the values of both.

        Examples
        --------
        >>> from hfq import reduce as hr
        >>> r = hr.Var()
        >>> r.merge(hr.VarState(n=2, mean=1.5, m2=0.5), hr.VarState(n=1, mean=6.0, m2=0.0))
        VarState(n=3, mean=3.0, m2=14.0)
        >>> r.of([1.0, 2.0, 6.0])                  # the same values in one piece
        VarState(n=3, mean=3.0, m2=14.0)
        """
        na, ma, qa = a
        nb, mb, qb = b
        if na == 0:
            return b
        if nb == 0:
            return a
        n = na + nb
        delta = mb - ma
        return VarState(n, ma + delta * nb / n, qa + qb + delta * delta * na * nb / n)

    def accumulate(self, frame: pl.DataFrame) -> VarState:
        """The count, mean and sum of squared deviations of the non-null values.

        Examples
        --------
        >>> import polars as pl
        >>> from hfq import reduce as hr
        >>> hr.Var(on="bid").accumulate(pl.DataFrame({"bid": [1.0, None, 3.0]}))
        VarState(n=2, mean=2.0, m2=2.0)
        """
        (values,) = self._read(frame)
        arr = _floats(values)
        if len(arr) == 0:
            return self.identity()
        with np.errstate(over="ignore", invalid="ignore"):   # IEEE: overflow gives +-inf
            mean = float(arr.mean())
            return VarState(len(arr), mean, float(((arr - mean) ** 2).sum()))

    def finalize(self, state: VarState) -> float:
        """``m2 / (n - ddof)``; NaN for ``ddof`` values or fewer.

        Examples
        --------
        >>> from hfq import reduce as hr
        >>> state = hr.VarState(n=2, mean=2.0, m2=2.0)
        >>> hr.Var().finalize(state), hr.Var(ddof=0).finalize(state), hr.Var(ddof=2).finalize(state)
        (2.0, 1.0, nan)
        """
        n, _, m2 = state
        return m2 / (n - self.ddof) if n > self.ddof else math.nan


@dataclass(frozen=True)
class Std(Var):
    """Standard deviation (square root of :class:`Var`, same state and ``ddof``).

    Examples
    --------
    >>> import polars as pl
    >>> from hfq import reduce as hr
    >>> r = hr.Std(on="bid", ddof=0)
    >>> r.finalize(r.accumulate(pl.DataFrame({"bid": [1.0, 3.0]})))
    1.0
    """

    def finalize(self, state: VarState) -> float:
        """The square root of :meth:`Var.finalize`.

        Examples
        --------
        >>> from hfq import reduce as hr
        >>> hr.Std().finalize(hr.VarState(n=3, mean=2.0, m2=8.0))
        2.0
        """
        return math.sqrt(super().finalize(state))


@dataclass(frozen=True)
class Mean(Var):
    """Mean of values (NaN for none); shares :class:`Var`'s stable state.

    Examples
    --------
    >>> import polars as pl
    >>> from hfq import reduce as hr
    >>> r = hr.Mean(on="bid")
    >>> r.finalize(r.accumulate(pl.DataFrame({"bid": [1.0, None, 3.0]})))
    2.0
    >>> r.finalize(r.identity())
    nan
    """

    def finalize(self, state: VarState) -> float:
        """The state's mean; NaN for no values.

        Examples
        --------
        >>> from hfq import reduce as hr
        >>> hr.Mean().finalize(hr.VarState(n=2, mean=1.5, m2=0.5))
        1.5
        """
        n, mean, _ = state
        return mean if n else math.nan


class WeightedState(NamedTuple):
    """State of :class:`WeightedMean`: sum of weights and the weighted mean."""

    weight: float
    mean: float


@dataclass(frozen=True)
class WeightedMean(Reducer[WeightedState, float]):
    """Sum(w * x) / Sum(w) (NaN for no weight), with state :class:`WeightedState` ``(sum of
    weights, weighted mean)`` merged like Chan's mean update (no large running sum to lose
    digits in).  Weights are non-negative; rows with a null value or weight are skipped.

    Parameters
    ----------
    on
        The values: a column name or polars expression.
    weight
        The weights: a column name or polars expression.  Give both or neither (then the frame
        has the two columns ``[value, weight]``).

    Examples
    --------
    >>> import polars as pl
    >>> from hfq import reduce as hr
    >>> df = pl.DataFrame({"price": [10.0, 11.0, 12.0], "size": [100, 300, 0]})
    >>> r = hr.WeightedMean(on="price", weight="size")
    >>> r.finalize(r.merge(r.accumulate(df[:1]), r.accumulate(df[1:])))
    10.75
    """

    on: Input = None
    weight: Input = None

    def __post_init__(self) -> None:
        _check_sources(self, "on= and weight=")

    def _sources(self) -> tuple[Input, ...]:
        return (self.on, self.weight)

    def identity(self) -> WeightedState:
        """``WeightedState(0.0, 0.0)``: no weight.

        Examples
        --------
        >>> from hfq import reduce as hr
        >>> hr.WeightedMean().identity()
        WeightedState(weight=0.0, mean=0.0)
        """
        return WeightedState(0.0, 0.0)

    def merge(self, a: WeightedState, b: WeightedState) -> WeightedState:
        """The total weight and the weighted mean of both.

        Examples
        --------
        >>> from hfq import reduce as hr
        >>> hr.WeightedMean().merge(hr.WeightedState(weight=1.0, mean=10.0),
        ...                         hr.WeightedState(weight=3.0, mean=11.0))
        WeightedState(weight=4.0, mean=10.75)
        """
        wa, ma = a
        wb, mb = b
        if wa == 0:
            return b
        if wb == 0:
            return a
        w = wa + wb
        return WeightedState(w, ma + (mb - ma) * (wb / w))

    def accumulate(self, frame: pl.DataFrame) -> WeightedState:
        """The total weight and weighted mean of the rows with both a value and a weight.

        Examples
        --------
        >>> import polars as pl
        >>> from hfq import reduce as hr
        >>> df = pl.DataFrame({"price": [10.0, 11.0, 12.0], "size": [100, 300, None]})
        >>> hr.WeightedMean(on="price", weight="size").accumulate(df)
        WeightedState(weight=400.0, mean=10.75)
        """
        values, weights = _complete(self._read(frame))
        x, w = _floats(values), _floats(weights)
        with np.errstate(over="ignore", invalid="ignore"):   # IEEE: overflow gives +-inf
            total = float(w.sum())
            if total == 0:
                return self.identity()
            return WeightedState(total, float((w * x).sum() / total))

    def finalize(self, state: WeightedState) -> float:
        """The state's weighted mean; NaN for no weight.

        Examples
        --------
        >>> from hfq import reduce as hr
        >>> r = hr.WeightedMean()
        >>> r.finalize(hr.WeightedState(weight=4.0, mean=10.75)), r.finalize(r.identity())
        (10.75, nan)
        """
        w, mean = state
        return mean if w else math.nan


