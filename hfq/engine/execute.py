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

import datetime as dt
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import polars as pl
import pyarrow as pa

from hfq import faults
from hfq.engine.aggs import decompose
from hfq.engine.exprs import Tree, columns_of, from_tree, node_kind, signature, to_tree
from hfq.engine.joins import resolve_right
from hfq.engine.ops import Aggregate, Filter, MergeAgg, Op, PartialAgg, Select, Slice, Sort, Unique
from hfq.errors import QueryError
from hfq.query.plan import Filters, Plan, make_plan
from hfq.query.read import ReadSpec, read_frame

if TYPE_CHECKING:
    from hfq.engine.query import Query, TableSource

__all__ = ["NodeStage", "Staged", "empty_frame", "run", "stage"]


def empty_frame(arrow: pa.Schema) -> pl.DataFrame:
    return cast(pl.DataFrame, pl.from_arrow(arrow.empty_table()))


@dataclass(frozen=True)
class NodeStage:
    """What runs on one partition: read the columns needed, apply the node operations.

    Picklable; the runtime calls it as ``task(node, unit)`` on a node holding the unit."""

    spec: ReadSpec
    ops: tuple[Op, ...]
    table: str = ""

    def __call__(self, node: Any, unit: Any) -> pl.DataFrame:
        faults.point("engine.node.before_stage")
        frame = read_frame(node, self.spec, unit)
        lf = frame.lazy()
        try:
            for op in self.ops:
                lf = op.apply(lf, (node, unit))
            return lf.collect()
        except pl.exceptions.PolarsError as exc:
            raise QueryError(f"query on table {self.table!r}, partition {unit.partition}: "
                             f"{_first_line(exc)}") from exc


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


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

    def node_schema(self) -> pl.Schema:
        lf = empty_frame(self.spec.schema.select(self.spec.columns).arrow).lazy()
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
def stage(query: Query) -> Staged:
    """Split ``query`` (over a table) into node and driver stages and plan the partitions."""
    src = query.source
    m = src.manifest
    local = frozenset(lvl.column for lvl in m.partition_by.levels())
    ops = [resolve_right(op) for op in query.ops]
    node_ops: list[Op] = []
    driver_ops: list[Op] = []
    notes: list[str] = []
    schema = src.schema
    i = 0
    while i < len(ops):
        op = ops[i]
        nxt = ops[i + 1] if i + 1 < len(ops) else None
        if isinstance(op, Select) and not op.local(local):
            op = Aggregate((), op.exprs)   # an aggregating select: one row
        if isinstance(op, Aggregate):
            if op.keys and local <= op.plain_keys():
                node_ops.append(op)        # groups never span partitions: final on the node
                notes.append("the grouping keys include the partition columns "
                             f"({', '.join(sorted(local))}): aggregates finish on the nodes")
                schema = _schema_after(op, schema)
                i += 1
                continue
            plan = decompose(op.aggs, op.key_names(), schema)
            if plan is None:
                notes.append("an aggregate cannot be split exactly: rows go to the driver")
                driver_ops = ops[i:]
                break
            node_ops.append(PartialAgg(op.keys, plan))
            empty = None if op.keys else op.apply(pl.LazyFrame(schema=schema)).collect()
            driver_ops = [MergeAgg(plan, empty), *ops[i + 1:]]
            break
        if op.local(local):
            node_ops.append(op)
            local = frozenset(k for k in local if op.keeps(k))
            schema = _schema_after(op, schema)
            i += 1
            continue
        if isinstance(op, Sort) and isinstance(nxt, Slice) and nxt.length is not None:
            node_ops += [op, Slice(0, nxt.offset + nxt.length)]   # top-N per partition
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
    return _planned(src, node_ops, driver_ops, notes)


def _schema_after(op: Op, schema: pl.Schema) -> pl.Schema:
    return op.apply(pl.LazyFrame(schema=schema)).collect_schema()


def _planned(src: TableSource, node_ops: list[Op], driver_ops: list[Op],
             notes: list[str]) -> Staged:
    m = src.manifest
    needed: set[str] | None = None
    for op in reversed(node_ops):
        needed = op.needs(needed)
    columns = [c for c in m.schema.names if needed is None or c in needed]
    if not columns:   # count(*) and the like: read the narrowest column
        columns = [m.schema.names[0]]
    lo, hi, symbols = _hints(node_ops, src)
    filters = Filters(src.date_column, lo, hi, src.symbol_column, symbols)
    plan = make_plan(m, columns, filters, None)
    spec = ReadSpec(m.schema, m.sort_by, columns, None, [], filters)
    units = src.bind_units(plan.units)
    return Staged(src, plan, spec, node_ops, driver_ops, units, notes)


# -- pruning hints from filters ---------------------------------------------------------------
def _conjuncts(tree: Tree) -> list[Tree]:
    kind, body = node_kind(tree)
    if kind == "BinaryExpr" and body["op"] in ("And", "LogicalAnd"):
        return _conjuncts(body["left"]) + _conjuncts(body["right"])
    return [tree]


def _literal(tree: Tree) -> list[Any] | None:
    if columns_of(tree) != set() or node_kind(tree)[0] not in ("Literal", "Cast", "Function"):
        return None
    try:
        return pl.select(from_tree(tree).alias("v")).to_series().to_list()
    except pl.exceptions.PolarsError:
        return None


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


def _hints(node_ops: Sequence[Op], src: TableSource
           ) -> tuple[str | None, str | None, tuple | None]:
    """Date bounds and symbols implied by the filters at the start of the node stage,
    intersected with the query's ``dates=``/``symbols=``."""
    lo, hi, symbols = src.date_lo, src.date_hi, src.symbols
    date_col, sym_col = src.date_column, src.symbol_column
    for op in node_ops:
        if isinstance(op, Filter):
            for c in _conjuncts(to_tree(op.predicate)):
                for what, value in _hint(c, date_col, sym_col):
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


def _hint(tree: Tree, date_col: str | None, sym_col: str | None) -> list[tuple[str, Any]]:
    """``[("lo", day), ("hi", day), ("symbols", (...))]`` that one conjunct implies."""
    kind, body = node_kind(tree)
    if kind == "BinaryExpr" and body["op"] in _FLIP:
        left, right, op = body["left"], body["right"], body["op"]
        if node_kind(right)[0] == "Column":
            left, right, op = right, left, _FLIP[op]
        name = node_kind(left)[1] if node_kind(left)[0] == "Column" else None
        values = _literal(right) if name else None
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
            values = _literal(args[1])
            if values and len(values) == 1 and isinstance(values[0], list):
                values = values[0]
            if values and all(isinstance(v, str) for v in values):
                return [("symbols", tuple(values))]
        if sig == "Boolean/IsBetween" and name is not None and name == date_col:
            a, b = _literal(args[1]), _literal(args[2])
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


def run(staged: Staged, *, progress: bool = False) -> tuple[pl.DataFrame, RunStats]:
    """Run the node stage on every partition (in parallel, where the data is), then the driver
    stage on the results concatenated in partition order."""
    started = time.perf_counter()
    src = staged.source
    stats = RunStats(partitions=len(staged.units))
    task = NodeStage(staged.spec, tuple(staged.node_ops), src.name)
    frames: list[pl.DataFrame | None] = [None] * len(staged.units)

    def arrive(i: int, value: Any) -> None:
        frames[i] = value

    if staged.units:
        nodes = src.nodes()
        nodes.run_units(task, staged.units, arrive, here=True, threads=src.threads(),
                        progress=progress, label=f"query {src.name}")
    missing = [u.partition for u, f in zip(staged.units, frames) if f is None]
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
        for op in staged.driver_ops:
            lf = op.apply(lf)
        out = lf.collect()
    except pl.exceptions.PolarsError as exc:
        raise QueryError(f"query on table {src.name!r} (driver stage): "
                         f"{_first_line(exc)}") from exc
    stats.seconds = time.perf_counter() - started
    return out, stats


def _empty_result(staged: Staged) -> pl.DataFrame:
    lf = empty_frame(staged.spec.schema.select(staged.spec.columns).arrow).lazy()
    for op in staged.node_ops:
        lf = op.apply(lf)
    return lf.collect()


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
