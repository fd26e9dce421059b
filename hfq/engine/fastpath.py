"""The symbol-selective fast path: a query whose leading filters pick a few symbols (and
perhaps a time range) runs as one polars plan over zero-copy slices of the partitions' cached
decoded batches.

A table sorted by (symbol, time) holds each symbol's rows of a record batch as one run, and
each run in time order.  This process keeps each decoded batch as a polars frame next to the
runs of its symbols (:class:`CachedBatch`, in the process cache of decoded batches), so a
symbol's rows are found without looking at the batch and without converting Arrow to polars
per query; a time range is narrowed by binary search within the run.  The query's operations
then run unsplit -- filters, aggregates and all -- in one ``collect`` over the slices of the
partitions kept, in partition order: the answer the node and driver stages give over the
same rows (the split and merge of an aggregate equal one pass; the filters are kept, so the
slices only have to hold every row they keep).  When the filters are only the symbols and
the time bounds, and the slices are exactly their rows (:func:`within`), an aggregate with
no GROUP BY over at most :data:`KERNEL_ROWS` rows is answered by the numba kernel of
:mod:`hfq.engine.fastagg` instead, with no polars plan (it refuses what it does not compute
exactly, and the plan runs).

:func:`run_one` is tried first by :func:`hfq.engine.execute.run`, and by
:meth:`~hfq.engine.query.Query.collect` for a plain read of a few symbols
(:func:`hfq.engine.execute.run_selective`: a time window of one symbol no longer decodes
and filters every batch of the symbol's run); it returns None -- and the general engine or
the plain read runs the query -- for anything else: a partition of several files, live rows,
rowids, a row policy, a partition this process's node does not hold, more than
:data:`FAST_ROWS` rows to read, a damaged copy, a first operation that is not a filter on
the symbol, a leading filter that is not row-wise (``px > px.mean()`` is over the query's
whole input, not the symbols' slices), an operation that is not row-wise, aggregate, sort or
limit.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import polars as pl

from hfq.engine.aggs import light_sums, widen
from hfq.engine.exprs import (
    Tree,
    columns_of,
    empty_lazy,
    from_tree,
    is_rowwise,
    node_kind,
    signature,
    to_tree,
)
from hfq.engine.fastagg import Kernel, Refused, kernel_of
from hfq.engine.ops import (
    Aggregate,
    Filter,
    Op,
    Rename,
    Select,
    Slice,
    Sort,
    TopN,
    Unique,
    WithColumns,
    collect,
    input_rows,
)
from hfq.errors import CorruptPartitionError, QueryError
from hfq.query.plan import Unit
from hfq.query.read import ReadSpec, polars_message
from hfq.storage.cache import PartitionCache, process_cache
from hfq.storage.fragment import read_fragment

if TYPE_CHECKING:
    from hfq.engine.execute import Staged

__all__ = ["FAST_ROWS", "FAST_SYMBOLS", "KERNEL_ROWS", "CachedBatch", "Selection",
           "cached_batch", "conjuncts", "literal", "physical", "run_one", "selection", "sliced",
           "within"]

FAST_ROWS = 1 << 20
"""At most this many rows in the record batches a fast query reads (decoded once, then
served from the process cache; the cache refuses what it cannot hold)."""

FAST_SYMBOLS = 8
"""At most this many symbols: a longer list's many small slices concatenate slower than the
general engine reads them (50 symbols: ~3x slower, measured)."""

KERNEL_ROWS = 1 << 17
"""At most this many rows for the numba kernel of an aggregate (:mod:`hfq.engine.fastagg`):
one thread, where polars' plan over more rows runs on every core (the busiest symbol's
250 k rows: ~2.7 ms in the kernel against ~1.9 ms, measured under load; 37 k rows: 0.8
against 3.1 ms)."""

_PLAIN = (Filter, WithColumns, Select, Aggregate, Rename, Sort, Slice, TopN, Unique)
"""Operations that read nothing but their input rows (no join, no per-partition step)."""


def conjuncts(tree: Tree) -> list[Tree]:
    """The terms of an ``&`` chain (the tree itself when it is not one)."""
    kind, body = node_kind(tree)
    if kind == "BinaryExpr" and body["op"] in ("And", "LogicalAnd"):
        return conjuncts(body["left"]) + conjuncts(body["right"])
    return [tree]


def literal(tree: Tree) -> list[Any] | None:
    """The values of a constant expression (a literal, a cast or function of literals), or
    None when it reads a column or polars cannot evaluate it alone."""
    return None if (got := _constant(tree)) is None else got.to_list()


def _constant(tree: Tree) -> pl.Series | None:
    if columns_of(tree) != set() or node_kind(tree)[0] not in ("Literal", "Cast", "Function"):
        return None
    try:
        return pl.select(from_tree(tree).alias("v")).to_series()
    except pl.exceptions.PolarsError:
        return None


_FLIP = {"Gt": "Lt", "GtEq": "LtEq", "Lt": "Gt", "LtEq": "GtEq", "Eq": "Eq"}


@dataclass(frozen=True)
class Selection:
    """What the leading filters of a query imply about the rows it can keep: the symbols
    (one run each in a batch sorted by symbol) and, per comparison with a constant of the
    second sort column (time), the bound as the column's physical value."""

    symbols: tuple[str, ...]
    bounds: tuple[tuple[str, int], ...] = ()
    """``(op, value)``: ``op`` one of ``Gt GtEq Lt LtEq Eq`` -- the rows kept satisfy
    ``time op value`` compared as physical integers."""
    filters: int = 0
    """How many operations the filters are; ``complete``: every term of theirs is a symbol
    or a bound (the rows they keep are exactly the symbols' within the bounds)."""
    complete: bool = False


def selection(ops: Sequence[Op], symbol: str, time: str | None,
              schema: pl.Schema) -> Selection | None:
    """The :class:`Selection` of the filters ``ops`` starts with (ANDed), or None when they
    name no symbol (``symbol == 'X'`` or ``symbol.is_in([...])``) or one of them is not
    row-wise."""
    symbols: set[str] | None = None
    bounds: list[tuple[str, int]] = []
    filters, complete = 0, True
    for op in ops:
        if not isinstance(op, Filter):
            break
        if not op.local(frozenset()):   # a mean or a window over the query's whole input:
            return None                 # not over the few symbols' slices
        filters += 1
        for term in conjuncts(to_tree(op.predicate)):
            got = _symbols(term, symbol)
            if got is not None:
                symbols = set(got) if symbols is None else symbols & set(got)
                continue
            bound = _bound(term, time, schema) if time is not None else None
            if bound is not None:
                bounds.append(bound)
            else:
                complete = False
    if symbols is None:
        return None
    return Selection(tuple(sorted(symbols)), tuple(bounds), filters, complete)


def _symbols(term: Tree, symbol: str) -> tuple[str, ...] | None:
    kind, body = node_kind(term)
    if kind == "BinaryExpr" and body["op"] == "Eq":
        left, right = body["left"], body["right"]
        if node_kind(right)[0] == "Column":
            left, right = right, left
        if node_kind(left) != ("Column", symbol):
            return None
        values = literal(right)
        if values and len(values) == 1 and isinstance(values[0], str):
            return (values[0],)
        return None
    if kind == "Function" and signature(body["function"]) == "Boolean/IsIn":
        args = body["input"]
        if node_kind(args[0]) != ("Column", symbol):
            return None
        values = literal(args[1])
        if values and len(values) == 1 and isinstance(values[0], list):
            values = values[0]
        if values and all(isinstance(v, str) for v in values):
            return tuple(values)
    return None


def _bound(term: Tree, time: str, schema: pl.Schema) -> tuple[str, int] | None:
    kind, body = node_kind(term)
    if kind != "BinaryExpr" or body["op"] not in _FLIP:
        return None
    left, right, op = body["left"], body["right"], body["op"]
    if node_kind(right)[0] == "Column":
        left, right, op = right, left, _FLIP[op]
    if node_kind(left) != ("Column", time) or time not in schema:
        return None
    value = _constant(right)
    # the same type only: a comparison across types casts, and its rule is polars' own
    if value is None or len(value) != 1 or value.dtype != schema[time] or \
            not (value.dtype.is_integer() or value.dtype.is_temporal()) or value.null_count():
        return None
    return op, int(value.to_physical()[0])


# -- the cached batches -------------------------------------------------------------------------
@dataclass(frozen=True)
class CachedBatch:
    """One decoded record batch as a polars frame, with ``runs``: ``{symbol: (start, stop)}``
    of a batch sorted by symbol (None when it is not one run per symbol, or has nulls)."""

    frame: pl.DataFrame
    runs: dict[str, tuple[int, int]] | None
    ordered: dict[tuple[str, int, int], bool] = field(default_factory=dict, compare=False)
    """``{(time column, start, stop): whether those rows' times ascend with no NULL}``, each
    found the first time a query narrows that run (a scan of the run: 0.9 ms for the busiest
    symbol's 1 M quotes, once instead of per query)."""

    def estimated_size(self) -> int:   # what the cache counts
        return int(self.frame.estimated_size()) + 128 + 96 * len(self.runs or ())

    def sorted_times(self, time: str, start: int, stop: int) -> np.ndarray | None:
        """The physical times of rows ``[start, stop)`` when they ascend with no NULL (a
        zero-copy view), else None."""
        times = self.frame.get_column(time).slice(start, stop - start)
        known = self.ordered.get((time, start, stop))
        if known is False or times.null_count():
            return None
        t = physical(times).to_numpy()
        if known is None:   # (two threads may both look: they find the same)
            known = self.ordered[(time, start, stop)] = bool((t[1:] >= t[:-1]).all())
        return t if known else None


def _runs(column: pl.Series) -> dict[str, tuple[int, int]] | None:
    if column.null_count() or not len(column):
        return None if column.null_count() else {}
    codes = column.to_physical().to_numpy()
    starts = np.concatenate([[0], np.flatnonzero(codes[1:] != codes[:-1]) + 1])
    names = column.gather(starts).cast(pl.String).to_list()
    if len(set(names)) != len(names):   # a symbol in two runs: not sorted by it
        return None
    stops = np.append(starts[1:], len(codes))
    return dict(zip(names, zip(starts.tolist(), stops.tolist())))


def cached_batch(cache: PartitionCache, store: Any, record: Any, logical: Any,
                 columns: Sequence[str], batch: int, symbol: str,
                 node: str | None) -> CachedBatch:
    """Record batch ``batch`` of file ``record`` (``columns``) as a :class:`CachedBatch`,
    from ``cache`` or read (verified against its checksums), converted and kept there;
    ``logical``: the Arrow schema, or a function giving it (called on a miss only)."""
    key = ("polars batch", store.url, record.file, record.crc32, batch, tuple(columns), symbol)
    got = cache.get(key)
    if got is None:
        logical = logical() if callable(logical) else logical
        table = read_fragment(store, record, logical, columns=list(columns), batches=[batch],
                              node=node)
        frame = cast(pl.DataFrame, pl.from_arrow(table, rechunk=True))
        got = CachedBatch(frame, _runs(frame.get_column(symbol)))
        cache.put(key, got)
    return cast(CachedBatch, got)


def sliced(batch: CachedBatch, chosen: Selection, time: str | None) -> pl.DataFrame | None:
    """The rows of ``batch`` that can pass ``chosen``: its symbols' runs in stored order,
    each narrowed to the time bounds by binary search when the run's times are sorted and
    have no nulls (else the whole run); None when ``batch`` has no usable runs."""
    parts = _slices(batch, chosen, time)
    if parts is None:
        return None
    return batch.frame.clear() if not parts else _concat(parts)


def _slices(batch: CachedBatch, chosen: Selection, time: str | None
            ) -> list[pl.DataFrame] | None:
    """:func:`sliced`'s rows as zero-copy slices of the batch, one per symbol kept."""
    if batch.runs is None:
        return None
    spans = sorted(batch.runs[s] for s in chosen.symbols if s in batch.runs)
    frame = batch.frame
    parts = []
    for start, stop in spans:
        if chosen.bounds and time is not None:
            start, stop = _narrowed(batch.sorted_times(time, start, stop), chosen.bounds,
                                    start, stop)
        if stop > start:
            parts.append(frame.slice(start, stop - start))
    return parts


def _concat(parts: Sequence[pl.DataFrame]) -> pl.DataFrame:
    return parts[0] if len(parts) == 1 else pl.concat(parts, how="vertical", rechunk=False)


def physical(s: pl.Series) -> pl.Series:
    """The integers behind a temporal column (``Series.to_physical`` runs a polars plan:
    ~0.1 ms; a cast to Int64 gives the same numbers without one)."""
    return s.cast(pl.Int64) if s.dtype.is_temporal() else s


def within(frame: pl.DataFrame, chosen: Selection, time: str | None) -> bool:
    """Whether every row of ``frame`` satisfies every bound of ``chosen`` (so the slices are
    exactly the rows complete filters keep): checked on the times' min and max."""
    if not chosen.bounds or not frame.height:
        return True
    if time is None or time not in frame.columns or frame.get_column(time).null_count():
        return False
    t = physical(frame.get_column(time))
    lo, hi = int(cast(int, t.min())), int(cast(int, t.max()))
    return all(_HOLDS[op](lo, hi, v) for op, v in chosen.bounds)


_HOLDS: dict[str, Callable[[int, int, int], bool]] = {
    "Gt": lambda lo, hi, v: lo > v, "GtEq": lambda lo, hi, v: lo >= v,
    "Lt": lambda lo, hi, v: hi < v, "LtEq": lambda lo, hi, v: hi <= v,
    "Eq": lambda lo, hi, v: lo == hi == v}
"""Whether every time in ``[lo, hi]`` satisfies ``time op v``."""


def _narrowed(t: np.ndarray | None, bounds: Sequence[tuple[str, int]], start: int,
              stop: int) -> tuple[int, int]:
    """``(start, stop)`` cut to the rows whose time can satisfy every bound (``t``: their
    ascending times, or None when they are not known to ascend: no cut)."""
    if t is None:
        return start, stop
    lo, hi = 0, len(t)
    for op, v in bounds:
        if op in ("Gt", "GtEq", "Eq"):
            lo = max(lo, int(np.searchsorted(t, v, "right" if op == "Gt" else "left")))
        if op in ("Lt", "LtEq", "Eq"):
            hi = min(hi, int(np.searchsorted(t, v, "left" if op == "Lt" else "right")))
    return start + lo, start + max(lo, hi)


# -- recognising a plan once -------------------------------------------------------------------
_SEEN: OrderedDict[tuple[Any, ...], tuple[Sequence[Op], pl.Schema, Any]] = OrderedDict()
_SEEN_LOCK = threading.Lock()
_SEEN_SIZE = 256
"""What :func:`_recognised` found for the last plans (a compiled SQL statement's operations
are the same objects each time it runs: its selection and steps are worked out once)."""

Step = Callable[[pl.LazyFrame], pl.LazyFrame]


def _recognised(ops: Sequence[Op], symbol: str, time: str | None, schema: pl.Schema
                ) -> tuple[Selection, list[Step], Kernel | None] | None:
    """:func:`selection` of ``ops``, their steps (:func:`_steps`) and the
    :class:`~hfq.engine.fastagg.Kernel` of what follows complete filters, or None; kept in
    :data:`_SEEN` by the identity of the operations (which the entry holds, so the
    identities are not reused while it is there)."""
    key = (*(id(op) for op in ops), symbol, time)
    with _SEEN_LOCK:
        hit = _SEEN.get(key)
    if hit is not None and all(a is b for a, b in zip(hit[0], ops)) and \
            (hit[1] is schema or hit[1] == schema):   # (the same object: no dtype compared)
        return cast("tuple[Selection, list[Step], Kernel | None] | None", hit[2])
    chosen = selection(ops, symbol, time, schema)
    got = None if chosen is None else \
        (chosen, _steps(ops, schema),
         kernel_of(ops[chosen.filters:], schema) if chosen.complete else None)
    with _SEEN_LOCK:
        _SEEN[key] = (tuple(ops), schema, got)
        while len(_SEEN) > _SEEN_SIZE:
            _SEEN.popitem(last=False)
    return got


def _steps(ops: Sequence[Op], schema: pl.Schema) -> list[Step]:
    """``ops`` as functions of a LazyFrame of ``schema``: an aggregate's expressions widened
    once here (as :meth:`~hfq.engine.ops.Aggregate.apply` does on every call), and its
    128-bit sums in their BIGINT forms where no group of its at most :data:`FAST_ROWS` rows
    can wrap them (as ``Aggregate.apply`` lightens them over each frame: the busiest
    symbol's sums of sizes by 10 minutes, 150 k trades, ~9 -> ~6.5 ms)."""
    steps: list[Step] = []
    lf = empty_lazy(schema)
    bounded = True   # (no step so far makes more rows than it reads)
    for op in ops:
        if isinstance(op, Aggregate):
            here = lf.collect_schema()
            aggs = [widen(a, here) for a in op.aggs]
            steps.append(_aggregate(op, light_sums(aggs, here, FAST_ROWS) if bounded else aggs))
        else:
            steps.append(op.apply)
        bounded = bounded and _bounded(op)
        lf = steps[-1](lf)
    return steps


def _bounded(op: Op) -> bool:
    """Does ``op`` give at most the rows it reads (a projection: only row-wise values; an
    aggregate: one row per group -- without keys its expressions may make any number of
    rows, ``repeat_by(n).explode()``)?"""
    if isinstance(op, (Select, WithColumns)):
        return all(is_rowwise(to_tree(e)) for e in op.exprs)
    if isinstance(op, Aggregate):
        return bool(op.keys)
    return isinstance(op, (Filter, Rename, Sort, Slice, TopN, Unique))


def _aggregate(op: Aggregate, aggs: list[pl.Expr]) -> Step:
    """:meth:`~hfq.engine.ops.Aggregate.apply` with its expressions widened already."""
    if not op.keys:
        return lambda lf: lf.select(aggs)
    return lambda lf: lf.group_by(op.keys, maintain_order=op.ordered).agg(aggs)


# -- running ------------------------------------------------------------------------------------
def run_one(staged: Staged) -> pl.DataFrame | None:
    """The answer of ``staged``'s query through the fast path (see the module), or None."""
    ops = staged.whole
    src = staged.source
    spec = staged.spec
    units = staged.units
    symbol = src.symbol_column
    if not units or staged.offsets is not None or not ops or not symbol or \
            not all(type(op) in _PLAIN for op in ops) or spec.where is not None or \
            src.policy.rows is not None or \
            getattr(src, "live", None) is not None or not spec.sort_by or \
            spec.sort_by[0] != symbol or symbol not in spec.columns or \
            sum(getattr(u, "rows", FAST_ROWS) for u in units) > FAST_ROWS:
        return None
    for unit in units:
        if not isinstance(unit, Unit) or len(unit.fragments) != 1:
            return None
        record = unit.fragments[0]
        if not record.batches or spec.old_layout(record) or hasattr(record, "read_rows"):
            return None
    time = spec.sort_by[1] if len(spec.sort_by) > 1 else None
    plan = _recognised(ops, symbol, time, src.schema)
    if plan is None:
        return None
    chosen, steps, kernel = plan
    if len(chosen.symbols) > FAST_SYMBOLS:
        return None
    nodes = src.nodes()
    if nodes.local is None or nodes.store is None or \
            any(nodes.local not in nodes.unit_holders(u) for u in units):
        return None
    cache = process_cache(nodes.store, int(src.session.settings.cache_bytes))
    if cache is None:
        return None
    parts: list[pl.DataFrame] = []
    empty = None
    for unit in units:   # in partition order, as the general engine concatenates them
        got = _rows(cache, nodes, spec, unit.fragments[0], unit, symbol, chosen, time)
        if got is None:
            return None
        parts += got[0]
        empty = got[1]
    assert empty is not None
    if kernel is not None and sum(p.height for p in parts) <= KERNEL_ROWS and \
            all(within(p, chosen, time) for p in parts):
        try:   # over the slices as they are (a concatenation re-encodes the symbols)
            return kernel.run(parts or [empty])
        except Refused:   # outside what it computes exactly: polars runs the plan
            pass
    frame = _concat(parts) if parts else empty
    lf = frame.lazy()
    try:
        with input_rows(frame.height):
            for step in steps:
                lf = step(lf)
            return collect(lf, frame.height, ops)
    except pl.exceptions.PolarsError as exc:
        where = ", ".join(u.partition for u in units[:3]) + (" ..." if len(units) > 3 else "")
        raise QueryError(f"query on table {src.name!r}, partition{'s' if len(units) > 1 else ''}"
                         f" {where}: {polars_message(exc)}") from exc


def _rows(cache: PartitionCache, nodes: Any, spec: ReadSpec, record: Any, unit: Any,
          symbol: str, chosen: Selection, time: str | None
          ) -> tuple[list[pl.DataFrame], pl.DataFrame] | None:
    """The slices of ``unit``'s batches (:func:`sliced`), in order, and a frame of no rows
    of their columns; None when a batch has no usable runs or is damaged."""
    wanted = range(len(record.batches)) if unit.batches[0] is None else unit.batches[0]
    parts: list[pl.DataFrame] = []
    empty = None
    try:
        for b in wanted:
            batch = cached_batch(cache, nodes.store, record, lambda: spec.schema.arrow,
                                 spec.columns, b, symbol, nodes.local)
            got = _slices(batch, chosen, time if time in spec.columns else None)
            if got is None or batch.frame.columns != list(spec.columns):
                return None
            parts += got
            empty = batch.frame
    except CorruptPartitionError:   # the runtime reads another copy and has this one repaired
        return None
    return None if empty is None else (parts, empty.clear())
