"""Joins as plan operations: equi-joins with a broadcast right side and asof joins.

The right side is a query (or a frame); it is run once on the driver when the plan is staged
and the result travels to the nodes with the node stage, so each partition of the left side
joins on its node ("broadcast": keep the right side small).  Inner, left, semi, anti and cross
joins are partition-local this way; a full join needs every partition's unmatched rows and runs
on the driver.  An asof join matches each left row with the last (backward), next (forward) or
nearest right row of equal ``by`` keys, optionally within a ``tolerance``; DuckDB's
``ASOF JOIN`` drops left rows without a match, ``ASOF LEFT JOIN`` keeps them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import polars as pl

from hfq.engine.exprs import empty_lazy
from hfq.engine.ops import Op, _reads, _show

__all__ = ["AsofJoin", "Join", "WindowJoin", "resolve_right", "window_join_frames"]

_MATCH = "__matched"


def _right_lazy(right: Any) -> pl.LazyFrame:
    if isinstance(right, pl.DataFrame):
        return right.lazy()
    return empty_lazy(right.schema)   # a query: its schema until it is run


def resolve_right(op: Op, collect: Callable[[Any], pl.DataFrame] | None = None) -> Op:
    """The op with its right side run (a frame; by ``collect`` when given), ready to ship
    to the nodes."""
    right = getattr(op, "right", None)
    if right is None or isinstance(right, pl.DataFrame):
        return op
    frame = right.collect() if collect is None else collect(right)
    return replace(op, right=frame)   # type: ignore[type-var]


@dataclass(frozen=True)
class Join(Op):
    right: Any
    left_on: tuple[pl.Expr, ...]
    right_on: tuple[pl.Expr, ...]
    how: str = "inner"
    keep_keys: bool = False
    """Keep the right side's key columns (SQL: both sides' columns stay addressable)."""

    def apply(self, lf: pl.LazyFrame, at: tuple[Any, Any] | None = None) -> pl.LazyFrame:
        right = _right_lazy(self.right)
        if self.how == "cross":
            return lf.join(right, how="cross", maintain_order="left")
        how: Any = self.how
        return lf.join(right, left_on=list(self.left_on), right_on=list(self.right_on),
                       how=how, coalesce=False if self.how == "full" or self.keep_keys
                       else None,
                       maintain_order="left" if self.how != "full" else None,
                       suffix="_right")

    def describe(self) -> str:
        on = "" if self.how == "cross" else \
            f" on {_show(self.left_on)} = {_show(self.right_on)}"
        rows = f" ({self.right.height:,} rows broadcast)" if isinstance(
            self.right, pl.DataFrame) else ""
        return f"{self.how} join{on}{rows}"

    def reads(self) -> set[str] | None:
        return _reads(self.left_on)

    def local(self, keys: frozenset[str]) -> bool:
        return self.how in ("inner", "left", "semi", "anti", "cross")

    def needs(self, downstream: set[str] | None) -> set[str] | None:
        # the right side's names may be the left's too: keep asking for them
        reads = self.reads()
        return None if downstream is None or reads is None else downstream | reads


@dataclass(frozen=True)
class AsofJoin(Op):
    """Each left row with the right row of equal ``by`` keys nearest in ``on`` (see module)."""

    right: Any
    left_on: str
    right_on: str
    by_left: tuple[str, ...] = ()
    by_right: tuple[str, ...] = ()
    strategy: str = "backward"
    tolerance: Any = None
    allow_exact_matches: bool = True
    keep_unmatched: bool = True

    def apply(self, lf: pl.LazyFrame, at: tuple[Any, Any] | None = None) -> pl.LazyFrame:
        right = _right_lazy(self.right).with_columns(pl.lit(True).alias(_MATCH))
        if isinstance(self.right, pl.DataFrame):   # run: sort only what is out of order
            left = lf.collect()
            if not _in_order(left, self.by_left, self.left_on):
                left = left.sort(self.left_on, maintain_order=True)
            if not _in_order(self.right, self.by_right, self.right_on):
                right = right.sort(self.right_on, maintain_order=True)
            lf = left.lazy()
        else:
            lf, right = lf.sort(self.left_on, maintain_order=True), \
                right.sort(self.right_on, maintain_order=True)
        out = lf.join_asof(
            right, left_on=self.left_on,
            right_on=self.right_on, by_left=list(self.by_left) or None,
            by_right=list(self.by_right) or None, strategy=self.strategy,  # type: ignore[arg-type]
            tolerance=self.tolerance, allow_exact_matches=self.allow_exact_matches,
            suffix="_right", coalesce=False, check_sortedness=False)
        if not self.keep_unmatched:
            out = out.filter(pl.col(_MATCH).is_not_null())
        return out.drop(_MATCH)

    def describe(self) -> str:
        by = f" by {', '.join(self.by_left)}" if self.by_left else ""
        tol = f" within {self.tolerance}" if self.tolerance is not None else ""
        kind = "asof left join" if self.keep_unmatched else "asof join"
        return f"{kind} ({self.strategy}) on {self.left_on} ~ {self.right_on}{by}{tol}"

    def reads(self) -> set[str] | None:
        return {self.left_on, *self.by_left}

    def local(self, keys: frozenset[str]) -> bool:
        return True   # the right side is broadcast: every left row finds its match

    def needs(self, downstream: set[str] | None) -> set[str] | None:
        return None if downstream is None else downstream | {self.left_on, *self.by_left}


def _in_order(df: pl.DataFrame, by: tuple[str, ...], on: str) -> bool:
    """Is ``on`` non-decreasing within each run of equal ``by`` keys, every group in one run
    (as a partition sorted by (symbol, time) is)?  Then the asof join needs no sort.
    Vectorised in numpy over the physical values: ``on`` may only step back where a run
    starts, and the runs' keys are all different."""
    n = df.height
    if n < 2:
        return True
    t = df[on].to_physical()
    if t.null_count():
        return False
    values = t.to_numpy()
    if values.dtype.kind == "f" and np.isnan(values).any():
        return False
    back = np.flatnonzero(values[1:] < values[:-1])   # where ``on`` steps back
    if not by:
        return not len(back)
    changed = np.zeros(n - 1, dtype=bool)
    for b in by:
        key = df[b].to_physical()
        if key.null_count():   # a null key starts a run of its own
            changed |= (key.slice(1) != key.slice(0, n - 1)).fill_null(True).to_numpy()
        else:
            k = key.to_numpy()
            changed |= k[1:] != k[:-1]
    if not changed[back].all():
        return False
    # every group in one run: the keys where runs start are all different
    starts = np.concatenate([[0], np.flatnonzero(changed) + 1])
    return not df.select(list(by))[starts].is_duplicated().any()


_WJ_KINDS = ("sum", "count", "mean", "min", "max", "first", "last")


@dataclass(frozen=True)
class WindowJoin(Op):
    """kdb+'s window join: for each left row, aggregates of the right rows of equal ``by``
    keys whose ``right_on`` lies in ``[t + lo, t + hi]`` (``t`` the row's ``left_on``).
    ``prevailing=True`` is ``wj`` (the right row in effect at the window's start counts too),
    False is ``wj1`` (only rows inside the window).  ``aggs``: (output, kind, right column)
    with kind one of sum, count, mean, min, max, first, last; an empty window gives null
    (count 0).  Every left row is kept, in its order."""

    right: Any
    left_on: str
    right_on: str
    by_left: tuple[str, ...]
    by_right: tuple[str, ...]
    lo: int
    hi: int
    aggs: tuple[tuple[str, str, str], ...]
    prevailing: bool = True

    def apply(self, lf: pl.LazyFrame, at: tuple[Any, Any] | None = None) -> pl.LazyFrame:
        if not isinstance(self.right, pl.DataFrame):   # planning: the output's schema
            return self.no_rows(lf)
        return window_join_frames(lf.collect(), self).lazy()

    def no_rows(self, lf: pl.LazyFrame) -> pl.LazyFrame:
        """The aggregate columns of empty windows: count 0, everything else null."""
        schema = _right_lazy(self.right).collect_schema()
        return lf.with_columns(
            (pl.lit(0, pl.Int64) if kind == "count" else
             pl.lit(None, pl.Int64) if kind == "sum" and schema[src].is_integer() else
             pl.lit(None, pl.Float64) if kind in ("mean", "sum") else
             pl.lit(None, schema[src])).alias(out) for out, kind, src in self.aggs)

    def describe(self) -> str:
        kind = "wj" if self.prevailing else "wj1"
        aggs = ", ".join(f"{o}={k}({c})" for o, k, c in self.aggs)
        return f"window join ({kind}) [{self.lo}, {self.hi}] on {self.left_on} by " \
               f"{', '.join(self.by_left)}: {aggs}"

    def reads(self) -> set[str] | None:
        return {self.left_on, *self.by_left}

    def local(self, keys: frozenset[str]) -> bool:
        return True

    def needs(self, downstream: set[str] | None) -> set[str] | None:
        return None if downstream is None else downstream | {self.left_on, *self.by_left}


def _ticks(s: pl.Series) -> np.ndarray:
    return s.to_physical().cast(pl.Int64).to_numpy()


def window_join_frames(left: pl.DataFrame, op: WindowJoin) -> pl.DataFrame:
    """The window join of ``left`` with ``op.right`` (a frame), exactly as described in
    :class:`WindowJoin` (searchsorted per group, prefix sums, a numba min/max kernel)."""
    right = op.right
    if left.height == 0 or right.height == 0:
        return op.no_rows(left.lazy()).collect()
    keys = [f"__k{i}" for i in range(len(op.by_left))]
    groups = right.select([pl.col(r).cast(pl.String).alias(k)
                           for r, k in zip(op.by_right, keys)]).unique(maintain_order=True) \
        .with_row_index("__g")
    r = right.with_columns([pl.col(b).cast(pl.String).alias(k)
                            for b, k in zip(op.by_right, keys)]) \
        .join(groups, on=keys, how="left").sort(["__g", op.right_on], maintain_order=True)
    lg = left.with_columns([pl.col(b).cast(pl.String).alias(k)
                            for b, k in zip(op.by_left, keys)]) \
        .join(groups, on=keys, how="left", maintain_order="left")["__g"]
    rt, lt = _ticks(r[op.right_on]), _ticks(left[op.left_on])
    span = int(max(rt.max(initial=0), lt.max(initial=0)) - min(rt.min(initial=0),
                                                               lt.min(initial=0))) \
        + abs(op.lo) + abs(op.hi) + 2
    base = int(min(rt.min(initial=0), lt.min(initial=0))) - abs(op.lo) - 1
    rkey = r["__g"].cast(pl.Int64).to_numpy() * span + (rt - base)
    has = lg.is_not_null().to_numpy()
    g = lg.fill_null(0).cast(pl.Int64).to_numpy()
    lo_key = g * span + (lt + op.lo - base)
    hi_key = g * span + (lt + op.hi - base)
    start = np.searchsorted(rkey, lo_key, "left")
    end = np.searchsorted(rkey, hi_key, "right")
    if op.prevailing:   # the row in effect at the window's start, when it is earlier
        prev = start - 1
        same_group = (prev >= 0) & (rkey[np.maximum(prev, 0)] // span == g)
        at_start = (start < len(rkey)) & (rkey[np.minimum(start, len(rkey) - 1)] == lo_key)
        start = np.where(same_group & ~at_start, prev, start)
    end = np.where(has, np.maximum(end, start), start)
    n = end - start
    out = []
    for name, kind, src in op.aggs:
        values = r[src]
        if kind == "count":
            counts = np.concatenate([[0], np.cumsum(values.is_not_null().to_numpy())])
            out.append(pl.Series(name, counts[end] - counts[start], pl.Int64))
            continue
        if kind in ("first", "last"):
            idx = np.where(n > 0, start if kind == "first" else end - 1, 0)
            s = values.gather(idx) if len(values) else pl.Series(values.name, [None] * len(n))
            out.append(s.alias(name).set(pl.Series(n == 0), None) if len(values) else s)
            continue
        if kind == "sum" and values.dtype.is_integer():   # exact, in 64-bit integers
            c = np.concatenate([[0], np.cumsum(values.fill_null(0).cast(pl.Int64).to_numpy())])
            out.append(pl.Series(name, c[end] - c[start], pl.Int64).set(pl.Series(n == 0),
                                                                          None))
            continue
        x = values.cast(pl.Float64).fill_null(np.nan).to_numpy()
        if kind in ("sum", "mean"):
            c = np.concatenate([[0.0], np.cumsum(np.nan_to_num(x))])
            s = c[end] - c[start]
            res = s if kind == "sum" else s / np.where(n > 0, n, 1)
        else:
            res = _range_extreme(x, start, end, kind == "max")
        series = pl.Series(name, res, pl.Float64).set(pl.Series(n == 0), None)
        out.append(series.cast(values.dtype) if kind in ("min", "max") else series)
    return left.with_columns(out)


def _range_extreme(x: np.ndarray, start: np.ndarray, end: np.ndarray, is_max: bool
                   ) -> np.ndarray:
    from hfq.engine.kernels import range_extreme
    return range_extreme(x, start.astype(np.int64), end.astype(np.int64), is_max)
