"""Splitting a plan between the nodes and the driver, and running it.

The *node stage* is the longest prefix of operations that can run on each partition alone:
filters, projections, computed columns, windows whose keys include the partition columns,
broadcast and co-partitioned joins, aggregates grouped by the partition columns (final on the
node) -- then at most one boundary: the partial half of a split aggregate, a per-partition
top-N, distinct or limit.  It runs as one runtime task per partition (:class:`NodeStage`), on
a node holding the partition (replicas and failover are the runtime's).  The *driver stage*
concatenates the partition results in partition order -- so answers never depend on
scheduling -- and runs the rest: the exact merge of partial states, the global top-N, and
everything after.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import polars as pl
import pyarrow as pa

from hfq import faults
from hfq.engine import ops as engine_ops
from hfq.engine.aggs import decompose
from hfq.engine.copart import BatchUnit, co_partitioned, paired_units
from hfq.engine.exprs import (
    ByIdentity,
    Tree,
    empty_lazy,
    local_over,
    node_kind,
    signature,
    to_tree,
)
from hfq.engine.fastpath import FAST_ROWS, FAST_SYMBOLS, conjuncts, literal, run_one
from hfq.engine.joins import resolve_right
from hfq.engine.ops import (
    Aggregate,
    Filter,
    MergeAgg,
    Op,
    PartialAgg,
    Rename,
    Select,
    Slice,
    Sort,
    TopN,
    Unique,
    WithColumns,
    collect,
    plain_name,
)
from hfq.engine.rowid import ROWID, partition_offsets, read_with_rowid
from hfq.engine.rows import read_rows, self_reading
from hfq.errors import CorruptPartitionError, HfqError, QueryError
from hfq.query.plan import Filters, Plan
from hfq.query.read import INLINE_ROWS, ReadSpec, polars_message
from hfq.runtime.task import NodeContext
from hfq.storage.cache import PartitionCache, process_cache

if TYPE_CHECKING:
    from hfq.engine.query import Query, TableSource

ENGINE_ERRORS = (pl.exceptions.PolarsError, pl.exceptions.PanicException)
"""What polars raises: its errors and its panics (a bug of polars' own: a grouped
``count(*) FILTER (WHERE DATE '...' BETWEEN x AND x)`` indexed past a column, F122) -- each
reported as a QueryError naming the query, never a raw panic."""

__all__ = ["NodeStage", "Staged", "empty_frame", "hints", "run", "run_rows", "run_selective",
           "stage"]



BATCH_ROWS = 4_000_000
"""At most this many rows in a batch of partitions (:func:`batched`) -- unless one partition
holds more: a node holds a batch's rows at once, so a query over a year of days runs as many
batches, never as one per thread."""


def empty_frame(arrow: pa.Schema) -> pl.DataFrame:
    return cast(pl.DataFrame, pl.from_arrow(arrow.empty_table()))


@dataclass(frozen=True)
class NodeStage:
    """What runs on one partition: read the columns needed, apply the node operations.

    Picklable; the runtime calls it as ``task(node, unit)`` on a node holding the unit."""

    spec: ReadSpec
    ops: tuple[Op, ...]
    table: str = ""
    cache_bytes: int = 0
    """The size of the cache of decoded partitions in a process that has none of its own
    (the driver running the partitions its node holds; a node server has its cache)."""
    batches: PartitionCache | None = None
    """Decoded record batches to read through (in this process only: small queries run
    inline), whatever rows of them the filters keep -- a new symbol of a cached batch costs
    no decoding."""
    offsets: dict[str, int] | None = None
    """With the rows' ``rowid``: the first rowid of each partition (see
    :mod:`hfq.engine.rowid`)."""

    def __call__(self, node: Any, unit: Any) -> pl.DataFrame:
        faults.point("engine.node.before_stage")
        if self.cache_bytes and isinstance(node, NodeContext) and node.cache is None:
            node = dataclasses.replace(node, cache=process_cache(node.store, self.cache_bytes))
        if not isinstance(unit, BatchUnit):
            return self._ops(self._read(node, unit), node, unit)
        frames = [self._read(node, p) for p in unit.parts]
        try:   # the partitions' rows in one polars plan (one planning, one start-up)
            top = self._top(frames, node, unit)
            return top if top is not None else \
                self._ops(pl.concat(frames, how="vertical", rechunk=False), node, unit)
        except (QueryError, *ENGINE_ERRORS):
            # partition by partition: the same rows, or an error naming the partition
            return pl.concat([self._ops(f, node, p) for f, p in zip(frames, unit.parts)],
                             how="vertical_relaxed")

    def _top(self, frames: list[pl.DataFrame], node: Any, unit: Any) -> pl.DataFrame | None:
        """When the stage ends in a top-N whose first key is a column the steps before keep
        unchanged, its answer from the parts whose rows can reach the first n: one pass over
        that column gives each part's best value, the best parts are run first, and the
        n-th row they give bounds the rest (a part whose best is worse holds no row of the
        answer; ties at the bound stay); the parts left run in partition order, so the
        answer is the same rows in the same order.  None: no such top-N, or no bound."""
        top = self.ops[-1] if self.ops else None
        before = self.ops[:-1]
        if not isinstance(top, TopN) or top.n < 1:   # LIMIT 0: no bound to find
            return None
        name = plain_name(top.sort.by[0])
        if name is None or len(frames) < 2 or name not in frames[0].columns or \
                not all(_keeps(op, name) for op in before):
            return None
        dtype = frames[0].schema[name]
        if not (dtype.is_numeric() or dtype.is_temporal()) or dtype == pl.Decimal:
            return None
        desc, nulls_first = top.sort.descending[0], not top.sort.nulls_last[0]
        first: list[int] = []   # parts with a value ranked before every number (NaN, null)
        best: dict[int, Any] = {}
        for i, f in enumerate(frames):
            values = f.get_column(name)
            if nulls_first and values.null_count():
                first.append(i)
                continue
            v = _best(values, desc)
            if isinstance(v, float) and v != v:
                if desc:   # polars ranks NaN above every number
                    first.append(i)
                continue   # ascending: only NaN, ranked after every number
            if v is not None:
                best[i] = v
        order = first + sorted(best, key=best.__getitem__, reverse=desc)
        rows, seen = 0, []
        for i in order:   # the fewest best parts that hold n rows
            seen.append(i)
            rows += frames[i].height
            if rows >= top.n:
                break
        seen.sort()
        got = self._ops(pl.concat([frames[i] for i in seen], how="vertical", rechunk=False),
                        node, unit)
        if got.height < top.n:
            return None
        bound = got.get_column(name)[top.n - 1]
        if bound is None or (isinstance(bound, float) and bound != bound):
            return None
        keep = sorted(set(first) | {i for i, v in best.items()
                                    if (v >= bound if desc else v <= bound)})
        if set(keep) <= set(seen):   # the answer is among the rows already run
            return got
        return self._ops(pl.concat([frames[i] for i in keep], how="vertical", rechunk=False),
                         node, unit)

    def _read(self, node: Any, unit: Any) -> pl.DataFrame:
        part = getattr(unit, "left", unit)
        if self.offsets is not None:
            if any(self_reading(f) for f in part.fragments):
                raise QueryError(f"rowid numbers the rows stored in the table's version; "
                                 f"partition {part.partition} of table {self.table!r} "
                                 "also has live rows not yet written down (write the day "
                                 "down, or read a version)")
            return read_with_rowid(node, self.spec, part, self.offsets[part.partition])
        return read_rows(node, self.spec, part, batches=self.batches)

    def _ops(self, frame: pl.DataFrame, node: Any, unit: Any) -> pl.DataFrame:
        lf = frame.lazy()
        try:
            with engine_ops.input_rows(frame.height):
                for op in self.ops:
                    lf = op.apply(lf, (node, unit))
            big = frame.height >= engine_ops.STREAM_ROWS   # read now: tests set it to 0
            return lf.collect(engine="streaming" if big and _groups(self.ops) else "in-memory")
        except ENGINE_ERRORS as exc:
            raise QueryError(f"query on table {self.table!r}, partition {unit.partition}: "
                             f"{polars_message(exc)}") from exc


def _groups(ops: Sequence[Op]) -> bool:
    """Does the stage group rows (an aggregate, a distinct, a window), and nothing that
    runs its own plans (a top-N, a join)?"""
    plain = (Filter, Select, WithColumns, Rename, Aggregate, PartialAgg, Unique)
    return all(isinstance(op, plain) for op in ops) and \
        any(not (isinstance(op, plain[:4]) and _row_wise(op)) for op in ops)


def _best(values: pl.Series, desc: bool) -> Any:
    """The largest (``desc``) or smallest value, null when there is none; for floats NaN
    when there is one and ``desc`` (polars ranks it above every number)."""
    if desc and values.dtype.is_float():
        if not values.null_count():   # a view: numpy's max propagates NaN
            return float(values.to_numpy().max()) if len(values) else None
        return values.nan_max()
    return values.max() if desc else values.min()


def _keeps(op: Op, name: str) -> bool:
    """Column ``name`` of ``op``'s output holds values of the same column of its input rows
    (row-wise steps that leave it alone)."""
    if isinstance(op, Rename):
        return all(name not in pair for pair in op.mapping)
    return isinstance(op, (Filter, Select, WithColumns)) and op.keeps(name)


@dataclass
class Staged:
    """A query split into its node and driver stages, with the partitions to run."""

    source: TableSource
    plan: Plan
    spec: ReadSpec
    node_ops: list[Op]
    driver_ops: list[Op]
    units: list[Any]
    notes: list[str] = field(default_factory=list)
    offsets: dict[str, int] | None = None
    """With ``rowid``: the first rowid of each partition read."""
    whole: tuple[Op, ...] = ()
    """The query's operations before the split (what :func:`~hfq.engine.fastpath.run_one`
    runs in one plan over one partition's rows)."""

    def read_schema(self) -> pa.Schema:
        """The columns the node stage reads (with the rowid when asked for)."""
        schema = self.spec.schema.select(self.spec.columns).arrow
        return schema if self.offsets is None else schema.append(pa.field(ROWID, pa.int64()))

    def node_schema(self) -> pl.Schema:
        lf = empty_frame(self.read_schema()).lazy()
        for op in self.node_ops:
            lf = op.apply(lf)
        return lf.collect_schema()

    def estimated_bytes(self) -> int:
        """An upper bound of the bytes the node stage sends to the driver: every row read
        passing, at the node output's width (aggregates and top-N send far less)."""
        schema = self.node_schema()
        width = sum(_width(t) for t in schema.dtypes())
        rows = self.plan.rows
        for op in self.node_ops:
            if isinstance(op, Slice) and op.length is not None:
                rows = min(rows, len(self.units) * (op.offset + op.length))
            if isinstance(op, TopN):
                rows = min(rows, len(self.units) * op.n)
            if isinstance(op, (PartialAgg, Aggregate)) and not op.keys:
                rows = min(rows, len(self.units))
        return rows * width


def _width(dtype: pl.DataType) -> int:
    if dtype in (pl.String, pl.Binary) or isinstance(dtype, (pl.List, pl.Array)):
        return 16
    if isinstance(dtype, (pl.Categorical, pl.Enum)):
        return 4
    physical = getattr(dtype, "to_physical", lambda: dtype)()
    width = getattr(physical, "bit_width", None) if physical.is_numeric() else None
    return max(1, width // 8) if isinstance(width, int) else 8


# -- staging ------------------------------------------------------------------------------------
_LOST = frozenset({"\0a partition column was changed"})
"""``local`` once a partition column no longer holds the partition's values: no grouping or
window key set contains it, so nothing after that counts as partition-local."""


def stage(query: Query, *, co_partition: bool = True,
          single: frozenset[str] = frozenset(), keep_order: bool = False) -> Staged:
    """Split ``query`` (over a table) into node and driver stages and plan the partitions.

    ``co_partition``: a join with a table of the same partition scheme on keys including
    the partition columns runs partition by partition on the nodes (see
    :class:`~hfq.engine.copart.CoPartitioned`) rather than broadcasting the right side.
    ``single``: partition columns with one value in every partition kept (one day, say):
    a grouping needs no merge when its keys hold the other partition columns.
    ``keep_order``: groups in order of first appearance even when nothing after the last
    grouping depends on the order (the right side of a join: which of several rows tied
    on an asof key matches depends on it)."""
    src = cast("TableSource", query.source)
    m = src.manifest
    full = frozenset(lvl.column for lvl in m.partition_by.levels())
    local = full
    ops = list(query.ops)
    node_ops: list[Op] = []
    driver_ops: list[Op] = []
    notes: list[str] = []
    pairs: list[dict] = []
    schema = src.schema
    i = 0
    while i < len(ops):
        co = co_partitioned(ops[i], src, local == full, len(pairs), stage) \
            if co_partition else None
        if co is not None:
            ops[i], units = co
            pairs.append(units)
        op = ops[i] = resolve_right(ops[i], _in_order)
        nxt = ops[i + 1] if i + 1 < len(ops) else None
        if isinstance(op, Select) and not op.local(local):
            op = Aggregate((), op.exprs)   # an aggregating select: one row
        if isinstance(op, Aggregate):
            if op.keys and local <= op.plain_keys() | single:
                node_ops.append(op)        # groups never span partitions: final on the node
                notes.append("the grouping keys include the partition columns "
                             f"({', '.join(sorted(local - single))})"
                             + (f" and every partition kept has one {', '.join(sorted(single))}"
                                if single else "") + ": aggregates finish on the nodes")
                schema = _schema_after(op, schema)
                i += 1
                continue
            plan = decompose(op.aggs, op.key_names(), schema)
            if plan is None:
                notes.append("an aggregate cannot be split exactly: rows go to the driver")
                driver_ops = ops[i:]
                break
            node_ops.append(PartialAgg(op.keys, plan))
            empty = None if op.keys else functools.partial(_no_rows, op, schema)
            driver_ops = [MergeAgg(plan, empty), *ops[i + 1:]]
            break
        if op.local(local):
            node_ops.append(op)
            kept = frozenset(k for k in local if op.keeps(k))
            local = local if kept == local else _LOST
            schema = _schema_after(op, schema)
            i += 1
            continue
        if isinstance(op, Sort) and isinstance(nxt, Slice) and nxt.length is not None:
            node_ops.append(TopN(op, nxt.offset + nxt.length))   # top-N per partition
            driver_ops = ops[i:]
            break
        if isinstance(op, Slice) and op.length is not None:
            node_ops.append(Slice(0, op.offset + op.length))
            driver_ops = ops[i:]
            break
        if isinstance(op, Unique):
            node_ops.append(op)
            driver_ops = ops[i:]
            break
        driver_ops = ops[i:]
        break
    driver_ops = [resolve_right(op, _in_order) for op in driver_ops]
    if not keep_order:
        node_ops, driver_ops = _any_order(node_ops, driver_ops)
    staged = _planned(src, node_ops, driver_ops, notes)
    staged.whole = tuple(query.ops)
    if pairs:
        staged.units = paired_units(staged.units, pairs)
        if any(not src.nodes().unit_holders(u) for u in staged.units):
            # no live node holds both sides of some partition: broadcast instead
            return stage(query, co_partition=False, single=single, keep_order=keep_order)
    merge = driver_ops[0] if driver_ops else None
    # (a grouping merged on the driver, or one that cannot be split at all)
    grouped = (isinstance(merge, MergeAgg) and merge.plan.key_names) or \
        (isinstance(merge, Aggregate) and bool(merge.keys))
    if not single and grouped:
        one = _single_valued(m, staged.units)
        if one:   # e.g. one day: groups by symbol never span two partitions
            return stage(query, co_partition=co_partition, single=one,
                         keep_order=keep_order)
    return staged


def _in_order(right: Any) -> pl.DataFrame:
    """The right side of a join, run with every grouping's rows in order (which of several
    rows tied on an asof key matches depends on it)."""
    if getattr(getattr(right, "source", None), "manifest", None) is None:   # not over a table
        return cast(pl.DataFrame, right.collect())
    return run(stage(right, keep_order=True))[0]


def _any_order(node_ops: list[Op], driver_ops: list[Op]) -> tuple[list[Op], list[Op]]:
    """The last grouping of the plan (and its partial half) told that its groups may come in
    any order, when every step after it is row-wise (a filter, a projection, a rename): the
    rows' order matters to nothing after it, as in SQL without ORDER BY.  A group's values
    never depend on it (its rows, and its partial states, stay in order)."""
    ops = [*node_ops, *driver_ops]
    for i in reversed(range(len(ops))):
        op = ops[i]
        if isinstance(op, (Aggregate, MergeAgg)):
            ops[i] = dataclasses.replace(op, ordered=False)
            partial = ops[i - 1] if i else None
            if isinstance(op, MergeAgg) and isinstance(partial, PartialAgg):
                ops[i - 1] = dataclasses.replace(partial, ordered=False)
            break
        if not _row_wise(op):
            break
    return ops[:len(node_ops)], ops[len(node_ops):]


def _row_wise(op: Op) -> bool:
    if isinstance(op, Rename):
        return True
    exprs = [op.predicate] if isinstance(op, Filter) else \
        op.exprs if isinstance(op, (Select, WithColumns)) else None
    return exprs is not None and all(local_over(to_tree(e), _LOST) for e in exprs)


def _single_valued(m: Any, units: Sequence[Any]) -> frozenset[str]:
    """The partition columns that have one value in every unit (a ``Value`` level, or any
    level when there is a single unit)."""
    levels = m.partition_by.levels()
    keys = [tuple(u.key) for u in units]
    if not keys or any(len(k) != len(levels) for k in keys):
        return frozenset()
    return frozenset(lvl.column for i, lvl in enumerate(levels)
                     if len({k[i] for k in keys}) == 1)


def _no_rows(op: Op, schema: pl.Schema) -> pl.DataFrame:
    """``op`` (an aggregate without keys) over no rows: its one-row answer."""
    return op.apply(empty_lazy(schema)).collect()


def _schema_after(op: Op, schema: pl.Schema) -> pl.Schema:
    return op.apply(empty_lazy(schema)).collect_schema()


def _planned(src: TableSource, node_ops: list[Op], driver_ops: list[Op],
             notes: list[str]) -> Staged:
    m = src.manifest
    needed: set[str] | None = None
    for op in reversed(node_ops):
        needed = op.needs(needed)
    # the stored columns the reader may see (the rowid is numbered, not read)
    names = [c for c in src.schema.names() if c != ROWID]
    columns = [c for c in names if needed is None or c in needed]
    if not columns and not src.rowid:   # count(*) and the like: read the narrowest column
        columns = names[:1]
    lo, hi, symbols = hints(node_ops, src)
    filters = Filters(src.date_column, lo, hi, src.symbol_column, symbols)
    # planned as every read is, under the reader's policy (its row predicate, if any, is the
    # read's filter: it runs on each partition before any operation of the query)
    read = src.session.plan_read(m, columns=columns, filters=filters)
    plan, spec = read.plan, read.spec
    units = src.bind_units(plan.units, filters)
    if getattr(src, "live", None) is not None:
        notes = [*notes, src.live.describe()]
    offsets = partition_offsets(m, [u.partition for u in plan.units]) if src.rowid else None
    return Staged(src, plan, spec, node_ops, driver_ops, units, notes, offsets)


# -- pruning hints from filters ---------------------------------------------------------------
def _day(value: Any) -> str | None:
    if isinstance(value, dt.datetime):
        return value.date().isoformat() if value.tzinfo is None else \
            value.astimezone(dt.timezone.utc).date().isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value[:10]).isoformat()
        except ValueError:
            return None
    return None


_FLIP = {"Gt": "Lt", "GtEq": "LtEq", "Lt": "Gt", "LtEq": "GtEq", "Eq": "Eq"}


def hints(node_ops: Sequence[Op], src: TableSource
           ) -> tuple[str | None, str | None, tuple | None]:
    """Date bounds and symbols implied by the filters at the start of the node stage,
    intersected with the query's ``dates=``/``symbols=``."""
    lo, hi, symbols = src.date_lo, src.date_hi, src.symbols
    date_col, sym_col = src.date_column, src.symbol_column
    for op in node_ops:
        if isinstance(op, Filter):
            for what, value in _filter_hints(op, date_col, sym_col):
                if what == "lo" and (lo is None or value > lo):
                    lo = value
                elif what == "hi" and (hi is None or value < hi):
                    hi = value
                elif what == "symbols":
                    symbols = tuple(s for s in (symbols if symbols is not None else value)
                                    if s in value)
        date_col = date_col if date_col and op.keeps(date_col) else None
        sym_col = sym_col if sym_col and op.keeps(sym_col) else None
    return lo, hi, symbols


def _filter_hints(op: Filter, date_col: str | None, sym_col: str | None
                  ) -> tuple[tuple[str, Any], ...]:
    """What the conjuncts of ``op``'s predicate imply (:func:`_hint`), kept in
    :data:`_HINTS` while ``op`` lives (a compiled statement's filters are the same objects
    each run: their constants are evaluated by polars once)."""
    found = _HINTS.get(op, date_col, sym_col)
    if found is None:
        found = tuple(h for c in conjuncts(to_tree(op.predicate))
                      for h in _hint(c, date_col, sym_col))
        _HINTS.put(op, found, date_col, sym_col)
    return cast("tuple[tuple[str, Any], ...]", found)


_HINTS = ByIdentity(1024)


def _hint(tree: Tree, date_col: str | None, sym_col: str | None) -> list[tuple[str, Any]]:
    """``[("lo", day), ("hi", day), ("symbols", (...))]`` that one conjunct implies."""
    kind, body = node_kind(tree)
    if kind == "BinaryExpr" and body["op"] in _FLIP:
        left, right, op = body["left"], body["right"], body["op"]
        if node_kind(right)[0] == "Column":
            left, right, op = right, left, _FLIP[op]
        name = node_kind(left)[1] if node_kind(left)[0] == "Column" else None
        values = literal(right) if name else None
        if not values or len(values) != 1 or values[0] is None:
            return []
        if name == sym_col and op == "Eq" and isinstance(values[0], str):
            return [("symbols", (values[0],))]
        day = _day(values[0]) if name == date_col else None
        if day is not None:
            return {"Gt": [("lo", day)], "GtEq": [("lo", day)], "Lt": [("hi", day)],
                    "LtEq": [("hi", day)], "Eq": [("lo", day), ("hi", day)]}[op]
        return []
    if kind == "Function":
        sig = signature(body["function"])
        args = body["input"]
        name = node_kind(args[0])[1] if node_kind(args[0])[0] == "Column" else None
        if sig == "Boolean/IsIn" and name is not None and name == sym_col:
            values = literal(args[1])
            if values and len(values) == 1 and isinstance(values[0], list):
                values = values[0]
            if values and all(isinstance(v, str) for v in values):
                return [("symbols", tuple(values))]
        if sig == "Boolean/IsBetween" and name is not None and name == date_col:
            a, b = literal(args[1]), literal(args[2])
            x = _day(a[0]) if a and len(a) == 1 else None
            y = _day(b[0]) if b and len(b) == 1 else None
            return [h for h in (("lo", x), ("hi", y)) if h[1] is not None]
    return []


# -- running ------------------------------------------------------------------------------------
@dataclass
class RunStats:
    """What one run did: partitions run, rows and bytes that reached the driver, seconds."""

    partitions: int = 0
    rows_to_driver: int = 0
    bytes_to_driver: int = 0
    seconds: float = 0.0


def run_selective(query: Query, plan: Plan) -> pl.DataFrame | None:
    """The answer of a plain read (``query``, planned as ``plan``) through the symbol fast path
    (:func:`~hfq.engine.fastpath.run_one`) when its filters pick a few symbols within at most
    :data:`~hfq.engine.fastpath.FAST_ROWS` rows -- a symbol's rows found by its run in each
    cached batch and a time range by binary search, where the plain read decodes and
    filters every batch of the symbol's run -- or None (the plain read runs)."""
    symbols = plan.filters.symbols
    if symbols is None or len(symbols) > FAST_SYMBOLS or not plan.units or \
            plan.rows > FAST_ROWS:
        return None
    try:
        staged = stage(query)
    except HfqError:   # the plain read raises its own error
        return None
    return run_one(staged)


def run(staged: Staged, *, progress: bool = False) -> tuple[pl.DataFrame, RunStats]:
    """Run the node stage on every partition (in parallel, where the data is), then the driver
    stage on the results concatenated in partition order."""
    started = time.perf_counter()
    src = staged.source
    stats = RunStats(partitions=len(staged.units))
    fast = run_one(staged)
    if fast is not None:   # one partition, a few symbols: one plan over a cached slice
        stats.rows_to_driver, stats.bytes_to_driver = fast.height, int(fast.estimated_size())
        stats.seconds = time.perf_counter() - started
        return fast, stats
    task = NodeStage(staged.spec, tuple(staged.node_ops), src.name,
                     int(src.session.settings.cache_bytes), offsets=staged.offsets)
    units = batched(staged)
    frames: list[pl.DataFrame | None] = [None] * len(units)

    def arrive(i: int, value: Any) -> None:
        frames[i] = value

    inline = _run_inline(staged, task, units) if units else None
    if inline is not None:
        frames = list(inline)
    elif units:
        src.session.run_units(task, units, arrive, progress=progress,
                              label=f"query {src.name}")
    missing = [u.partition for u, f in zip(units, frames) if f is None]
    if missing:   # the runtime reports every unit or raises: never a partial answer
        raise QueryError(f"query on table {src.name!r}: no result for partitions "
                         f"{', '.join(missing)}")
    parts = [f for f in frames if f is not None]
    for f in parts:
        stats.rows_to_driver += f.height
        stats.bytes_to_driver += int(f.estimated_size())
    if parts:
        frame = pl.concat(parts, how="vertical_relaxed") if len(parts) > 1 else parts[0]
    else:   # nothing to read: the node stage over no rows gives the right columns
        frame = _empty_result(staged)
    try:
        lf = frame.lazy()
        with engine_ops.input_rows(frame.height):
            for op in staged.driver_ops:
                lf = op.apply(lf)
        out = collect(lf, frame.height, staged.driver_ops)
    except ENGINE_ERRORS as exc:
        raise QueryError(f"query on table {src.name!r} (driver stage): "
                         f"{polars_message(exc)}") from exc
    stats.seconds = time.perf_counter() - started
    return out, stats


def run_rows(frame: pl.DataFrame, ops: Sequence[Op]) -> pl.DataFrame:
    """``ops`` over rows given as a frame (no table: SQL without FROM), here."""
    try:
        lf = frame.lazy()
        for op in ops:
            lf = resolve_right(op, _in_order).apply(lf)
        return lf.collect()
    except ENGINE_ERRORS as exc:
        raise QueryError(f"query without a table: {polars_message(exc)}") from exc


def batched(staged: Staged) -> list[Any]:
    """The units of work: the partitions kept, those held by the same nodes gathered into
    a few :class:`~hfq.engine.copart.BatchUnit` s (about as many per set of holders as a
    node runs threads, of about equal rows and at most :data:`BATCH_ROWS` each, each a run of
    partitions in partition order;
    the batches in the order of their first partition), so that a node runs one polars plan
    per batch rather than one per partition.  Partitions run alone when a step depends on
    which partition it runs on, or when no live node holds them (so the error names them)."""
    units = staged.units
    if len(units) < 2 or any(op.per_partition() for op in staged.node_ops):
        return list(units)
    nodes = staged.source.nodes()
    alive = set(nodes.alive())
    per = max(1, staged.source.threads())
    runs = _order_matters(staged.node_ops)
    groups: dict[Any, list[int]] = {}
    out: list[tuple[int, Any]] = []
    last: tuple[str, ...] | None = None
    run = 0
    for i, u in enumerate(units):
        holders = tuple(sorted(n for n in nodes.unit_holders(u) if n in alive))
        if holders:
            # a stage whose partial states pick rows by their order batches runs of
            # consecutive partitions only (ties go to the earliest partition)
            if runs and holders != last:
                run = i
            groups.setdefault((holders, run), []).append(i)
        else:
            out.append((i, u))
        last = holders
    for members in groups.values():
        total = sum(max(1, units[i].rows) for i in members)
        chunks: list[list[int]] = [[]]
        done = 0
        held = 0   # rows of the batch being filled
        for i in members:
            rows = max(1, units[i].rows)
            if chunks[-1] and (done >= total * len(chunks) / per or held + rows > BATCH_ROWS):
                chunks.append([])
                held = 0
            chunks[-1].append(i)
            done += rows
            held += rows
        out += [(c[0], BatchUnit(tuple(units[i] for i in c)) if len(c) > 1 else units[c[0]])
                for c in chunks]
    return [u for _, u in sorted(out, key=lambda x: x[0])]


def _order_matters(ops: Sequence[Op]) -> bool:
    """Does the answer depend on the order in which the node stage's rows reach the driver:
    rows as read (filtered, computed row by row, a top-N or DISTINCT ON keeping the first of
    ties) that the driver aggregates, windows or limits -- e.g. an aggregate that cannot be
    split picks the first of tied rows in partition order -- or a partial aggregate that
    picks rows by their place.  Only groups (partial or final aggregates, plain DISTINCT)
    make the rows' order not matter."""
    groups = any(isinstance(op, (PartialAgg, Aggregate)) or
                 (isinstance(op, Unique) and not op.subset) for op in ops)
    return _picks_by_order(ops) or not groups


def _picks_by_order(ops: Sequence[Op]) -> bool:
    """Does a partial aggregate of ``ops`` pick a row by its place (first/last, arg_min/
    arg_max ties): its partial states merge in partition order only when each batch of
    partitions is a run of consecutive ones."""
    return any(isinstance(op, PartialAgg) and
               {"first", "last", "maxby", "minby"} & set(op.plan.kinds) for op in ops)


def _run_inline(staged: Staged, task: NodeStage, units: list[Any]
                ) -> list[pl.DataFrame] | None:
    """Every unit's node stage run here, when the query is small and this process's node
    holds it all; None otherwise -- and when a copy is damaged, so that the runtime reads
    another replica and has this one repaired."""
    nodes = staged.source.nodes()
    if nodes.local is None or nodes.store is None or \
            sum(u.rows for u in units) > INLINE_ROWS or \
            any(nodes.local not in nodes.unit_holders(u) for u in units):
        return None
    cache = process_cache(nodes.store, task.cache_bytes)
    node = NodeContext(nodes.local, nodes.store, cache, lambda: nodes)
    here = dataclasses.replace(task, batches=cache)
    try:
        return [here(node, u) for u in units]
    except CorruptPartitionError:
        return None


def _empty_result(staged: Staged) -> pl.DataFrame:
    lf = empty_frame(staged.read_schema()).lazy()
    try:   # constants are evaluated over no rows too: their errors (1 + 2^63 overflows)
        for op in staged.node_ops:
            lf = op.apply(lf)
        return lf.collect()
    except ENGINE_ERRORS as exc:
        raise QueryError(f"query on table {staged.source.name!r}: "
                         f"{polars_message(exc)}") from exc


def explain(staged: Staged) -> str:
    p = staged.plan
    kept = len(p.units)
    lines = [f"query on {p.table} @ version {p.version}",
             "node stage (each partition, on a node holding it):",
             f"  scan {p.table}: columns {', '.join(staged.spec.columns)}",
             f"  partitions: {kept} kept, {p.partitions_total - kept} pruned of "
             f"{p.partitions_total}; rows to read {p.rows:,}; bytes on disk {p.bytes:,}"]
    f = p.filters
    if f.date_lo or f.date_hi:
        lines.append(f"  dates: {f.date_lo} .. {f.date_hi} on {f.date_column}")
    if f.symbols is not None:
        lines.append(f"  symbols: {', '.join(map(str, f.symbols[:10]))}"
                     f"{' ...' if len(f.symbols) > 10 else ''} on {f.symbol_column}")
    lines += [f"  {op.describe()}" for op in staged.node_ops]
    lines.append("driver stage:")
    lines.append(f"  concatenate {kept} partition results in partition order "
                 f"(estimated at most {staged.estimated_bytes():,} bytes to the driver)")
    lines += [f"  {op.describe()}" for op in staged.driver_ops]
    lines += [f"note: {n}" for n in staged.notes]
    return "\n".join(lines)
