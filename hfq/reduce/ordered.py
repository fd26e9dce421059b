"""The first and last value by a time (or any order): :class:`First`, :class:`Last`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import polars as pl

from hfq.reduce.base import (
    Input,
    Reducer,
    Value,
    _check_sources,
)

__all__ = ["First", "Last", "Timed", "order_key"]

def order_key(value: Value) -> tuple[int, Any]:
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
        ka, kb = (a[0], order_key(a[1])), (b[0], order_key(b[1]))
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


