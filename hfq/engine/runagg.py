"""Aggregates by keys whose rows lie in runs, in numba: one pass per group, no hash table.

A table sorted by (symbol, time) holds each symbol's rows of a partition as one run:
``GROUP BY symbol`` (or symbol and date, or a time bucket of one symbol's rows) finds every
group as consecutive rows.  polars' grouping hashes each
row all the same: a batch of 3.8 M quotes in 6,500 symbols took it ~50 ms for an average of
spreads, against ~24 ms here (6 ms of it finding the runs, 6 ms the spreads, 8 ms their sums
in row order).  Here the aggregate is split as :func:`hfq.engine.aggs.decompose` splits it for
the nodes and the driver: each group's partial states (counts, sums, minima and maxima) are
computed over its run by the kernels below, one row of states per group, and polars merges
those rows with the plan's own merge, final and output expressions -- the split aggregate's
answer, which the engine already gives whenever an aggregate runs over several partitions.

The rows are looked at before anything is computed, and the polars plan runs instead (None)
when the keys do not lie in runs: more than one run per :data:`RUN_SHARE` rows (in the first
:data:`SAMPLE` rows, then in all), or a key in two runs.  So are states computed differently
from polars': an integer sum past BIGINT at any point (polars' own overflow rules and the
compiler's error), a sum of doubles of 0 (the sign of a zero sum is polars'), a min or max of
0 among both zeros (which one polars keeps is its order).  Doubles are added in row order,
DuckDB's order on one thread, where polars adds in blocks: the two can differ in the last bits
(as :mod:`hfq.engine.fastagg`'s sums and the split aggregate's partial sums can).  Other
aggregates (arg_min, quantiles, variances, FILTER on a sum), inputs with fewer values than
rows (``drop_nulls``), more than :data:`MAX_INPUTS` inputs, and (in
:meth:`hfq.engine.ops.Aggregate.apply`) computed keys and inputs under :data:`RUN_ROWS` rows
leave the grouping to polars.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from hfq.engine.aggs import AggPlan, decompose, widen
from hfq.engine.exprs import (
    ByIdentity,
    Tree,
    empty_lazy,
    from_tree,
    is_rowwise,
    node_kind,
    to_tree,
)
from hfq.storage.jit import njit

__all__ = ["RUN_ROWS", "RunPlan", "by_runs", "run_plan"]

RUN_ROWS = 200_000
"""From this many input rows.  A look at the keys, the inputs and the states frame cost a few
polars calls of 0.2-1 ms each here: at 10,000 rows, the TAQ questions over 1,000 symbols' trades
(batches of 10-100 k rows) ran 15.5 -> 20.7 ms and 8.7 -> 14.6 ms."""

RUN_SHARE = 4
"""At most one run per this many rows: shorter runs are polars' (its hash table is as fast)."""

MAX_INPUTS = 4
"""At most this many inputs (values and FILTER clauses): each is read as an array of its own
(~2 ms per million rows), where polars evaluates them all in its one pass (a pivot of 16
exchanges' counts over 1 M quotes: 36 ms here against 24)."""

SAMPLE = 8_192
"""Rows looked at first, so that keys not in runs cost little."""

_INT_INPUTS = (pl.Int8, pl.Int16, pl.Int32, pl.Int64, pl.UInt8, pl.UInt16, pl.UInt32,
               pl.Date, pl.Datetime, pl.Time, pl.Duration)
_MINMAX = {("Min", False): "min", ("Max", False): "max", ("Min", True): "nan_min",
           ("Max", True): "nan_max"}


# -- numba kernels -------------------------------------------------------------------------------
# Each takes one chunk of the rows (rows ``off`` to ``off + len(x)``; masks are over all the
# rows), the runs' ``bounds`` (run j is rows ``bounds[j]`` to ``bounds[j + 1]``) and ``j``, the
# run holding row ``off``; it carries each run's states on from the chunks before, in row
# order, and returns the run holding the next chunk's first row.
@njit(cache=True)
def _int_acc(x: np.ndarray, valid: np.ndarray, checked: bool, off: int, bounds: np.ndarray,
             j: int, n: np.ndarray, s: np.ndarray, lo: np.ndarray, hi: np.ndarray,
             over: np.ndarray) -> int:  # pragma: no cover - compiled
    """Per run: non-NULL count ``n``, sum ``s``, min ``lo`` and max ``hi`` of the non-NULL
    ``x`` (``valid`` read when ``checked``); ``over[0]`` set when a sum left BIGINT on the
    way."""
    end = off + len(x)
    g = len(bounds) - 1
    while j < g and bounds[j] < end:
        c, t, a, b = n[j], s[j], lo[j], hi[j]
        for i in range(max(bounds[j], off) - off, min(bounds[j + 1], end) - off):
            if checked and not valid[off + i]:
                continue
            v = np.int64(x[i])
            if c == 0 or v < a:
                a = v
            if c == 0 or v > b:
                b = v
            u = t + v
            if ((t ^ u) & (v ^ u)) < 0:   # both signs alike, and the sum's not theirs
                over[0] = True
            t = u
            c += 1
        n[j], s[j], lo[j], hi[j] = c, t, a, b
        if bounds[j + 1] > end:
            break
        j += 1
    return j


@njit(cache=True)
def _float_acc(x: np.ndarray, valid: np.ndarray, checked: bool, off: int, bounds: np.ndarray,
               j: int, n: np.ndarray, total: np.ndarray, lo: np.ndarray, hi: np.ndarray,
               nans: np.ndarray, pos0: np.ndarray, neg0: np.ndarray
               ) -> int:  # pragma: no cover - compiled
    """Per run: non-NULL count, sum in row order, min and max of the non-NaN, NaN count,
    a +0.0 seen, a -0.0 seen, of the non-NULL ``x``."""
    end = off + len(x)
    g = len(bounds) - 1
    while j < g and bounds[j] < end:
        c, t, a, b, q = n[j], total[j], lo[j], hi[j], nans[j]
        zeros = False
        for i in range(max(bounds[j], off) - off, min(bounds[j + 1], end) - off):
            if checked and not valid[off + i]:
                continue
            v = x[i]
            c += 1
            t += v
            if v != v:
                q += 1
                continue
            if v < a:
                a = v
            if v > b:
                b = v
            if v == 0.0:
                zeros = True
        if zeros:   # (rare: a second look at the run's zeros)
            for i in range(max(bounds[j], off) - off, min(bounds[j + 1], end) - off):
                if (not checked or valid[off + i]) and x[i] == 0.0:
                    if np.signbit(x[i]):
                        neg0[j] = True
                    else:
                        pos0[j] = True
        n[j], total[j], lo[j], hi[j], nans[j] = c, t, a, b, q
        if bounds[j + 1] > end:
            break
        j += 1
    return j


# -- the plan ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _State:
    """One partial state: ``how`` (len, count, sum, min, max, nan_min, nan_max) over input
    ``value``, the rows kept by input ``kept`` (a row-wise filter) when not None; ``dtype``
    the state's."""

    name: str
    how: str
    value: int | None
    kept: int | None
    dtype: pl.DataType


@dataclass(frozen=True)
class RunPlan:
    """An aggregate as partial states over runs (:func:`run_plan`) and polars' merge."""

    keys: tuple[pl.Expr, ...]
    key_names: tuple[str, ...]
    inputs: tuple[pl.Expr, ...]
    floats: tuple[bool, ...]
    states: tuple[_State, ...]
    agg: AggPlan


_PLANS = ByIdentity(4096)


def run_plan(op: Any, aggs: Sequence[pl.Expr], schema: pl.Schema) -> RunPlan | None:
    """The :class:`RunPlan` of aggregate ``op`` (keys ``op.keys``, its expressions as chosen:
    ``aggs``) over frames of ``schema``, or None when a state is not one the kernels compute,
    a key is a double (NaN and -0.0 group as polars says) or not a plain value, or the merged
    answer's columns are not the plan's.  Kept once per op and schema."""
    sig = tuple(schema.items())
    kept = _PLANS.get(op, sig)
    if kept is not None and kept[0] is aggs:   # (held: its identity is not reused)
        return kept[1]
    try:
        got = _plan(tuple(op.keys), aggs, schema)
    except Exception:   # noqa: BLE001 -- any plan it cannot read is polars' to run
        got = None
    if kept is None:
        _PLANS.put(op, (aggs, got), sig)
    return got


def _plan(keys: tuple[pl.Expr, ...], aggs: Sequence[pl.Expr], schema: pl.Schema
          ) -> RunPlan | None:
    empty = empty_lazy(schema)
    key_types = empty.select(keys).collect_schema()
    if not keys or not all((t.is_integer() and t not in (pl.Int128, pl.UInt128)) or
                           t.is_temporal() or t in (pl.Boolean, pl.String) or
                           isinstance(t, (pl.Categorical, pl.Enum)) for t in key_types.values()):
        return None
    names = tuple(key_types.names())
    agg = decompose(aggs, list(names), schema)
    if agg is None:
        return None
    state_types = empty.group_by(keys).agg(agg.partial).collect_schema()
    inputs: dict[str, int] = {}
    exprs: list[pl.Expr] = []

    def type_of(tree: Tree) -> pl.DataType:
        return empty.select(from_tree(tree).alias("x")).collect_schema()["x"]

    def input_of(tree: Tree) -> int:
        if not is_rowwise(tree):   # (a drop_nulls, a filter inside a cast: rows dropped)
            raise ValueError("an input that is not one value per row")
        kind, body = node_kind(tree)
        if kind == "Cast" and body["dtype"] in ({"Literal": "Float64"}, {"Literal": "Int64"}):
            inner = type_of(body["expr"])
            if inner == pl.Float64 if body["dtype"] == {"Literal": "Float64"} else \
                    isinstance(inner, _INT_INPUTS[:7]):   # lossless: the same values
                return input_of(body["expr"])
        text = str(tree)
        if text not in inputs:
            inputs[text] = len(exprs)
            exprs.append(from_tree(tree).alias(f"__r{len(exprs)}"))
        return inputs[text]

    states = []
    for e in agg.partial:
        kind, body = node_kind(to_tree(e))
        if kind != "Alias":
            return None
        name = body[1]
        state = _state(body[0], name, state_types[name], input_of, type_of)
        if state is None:
            return None
        states.append(state)
    types = empty.select(exprs).collect_schema() if exprs else pl.Schema()
    if len(exprs) > MAX_INPUTS:
        return None
    floats = []
    for i, t in enumerate(types.values()):
        if any(s.kept == i for s in states) and t != pl.Boolean:
            return None
        if t.is_temporal() and t != pl.Duration and \
                any(s.value == i and s.how == "sum" for s in states):
            return None   # (polars has no sum of dates and times)
        if t != pl.Float64 and not isinstance(t, _INT_INPUTS) and \
                any(s.value == i and s.how != "count" for s in states):
            return None   # (any other type: only its NULLs are read, by a count)
        floats.append(t == pl.Float64)
    plan = RunPlan(keys, names, tuple(exprs), tuple(floats), tuple(states), agg)
    # the merged answer's columns must be those of polars' own aggregate
    merged = _merged(empty.group_by(keys).agg(agg.partial), plan, True)
    own = empty.group_by(keys).agg([widen(a, schema) for a in aggs])
    if dict(merged.collect_schema()) != dict(own.collect_schema()):
        return None
    return plan


def _state(tree: Tree, name: str, dtype: pl.DataType, input_of: Any, type_of: Any
           ) -> _State | None:
    kind, body = node_kind(tree)
    if kind == "Cast" and body["dtype"] == {"Literal": "Int64"}:   # a count's cast
        inner_kind, inner = node_kind(body["expr"])
        if inner_kind == "Len" or (inner_kind == "Agg" and node_kind(inner)[0] == "Count"):
            tree, kind, body = body["expr"], inner_kind, inner
    if tree == "Len":
        return _State(name, "len", None, None, dtype)
    if kind != "Agg":
        return None
    agg, arg = node_kind(body)
    if agg == "Count":
        value, kept = _filtered(arg["input"], input_of)
        how = "len" if arg["include_nulls"] and kept is None else "count"
        if arg["include_nulls"] and kept is not None:
            return None
        return _State(name, how, value, kept, dtype)
    if agg == "Sum":
        value, kept = _filtered(_uncast_decimal(arg, type_of), input_of)
        return _State(name, "sum", value, kept, dtype)
    if agg in ("Min", "Max"):
        value, kept = _filtered(arg["input"], input_of)
        return _State(name, _MINMAX[(agg, bool(arg["propagate_nans"]))], value, kept,
                      dtype)
    return None


def _uncast_decimal(tree: Tree, type_of: Any) -> Tree:
    """A 128-bit sum's input of integers without its cast to DECIMAL(38, 0): the kernels
    add BIGINT values exactly and give up past BIGINT.  (Any other input stays cast: a
    DECIMAL input is refused.)"""
    kind, body = node_kind(tree)
    if kind == "Cast" and body["dtype"] == {"Literal": {"Decimal": [38, 0]}} and \
            type_of(body["expr"]).is_integer():
        return body["expr"]
    return tree


def _filtered(tree: Tree, input_of: Any) -> tuple[int, int | None]:
    """(input of the values, input of the row-wise filter or None) of ``x``,
    ``x.filter(by)`` or ``x.filter(by).cast(t)`` (an average's sum)."""
    kind, body = node_kind(tree)
    if kind == "Filter":
        return input_of(body["input"]), input_of(body["by"])
    if kind == "Cast" and node_kind(body["expr"])[0] == "Filter":
        inner = node_kind(body["expr"])[1]
        return input_of({"Cast": {**body, "expr": inner["input"]}}), input_of(inner["by"])
    return input_of(tree), None


# -- running -------------------------------------------------------------------------------------
_NO_MASK = np.zeros(0, np.bool_)


def _starts(keys: pl.DataFrame) -> np.ndarray:
    """The first row of each run of equal keys (NULL equal to NULL)."""
    n = keys.height
    if all(not k.null_count() and (k.dtype.is_integer() or k.dtype.is_temporal() or
                                   isinstance(k.dtype, (pl.Categorical, pl.Enum)))
           for k in keys.iter_columns()):   # their integers, compared with the row before
        changed = np.zeros(max(n - 1, 0), np.bool_)
        for k in keys.iter_columns():
            codes = k.to_physical().to_numpy()
            changed |= codes[1:] != codes[:-1]
        return np.concatenate([np.zeros(min(n, 1), np.int64), np.flatnonzero(changed) + 1])
    new = pl.any_horizontal([pl.col(c).ne_missing(pl.col(c).shift(1)) for c in keys.columns])
    mask = keys.select((new | (pl.int_range(pl.len()) == 0)).alias("m")).to_series()
    return mask.arg_true().to_numpy().astype(np.int64)


def _chunks(s: pl.Series, is_float: bool) -> list[np.ndarray]:
    """``s``'s values as arrays, one per chunk (zero-copy where it has no NULL; integers and
    times as BIGINT; a NULL as 0, read by no kernel: see :func:`_rows`)."""
    if not is_float:
        s = s.to_physical().cast(pl.Int64)
    if s.null_count():
        s = s.fill_null(0)
    return [c.to_numpy() for c in s.get_chunks()]


def _rows(inputs: pl.DataFrame, value: int | None, kept: int | None) -> np.ndarray | None:
    """Where input ``value`` is not NULL and input ``kept`` (a filter) is TRUE, over all the
    rows (None: every row)."""
    mask = None
    if value is not None and inputs.to_series(value).null_count():
        mask = inputs.to_series(value).is_not_null().to_numpy()
    if kept is not None:
        flag = inputs.to_series(kept)
        if not (flag.null_count() == 0 and flag.all()):   # (a filter keeping all: no mask)
            keep = flag.fill_null(False).to_numpy()
            mask = keep if mask is None else (mask & keep)
    return mask


def by_runs(plan: RunPlan, frame: pl.DataFrame, ordered: bool) -> pl.DataFrame | None:
    """The aggregate's answer over ``frame`` from its runs of keys, or None (polars' plan
    runs) when the keys do not lie in runs or a state is not computed here exactly."""
    n = frame.height
    keys = frame.select(plan.keys)
    if keys.height != n:
        return None
    head = min(n, SAMPLE)
    if len(_starts(keys.head(head))) * RUN_SHARE > head:
        return None
    starts = _starts(keys)
    if len(starts) * RUN_SHARE > n:
        return None
    first = keys[starts]
    if first.is_duplicated().any():
        return None
    bounds = np.append(starts, n)
    inputs = frame.select(plan.inputs) if plan.inputs else pl.DataFrame()
    if plan.inputs and inputs.height != n:
        return None
    stats: dict[tuple[int, int | None], tuple[Any, ...]] = {}
    out = []
    for st in plan.states:
        got = _state_values(st, inputs, bounds, stats, plan.floats)
        if got is None:
            return None
        values, valid = got
        s = pl.Series(st.name, values)
        if valid is not None and not valid.all():
            s = s.scatter(np.flatnonzero(~valid), None)
        out.append(s.cast(st.dtype))
    states = first.with_columns(out)
    return _merged(states.lazy(), plan, ordered).collect()


def _merged(states: pl.LazyFrame, plan: RunPlan, ordered: bool) -> pl.LazyFrame:
    """The answer from one row of states per group: the merge reads each state as it is
    where every merge is a sum, min or max of one state (a group's one row: its value --
    never NULL for a sum or a count here), else polars merges them (one row per group)."""
    agg = plan.agg
    keys = list(plan.key_names)
    taken = [c for c in map(_one, agg.merge) if c is not None]
    if len(taken) == len(agg.merge):
        merged = states.select([*keys, *(pl.col(c).alias(e.meta.output_name())
                                        for c, e in zip(taken, agg.merge))])
    else:
        merged = states.group_by(keys, maintain_order=ordered).agg(agg.merge)
    return merged.with_columns(agg.final).select([*keys, *agg.outputs])


def _one(merge: pl.Expr) -> str | None:
    """The state a merge reads when it is a sum, min or max of it (its value over one row)."""
    kind, body = node_kind(to_tree(merge))
    while kind == "Alias":
        kind, body = node_kind(body[0])
    if kind != "Agg":
        return None
    agg, arg = node_kind(body)
    column = arg if agg == "Sum" else arg.get("input") if agg in ("Min", "Max") else None
    return node_kind(column)[1] if column is not None and node_kind(column)[0] == "Column" \
        else None


def _state_values(st: _State, inputs: pl.DataFrame, bounds: np.ndarray,
                  stats: dict[tuple[int, int | None], tuple[Any, ...]], floats: Sequence[bool]
                  ) -> tuple[np.ndarray, np.ndarray | None] | None:
    """A state's values per run and where they are not NULL (None: nowhere), or None (not
    computed here)."""
    g = len(bounds) - 1
    if st.how == "len" and st.kept is None:
        return np.diff(bounds), None
    assert st.value is not None
    if st.how == "count":
        mask = _rows(inputs, st.value, st.kept)
        return (np.diff(bounds) if mask is None else
                np.add.reduceat(mask.astype(np.int64), bounds[:-1])), None
    is_float = floats[st.value]
    if (st.value, st.kept) not in stats:
        chunks = _chunks(inputs.to_series(st.value), is_float)
        mask = _rows(inputs, st.value, st.kept)
        if is_float:
            acc: tuple[Any, ...] = (np.zeros(g, np.int64), np.zeros(g), np.full(g, np.inf),
                                    np.full(g, -np.inf), np.zeros(g, np.int64),
                                    np.zeros(g, np.bool_), np.zeros(g, np.bool_))
        else:
            acc = tuple(np.zeros(g, np.int64) for _ in range(4)) + (np.zeros(1, np.bool_),)
        kernel = _float_acc if is_float else _int_acc
        j = off = 0
        for x in chunks:
            j = kernel(x, _NO_MASK if mask is None else mask, mask is not None, off, bounds, j,
                       *acc)
            off += len(x)
        stats[(st.value, st.kept)] = acc
    got = stats[(st.value, st.kept)]
    n = got[0]
    if not is_float:
        if st.how == "sum":
            return None if got[4][0] else (got[1], None)
        return (got[2] if st.how.endswith("min") else got[3]), n > 0
    total, lo, hi, nans, pos0, neg0 = got[1:]
    if st.how == "sum":
        return None if ((n > 0) & (total == 0.0)).any() else (total, None)
    extreme = lo if st.how.endswith("min") else hi
    nan = (nans > 0) if st.how.startswith("nan_") else (nans == n)
    if (~nan & (n > nans) & (extreme == 0.0) & pos0 & neg0).any():
        return None   # (which zero polars keeps is its order)
    return np.where(nan, np.nan, extreme), n > 0
