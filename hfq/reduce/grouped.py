"""One reducer per group: :class:`Grouped`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from hfq.reduce.base import (
    R,
    Reducer,
    S,
)
from hfq.reduce.ordered import order_key

__all__ = ["Grouped"]

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
    return tuple(map(order_key, key)) if isinstance(key, tuple) else order_key(key)


