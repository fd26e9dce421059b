"""Mergeable reducers: monoids whose partial results combine in any order and tree shape.

A reducer is built with the input it reads (``Sum(on="bid")``, ``First(on="bid", by="time")``,
``Grouped(by="symbol", reducer=Mean(on="bid"))``...), like Ray Data's ``AggregateFn``.  A map
function turns one partition into a partial *state* with ``reducer.accumulate(frame)``; the
driver merges states with ``reducer.merge`` starting from ``reducer.identity()`` and turns the
final state into the answer with ``reducer.finalize``.  ``reducer.columns()`` names the columns
``accumulate`` reads, so a scan can read only those.  For every reducer here, splitting the data
any way and merging the partial states gives the one-pass answer (exactly for counts, min, max,
first and last; to rounding for floating-point sums and moments, which use Chan's pairwise
update).

Inputs are column names or polars expressions (evaluated with ``frame.select(expr)``).  A
reducer built without names (``Sum()``, ``OLSMoments()``) reads the frame's columns by
position: the only column; ``[value, time]`` for :class:`First` and :class:`Last`;
``[value, weight]`` for :class:`WeightedMean`; ``[x..., y]`` for :class:`OLSMoments`.  Nulls
are missing values and are skipped (a row with a null value, weight, time or regressor is
dropped; only :class:`First` and :class:`Last` keep null values, ranked after every number);
NaN is a value and propagates, as in numpy.

Examples
--------
>>> import polars as pl
>>> from hfq import reduce as hr
>>> df = pl.DataFrame({"symbol": ["A", "A", "B"], "bid": [1.0, 2.0, 3.0]})
>>> r = hr.Mean(on="bid")
>>> r.columns()
['bid']
>>> r.finalize(r.merge(r.accumulate(df[:2]), r.accumulate(df[2:])))
2.0

On a table, the map function is the bound ``accumulate`` and only the input columns are read
(``t.map_reduce(r.accumulate, r, columns=r.columns())``).  Arrays go through :meth:`Reducer.of`,
one array per input column:

>>> r.finalize(r.merge(r.of([1.0, 2.0]), r.of([3.0])))
2.0
"""

from __future__ import annotations

import abc
import functools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, NamedTuple, TypeAlias, TypeVar, final

import numpy as np
import numpy.typing as npt
import polars as pl

__all__ = ["Count", "First", "Grouped", "Last", "Max", "Mean", "Min", "OLSMoments", "Reducer",
           "Std", "Sum", "Var", "WeightedMean", "as_reducer"]

S = TypeVar("S")
"""A reducer's state: what one partition reduces to, and what merges."""
R = TypeVar("R")
"""A reducer's answer: what ``finalize`` makes of the merged state."""

Input: TypeAlias = str | pl.Expr | None
"""One input of a reducer: a column name, a polars expression, or None (by position)."""
Column: TypeAlias = pl.Series | npt.NDArray[Any] | Sequence[Any]
"""One column for :meth:`Reducer.of`: a polars Series, a numpy array or a list."""
FloatArray: TypeAlias = npt.NDArray[np.float64]
Total: TypeAlias = int | float | npt.NDArray[Any]
"""State of :class:`Sum`: an int (exact) or a float; numpy arrays of sums merge elementwise."""
Value: TypeAlias = Any
"""One value of a column as Python gives it (float, int, datetime, str, None...)."""


class Reducer(abc.ABC, Generic[S, R]):
    """A monoid over the states ``S`` of partitions: ``merge`` is associative and
    ``identity()`` is its neutral element; ``finalize`` turns a state into the answer ``R``.

    Subclasses implement :meth:`identity`, :meth:`merge`, :meth:`accumulate` and, unless the
    state is the answer, :meth:`finalize`; the inputs are given to their constructor.

    Examples
    --------
    >>> import polars as pl
    >>> from hfq import reduce as hr
    >>> r = hr.Sum(on="bid")
    >>> df = pl.DataFrame({"bid": [1.5, 2.5, 4.0]})
    >>> r.finalize(r.merge_all([r.accumulate(df[:1]), r.accumulate(df[1:])]))
    8.0
    """

    @abc.abstractmethod
    def identity(self) -> S:
        """The state of no rows: ``merge(identity(), s) == s == merge(s, identity())``.

        Examples
        --------
        >>> from hfq import reduce as hr
        >>> r = hr.Mean()
        >>> r.identity()
        VarState(n=0, mean=0.0, m2=0.0)
        >>> r.merge(r.identity(), r.of([2.0, 4.0])) == r.of([2.0, 4.0])
        True
        """

    @abc.abstractmethod
    def merge(self, a: S, b: S) -> S:
        """Combine two states (associative; ``a`` holds the earlier rows when order matters).

        Parameters
        ----------
        a, b
            States from :meth:`accumulate`, :meth:`identity` or :meth:`merge`.

        Returns
        -------
        S
            The state of the rows of both.

        Examples
        --------
        >>> from hfq import reduce as hr
        >>> r = hr.Var(ddof=0)
        >>> r.merge(r.of([1.0, 2.0]), r.of([3.0, 4.0]))        # two partitions' states
        VarState(n=4, mean=2.5, m2=5.0)
        >>> r.of([1.0, 2.0, 3.0, 4.0])                          # the state of all the rows
        VarState(n=4, mean=2.5, m2=5.0)
        """

    @abc.abstractmethod
    def accumulate(self, frame: pl.DataFrame) -> S:
        """The state of one partition: the rows of ``frame``, reading the reducer's inputs.

        Parameters
        ----------
        frame
            A polars DataFrame holding at least :meth:`columns` (or, for a reducer built
            without names, exactly the columns it reads by position).

        Returns
        -------
        S
            A state to :meth:`merge`.

        Examples
        --------
        >>> import polars as pl
        >>> from hfq import reduce as hr
        >>> part = pl.DataFrame({"bid": [1.0, 2.0], "bidsiz": [100, 200]})   # one partition
        >>> hr.Sum(on="bidsiz").accumulate(part)
        300
        """

    def finalize(self, state: S) -> R:
        """The answer for a merged state (the state itself unless a subclass says otherwise).

        Examples
        --------
        >>> from hfq import reduce as hr
        >>> hr.Count().finalize(7)                  # a count's state is its answer
        7
        >>> hr.Mean().finalize(hr.Mean().of([1.0, 2.0]))   # a mean's is (n, mean, m2)
        1.5
        """
        return state   # type: ignore[return-value]   # overridden wherever S is not R

    def merge_all(self, states: Iterable[S]) -> S:
        """Merge ``states`` left to right, from :meth:`identity` (which is what no states give).

        Examples
        --------
        >>> from hfq import reduce as hr
        >>> hr.Count().merge_all([3, 4, 0])
        7
        >>> hr.Count().merge_all([])
        0
        """
        return functools.reduce(self.merge, states, self.identity())

    def columns(self) -> list[str]:
        """The columns :meth:`accumulate` reads (the root names of expression inputs), in
        input order without repeats; empty when it reads none or reads by position.

        Examples
        --------
        >>> import polars as pl
        >>> from hfq import reduce as hr
        >>> hr.Last(on=pl.col("ofr") - pl.col("bid"), by="time").columns()
        ['ofr', 'bid', 'time']
        >>> hr.Count().columns()
        []
        """
        return _root_names(self._sources())

    @final
    def of(self, *columns: Column) -> S:
        """The state of arrays: one per input column, in :meth:`columns` order (a 2-D numpy
        array gives its columns).  Shorthand for :meth:`accumulate` on a frame built from them;
        arrays past the named inputs are named ``column_<i>`` (how a reducer built without
        names, or a :class:`Grouped` one's inner reducer, reads them by position).

        Examples
        --------
        >>> import numpy as np
        >>> from hfq import reduce as hr
        >>> hr.Sum().of(np.array([1, 2, 3]))
        6
        >>> r = hr.WeightedMean(on="price", weight="size")
        >>> r.finalize(r.of([10.0, 11.0], [1, 3]))
        10.75
        """
        names = self.columns()
        series: list[Column] = []
        for col in columns:
            if isinstance(col, np.ndarray) and col.ndim == 2:
                series.extend(col[:, j] for j in range(col.shape[1]))
            else:
                series.append(col)
        if len(series) < len(names):
            raise TypeError(f"{type(self).__name__}.of: {len(series)} column(s) for the inputs "
                            f"{names}")
        frame = pl.DataFrame([_series(names[i] if i < len(names) else f"column_{i}", col)
                              for i, col in enumerate(series)])
        return self.accumulate(frame)

    def _sources(self) -> tuple[Input, ...]:
        """The inputs, in the order they bind to columns (all None: read by position)."""
        return ()

    def _positional(self) -> bool:
        sources = self._sources()
        return bool(sources) and all(s is None for s in sources)

    def _read(self, frame: pl.DataFrame) -> list[pl.Series]:
        """The input columns of ``frame``: named, evaluated, or taken by position."""
        sources = self._sources()
        if self._positional():
            if frame.width != len(sources):
                raise ValueError(
                    f"{type(self).__name__} built without column names reads {len(sources)} "
                    f"column(s) by position, but the frame has {frame.columns}: name the "
                    "input(s) in its constructor (e.g. on=...)")
            return frame.get_columns()
        return [_evaluate(frame, s) for s in sources if s is not None]


def _check_input(source: Any, what: str) -> None:
    if source is not None and not isinstance(source, (str, pl.Expr)):
        raise TypeError(f"{what} must be a column name or a polars expression, not "
                        f"{type(source).__name__}")


def _check_sources(reducer: Reducer[Any, Any], names: str) -> None:
    sources = reducer._sources()
    for s in sources:
        _check_input(s, names)
    if any(s is None for s in sources) and not all(s is None for s in sources):
        raise ValueError(f"{type(reducer).__name__}: give all of {names}, or none (the frame's "
                         "columns by position)")


def _root_names(sources: Iterable[Input]) -> list[str]:
    names: list[str] = []
    for s in sources:
        if isinstance(s, str):
            names.append(s)
        elif isinstance(s, pl.Expr):
            names.extend(s.meta.root_names())
    return list(dict.fromkeys(names))


def _evaluate(frame: pl.DataFrame, source: str | pl.Expr) -> pl.Series:
    if isinstance(source, str):
        return frame.get_column(source)
    out = frame.select(source)
    if out.width != 1:
        raise ValueError(f"the input expression {source} gives {out.width} columns, not one")
    return out.to_series(0)


def _series(name: str, col: Column) -> pl.Series:
    if isinstance(col, pl.Series):
        return col.alias(name)
    if isinstance(col, np.ndarray):
        return pl.Series(name, col)
    return pl.Series(name, list(col), strict=False)


def _present(s: pl.Series) -> pl.Series:
    """The non-null values (an all-null or empty untyped column as Float64)."""
    s = s.drop_nulls() if s.null_count() else s
    return s.cast(pl.Float64) if s.dtype == pl.Null else s


def _floats(s: pl.Series) -> FloatArray:
    return np.asarray(_present(s).cast(pl.Float64).to_numpy(), dtype=np.float64)


def _complete(columns: list[pl.Series]) -> list[pl.Series]:
    """The rows with no null in any of ``columns``."""
    if not any(c.null_count() for c in columns):
        return columns
    keep = functools.reduce(lambda m, c: m & c.is_not_null(), columns[1:],
                            columns[0].is_not_null())
    return [c.filter(keep) for c in columns]


def _python(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


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


def _order(value: Value) -> tuple[int, Any]:
    """A total order on values: numbers, then NaN, then None (ties must break the same way
    whatever the merge order, or First/Last would not be commutative)."""
    if value is None:
        return (2, 0)
    if isinstance(value, float) and value != value:
        return (1, 0)
    return (0, value)


class Timed(NamedTuple):
    """State of :class:`First` and :class:`Last` (or None for no rows): a value and its time."""

    time: Value
    value: Value


@dataclass(frozen=True)
class First(Reducer[Timed | None, Value | None]):
    """The value of ``on`` at the earliest time ``by``; ties go to the smallest value (numbers,
    then NaN, then null).  State :class:`Timed` ``(time, value)``, None for no rows; rows with
    a null (or NaN) time are skipped, null values are kept.

    Parameters
    ----------
    on
        The value: a column name or polars expression.
    by
        The time: a column name or polars expression.  Give both or neither (then the frame
        has the two columns ``[value, time]``).

    Examples
    --------
    >>> import polars as pl
    >>> from hfq import reduce as hr
    >>> df = pl.DataFrame({"time": [3, 1, 2, 1], "bid": [9.0, 5.0, 7.0, 4.0]})
    >>> r = hr.First(on="bid", by="time")
    >>> r.accumulate(df)
    Timed(time=1, value=4.0)
    >>> r.finalize(r.merge(r.accumulate(df[2:]), r.accumulate(df[:2])))
    4.0
    """

    on: Input = None
    by: Input = None

    _latest: ClassVar[bool] = False

    def __post_init__(self) -> None:
        _check_sources(self, "on= and by=")

    def _sources(self) -> tuple[Input, ...]:
        return (self.on, self.by)

    def identity(self) -> Timed | None:
        """None: no rows.

        Examples
        --------
        >>> from hfq import reduce as hr
        >>> hr.First().identity() is None
        True
        """
        return None

    def merge(self, a: Timed | None, b: Timed | None) -> Timed | None:
        """The state with the earlier time (:class:`Last`: the later); a tie goes by value.

        Examples
        --------
        >>> from hfq import reduce as hr
        >>> a, b = hr.Timed(time=2, value=7.0), hr.Timed(time=1, value=9.0)
        >>> hr.First().merge(a, b), hr.Last().merge(a, b)
        (Timed(time=1, value=9.0), Timed(time=2, value=7.0))
        >>> hr.First().merge(None, a)
        Timed(time=2, value=7.0)
        """
        if a is None:
            return b
        if b is None:
            return a
        ka, kb = (a[0], _order(a[1])), (b[0], _order(b[1]))
        return a if (ka >= kb if self._latest else ka <= kb) else b

    def accumulate(self, frame: pl.DataFrame) -> Timed | None:
        """The earliest (:class:`Last`: latest) row's ``Timed(time, value)``; rows with a
        null time are skipped, a null value is kept.

        Examples
        --------
        >>> import polars as pl
        >>> from hfq import reduce as hr
        >>> df = pl.DataFrame({"time": [None, 2, 2], "bid": [1.0, None, 8.0]})
        >>> hr.First(on="bid", by="time").accumulate(df)       # ties: numbers first
        Timed(time=2, value=8.0)
        >>> hr.Last(on="bid", by="time").accumulate(df)        # ties: null last
        Timed(time=2, value=None)
        """
        values, times = self._read(frame)
        keep = times.is_not_null()
        if times.dtype.is_float():
            keep = keep & times.is_not_nan()
        times, values = times.filter(keep), values.filter(keep)
        if times.len() == 0:
            return None
        edge = times.max() if self._latest else times.min()
        best: Timed | None = None
        for value in values.filter(times == edge).to_list():
            best = self.merge(best, Timed(edge, value))
        return best

    def finalize(self, state: Timed | None) -> Value | None:
        """The state's value; None for no rows.

        Examples
        --------
        >>> from hfq import reduce as hr
        >>> hr.First().finalize(hr.Timed(time=1, value=9.0)), hr.First().finalize(None)
        (9.0, None)
        """
        return None if state is None else state[1]


@dataclass(frozen=True)
class Last(First):
    """The value at the latest time; ties go to the largest value (null above NaN above
    numbers).

    Examples
    --------
    >>> import polars as pl
    >>> from hfq import reduce as hr
    >>> df = pl.DataFrame({"time": [1, 3, 3], "bid": [9.0, 5.0, 7.0]})
    >>> hr.Last(on="bid", by="time").accumulate(df)
    Timed(time=3, value=7.0)
    """

    _latest: ClassVar[bool] = True


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


def _names(by: str | Sequence[str]) -> tuple[str, ...]:
    names = (by,) if isinstance(by, str) else tuple(by)
    if not names or not all(isinstance(b, str) for b in names):
        raise TypeError(f"by must be a column name or a non-empty list of them, not {by!r}")
    return names


@dataclass(frozen=True)
class Grouped(Reducer[dict[Any, S], dict[Any, R]]):
    """One ``reducer`` state per key (minute, symbol, ...): state ``{key: state}``, merged key
    by key; the answer ``{key: answer}`` in key order.  A key is the value of ``by``, or the
    tuple of values for a list of columns (null keys are kept, as None).

    ``accumulate`` groups the frame by ``by`` and accumulates each group with ``reducer``;
    an inner reducer built without names gets the group's other columns, by position.

    Parameters
    ----------
    by
        The key column, or a list of them.
    reducer
        The reducer applied within each group.

    Examples
    --------
    >>> import polars as pl
    >>> from hfq import reduce as hr
    >>> df = pl.DataFrame({"symbol": ["B", "A", "B"], "bid": [1.0, 2.0, 3.0]})
    >>> r = hr.Grouped(by="symbol", reducer=hr.Mean(on="bid"))
    >>> r.columns()
    ['symbol', 'bid']
    >>> r.finalize(r.merge(r.accumulate(df[:1]), r.accumulate(df[1:])))
    {'A': 2.0, 'B': 2.0}
    >>> hr.Grouped(by=["symbol", "bid"], reducer=hr.Count()).finalize(
    ...     hr.Grouped(by=["symbol", "bid"], reducer=hr.Count()).accumulate(df[:2]))
    {('A', 2.0): 1, ('B', 1.0): 1}
    """

    by: str | Sequence[str]
    reducer: Reducer[S, R]
    _keys: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        keys = _names(self.by)
        object.__setattr__(self, "_keys", keys)
        if not isinstance(self.by, str):
            object.__setattr__(self, "by", keys)   # hashable, like every reducer
        if not isinstance(self.reducer, Reducer):
            raise TypeError(f"reducer must be an hfq.reduce reducer, not "
                            f"{type(self.reducer).__name__}")

    def columns(self) -> list[str]:
        """The key columns, then those the inner reducer reads.

        Examples
        --------
        >>> from hfq import reduce as hr
        >>> hr.Grouped(by=["symbol", "date"], reducer=hr.Sum(on="bidsiz")).columns()
        ['symbol', 'date', 'bidsiz']
        """
        return list(dict.fromkeys([*self._keys, *self.reducer.columns()]))

    def identity(self) -> dict[Any, S]:
        """``{}``: no groups.

        Examples
        --------
        >>> from hfq import reduce as hr
        >>> hr.Grouped(by="symbol", reducer=hr.Count()).identity()
        {}
        """
        return {}

    def merge(self, a: dict[Any, S], b: dict[Any, S]) -> dict[Any, S]:
        """Key by key: a key in both merges its states with the inner reducer.

        Examples
        --------
        >>> from hfq import reduce as hr
        >>> hr.Grouped(by="symbol", reducer=hr.Count()).merge({"A": 2, "B": 1}, {"B": 4})
        {'A': 2, 'B': 5}
        """
        out = dict(a)
        for key, state in b.items():
            out[key] = self.reducer.merge(out[key], state) if key in out else state
        return out

    def accumulate(self, frame: pl.DataFrame) -> dict[Any, S]:
        """The inner reducer's state of each group of ``frame``, keyed by its key.

        Examples
        --------
        >>> import polars as pl
        >>> from hfq import reduce as hr
        >>> df = pl.DataFrame({"symbol": ["B", "A", "B"], "bid": [1.0, 2.0, 3.0]})
        >>> hr.Grouped(by="symbol", reducer=hr.Max(on="bid")).accumulate(df)
        {'B': 3.0, 'A': 2.0}
        """
        if frame.height == 0:
            return {}
        groups = frame.partition_by(list(self._keys), as_dict=True,
                                    include_key=not self.reducer._positional())
        single = len(self._keys) == 1
        return {(key[0] if single else key): self.reducer.accumulate(group)
                for key, group in groups.items()}

    def finalize(self, state: dict[Any, S]) -> dict[Any, R]:
        """The inner reducer's answer for each key, in key order (None last).

        Examples
        --------
        >>> from hfq import reduce as hr
        >>> r = hr.Grouped(by="symbol", reducer=hr.Mean(on="bid"))
        >>> r.finalize({"B": hr.VarState(2, 1.5, 0.5), None: hr.VarState(1, 4.0, 0.0),
        ...             "A": hr.VarState(0, 0.0, 0.0)})
        {'A': nan, 'B': 1.5, None: 4.0}
        """
        return {key: self.reducer.finalize(s)
                for key, s in sorted(state.items(), key=lambda kv: _key_order(kv[0]))}


def _key_order(key: Any) -> Any:
    return tuple(map(_order, key)) if isinstance(key, tuple) else _order(key)


class OLSState(NamedTuple):
    """State of :class:`OLSMoments`: row count, column means of ``[x..., y]`` as a
    double-double ``mean_hi + mean_lo``, and the centred cross-product matrix (None, None,
    None for no rows)."""

    n: int
    mean_hi: FloatArray | None
    mean_lo: FloatArray | None
    cross: FloatArray | None


class OLSResult(NamedTuple):
    """Answer of :class:`OLSMoments`: row count, means and centred cross-products of
    ``[x..., y]``."""

    n: int
    mean: FloatArray | None
    cross: FloatArray | None


def _inputs(x: Input | Sequence[str | pl.Expr]) -> tuple[Input, ...]:
    if x is None:
        return ()
    if isinstance(x, (str, pl.Expr)):
        return (x,)
    return tuple(x)


@dataclass(frozen=True)
class OLSMoments(Reducer[OLSState, OLSResult]):
    """Sufficient statistics of a linear regression of ``y`` on the regressors ``x``: row
    count, column means and the *centred* cross-product matrix of ``[x..., y]``, merged with
    the multivariate form of Chan's update.  State :class:`OLSState`
    ``(n, mean_hi, mean_lo, cross)``.

    Centring keeps the fit accurate when regressors sit far from zero with little variance
    (x near 1e6): raw sums of squares would cancel.  The means are kept as a double-double
    (``hi + lo``): Chan's merge needs the difference of two partitions' means, and with plain
    doubles that difference carries an error of ``eps * |mean|`` -- relative ``2e-7`` for x
    near 1e6 with spread 1e-3 -- while ``hi`` parts of close means subtract exactly.

    Rows with NaN or null in any column are dropped, never zero-filled.

    Parameters
    ----------
    y
        The response: a column name or polars expression.
    x
        The regressors: a name or expression, or a list of them.  Give both or neither (then
        the frame's last column is ``y`` and the others ``x``).

    Examples
    --------
    >>> import polars as pl
    >>> from hfq import reduce as hr
    >>> df = pl.DataFrame({"x": [0.0, 1.0, 2.0, None], "y": [1.0, 3.0, 5.0, 7.0]})
    >>> r = hr.OLSMoments(y="y", x=["x"])
    >>> n, mean, cross = r.finalize(r.merge(r.accumulate(df[:1]), r.accumulate(df[1:])))
    >>> n, mean.tolist(), cross.tolist()
    (3, [1.0, 3.0], [[2.0, 4.0], [4.0, 8.0]])
    >>> float(cross[0, 1] / cross[0, 0])   # the slope
    2.0
    """

    y: Input = None
    x: Input | Sequence[str | pl.Expr] = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "x", _inputs(self.x))
        if (self.y is None) != (not self.x):
            raise ValueError("OLSMoments: give both y= and x=, or neither (the frame's last "
                             "column is y, the others x)")
        for s in self._sources():
            _check_input(s, "y= and x=")

    def _sources(self) -> tuple[Input, ...]:
        return (*_inputs(self.x), self.y)

    def _read(self, frame: pl.DataFrame) -> list[pl.Series]:
        if self.y is None:
            if frame.width < 1:
                raise ValueError("OLSMoments built without y= reads the frame's last column "
                                 "as y; the frame has no columns")
            return frame.get_columns()
        return super()._read(frame)

    def identity(self) -> OLSState:
        """``OLSState(0, None, None, None)``: no rows.

        Examples
        --------
        >>> from hfq import reduce as hr
        >>> hr.OLSMoments().identity()
        OLSState(n=0, mean_hi=None, mean_lo=None, cross=None)
        """
        return OLSState(0, None, None, None)

    def merge(self, a: OLSState, b: OLSState) -> OLSState:
        """The moments of the rows of both (multivariate Chan update, means in double-double).

        Examples
        --------
        >>> from hfq import reduce as hr
        >>> r = hr.OLSMoments(y="y", x="x")
        >>> both = r.merge(r.of([0.0, 1.0], [1.0, 3.0]), r.of([2.0], [5.0]))   # x, then y
        >>> both.n, both.cross.tolist()
        (3, [[2.0, 4.0], [4.0, 8.0]])
        """
        na, ha, la, ca = a
        nb, hb, lb, cb = b
        if na == 0 or ha is None or la is None or ca is None:
            return b
        if nb == 0 or hb is None or lb is None or cb is None:
            return a
        n = na + nb
        delta = (hb - ha) + (lb - la)
        step = delta * (nb / n)
        hi = ha + step
        lo = la + ((ha - hi) + step)   # what the rounding of ``hi`` lost
        return OLSState(n, hi, lo, ca + cb + np.outer(delta, delta) * (na * nb / n))

    def accumulate(self, frame: pl.DataFrame) -> OLSState:
        """The moments of the rows of ``frame`` with no null or NaN among ``[x..., y]``.

        Examples
        --------
        >>> import polars as pl
        >>> from hfq import reduce as hr
        >>> df = pl.DataFrame({"x": [1.0, None, 3.0, 5.0], "y": [2.0, 5.0, float("nan"), 4.0]})
        >>> state = hr.OLSMoments(y="y", x="x").accumulate(df)    # rows 0 and 3 are complete
        >>> state.n, (state.mean_hi + state.mean_lo).tolist()
        (2, [3.0, 3.0])
        """
        cols = self._read(frame)
        z = np.column_stack([c.cast(pl.Float64).to_numpy() for c in cols]).astype(np.float64)
        z = z[~np.isnan(z).any(axis=1)]
        if len(z) == 0:
            return self.identity()
        with np.errstate(over="ignore", invalid="ignore"):   # IEEE: overflow gives +-inf
            hi = z.mean(axis=0)
            lo = (z - hi).mean(axis=0)
            centred = (z - hi) - lo
            return OLSState(len(z), hi, lo, centred.T @ centred)

    def finalize(self, state: OLSState) -> OLSResult:
        """``OLSResult(n, mean, cross)``: the row count, the means and the centred
        cross-products of ``[x..., y]``; None for no rows.

        Examples
        --------
        >>> from hfq import reduce as hr
        >>> r = hr.OLSMoments(y="y", x="x")
        >>> n, mean, cross = r.finalize(r.of([0.0, 2.0], [1.0, 5.0]))
        >>> n, mean.tolist(), cross.tolist()
        (2, [1.0, 3.0], [[2.0, 4.0], [4.0, 8.0]])
        >>> r.finalize(r.identity())
        OLSResult(n=0, mean=None, cross=None)
        """
        n, hi, lo, c = state
        return OLSResult(n, None if hi is None or lo is None else hi + lo, c)


_EMPTY: Any = object()


@dataclass(frozen=True)
class _Binary(Reducer[Any, Any]):
    """A plain binary function: merged left to right, with no identity (None when empty).
    It merges what map functions return and reads no frame."""

    fn: Callable[[Any, Any], Any]

    def identity(self) -> Any:
        return _EMPTY

    def merge(self, a: Any, b: Any) -> Any:
        if a is _EMPTY:
            return b
        if b is _EMPTY:
            return a
        return self.fn(a, b)

    def accumulate(self, frame: pl.DataFrame) -> Any:
        raise TypeError("a reducer made from a binary function merges what map functions "
                        "return; it has no accumulate")

    def finalize(self, state: Any) -> Any:
        return None if state is _EMPTY else state


def as_reducer(reduce: Reducer[Any, Any] | type[Reducer[Any, Any]] | Callable[[Any, Any], Any]
               ) -> Reducer[Any, Any]:
    """A reducer as given, a reducer class built with no arguments, or a binary function
    wrapped as a reducer (merged left to right; None when there is nothing to merge).

    Examples
    --------
    >>> from hfq import reduce as hr
    >>> r = hr.as_reducer(lambda a, b: a * b)
    >>> r.finalize(r.merge_all([2, 3, 4])), r.finalize(r.merge_all([]))
    (24, None)
    >>> hr.as_reducer(hr.Count).merge_all([1, 2])
    3
    """
    if isinstance(reduce, Reducer):
        return reduce
    if isinstance(reduce, type) and issubclass(reduce, Reducer):
        return reduce()
    if callable(reduce):
        return _Binary(reduce)
    raise TypeError(f"reduce must be an hfq.reduce reducer or a binary function, not "
                    f"{type(reduce).__name__}")
