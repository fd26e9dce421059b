"""The reducer protocol (:class:`Reducer`), the helpers every reducer uses to read its
inputs, and :func:`as_reducer`."""

from __future__ import annotations

import abc
import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeAlias, TypeVar, final

import numpy as np
import numpy.typing as npt
import polars as pl

__all__ = ["Reducer", "as_reducer"]

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
