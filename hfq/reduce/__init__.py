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

from hfq.reduce.base import Reducer, as_reducer
from hfq.reduce.basic import (
    Count,
    Max,
    Mean,
    Min,
    Std,
    Sum,
    Var,
    VarState,
    WeightedMean,
    WeightedState,
)
from hfq.reduce.grouped import Grouped
from hfq.reduce.ols import OLSMoments, OLSResult, OLSState
from hfq.reduce.ordered import First, Last, Timed

__all__ = ["Count", "First", "Grouped", "Last", "Max", "Mean", "Min", "OLSMoments", "OLSResult",
           "OLSState", "Reducer", "Std", "Sum", "Timed", "Var", "VarState", "WeightedMean",
           "WeightedState", "as_reducer"]
