"""Co-partitioned joins: partition by partition on the node that holds both sides.

Tables with the same partition scheme (``Compo(Value("date"), Hash("symbol", n))`` with the
same ``n``, say) put the rows of one (date, symbol bucket) in partitions of the same name, and
the placement of a partition depends on its name only -- so a node that holds a partition of
``trades`` usually holds the same partition of ``quotes``.  When an equi-join (inner, left, semi,
anti), an asof join or a window join matches on keys that include every partition column, a
left row can only meet right rows of the same partition: each partition of the left table is
joined with the same partition of the right table, on a node holding both, and nothing is
broadcast.  The right side's own filters and projections run there too.  When the right side
needs the driver (a global aggregate, a sort...) or no live node holds both halves of some
partition, the planner broadcasts the right side instead (same answer).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import polars as pl

from hfq.engine.joins import AsofJoin, Join, WindowJoin
from hfq.engine.ops import Op, Rename, plain_name
from hfq.engine.rows import read_rows
from hfq.errors import QueryError
from hfq.query.plan import Unit
from hfq.query.read import ReadSpec

__all__ = ["BatchUnit", "CoPartitioned", "PairUnit", "co_partitioned", "paired_units"]


@dataclass(frozen=True)
class PairUnit:
    """A partition of the left table with the same partition of each co-partitioned right
    table (None: that table has no rows there); it runs where all their files are."""

    left: Unit
    rights: tuple[Unit | None, ...]

    @property
    def partition(self) -> str:
        return self.left.partition

    @property
    def key(self) -> tuple[Any, ...]:
        return self.left.key

    @property
    def fragments(self) -> tuple[Any, ...]:
        return self.left.fragments + tuple(
            f for r in self.rights if r is not None for f in r.fragments)

    @property
    def rows(self) -> int:
        return self.left.rows + sum(r.rows for r in self.rights if r is not None)


@dataclass(frozen=True)
class BatchUnit:
    """Partitions (or :class:`PairUnit` s) held by the same nodes, run as one unit of work:
    their rows concatenated (in partition order) and the node stage run once over them, which
    gives the same rows as running it on each and concatenating the results when no step
    depends on which partition it runs on (see :meth:`~hfq.engine.ops.Op.per_partition`)."""

    parts: tuple[Any, ...]

    @property
    def partition(self) -> str:
        first = self.parts[0].partition
        return first if len(self.parts) == 1 else \
            f"{first} (and {len(self.parts) - 1} more run with it)"

    @property
    def key(self) -> tuple[Any, ...]:
        return tuple(self.parts[0].key)

    @property
    def fragments(self) -> tuple[Any, ...]:
        return tuple(f for p in self.parts for f in p.fragments)

    @property
    def rows(self) -> int:
        return sum(p.rows for p in self.parts)


@dataclass(frozen=True)
class CoPartitioned(Op):
    """A join whose right side is read, filtered and projected on the node, from the same
    partition as the left rows (``index``: which of the unit's right partitions)."""

    op: Join | AsofJoin | WindowJoin   # its right side: an empty frame of the right's columns
    index: int
    spec: ReadSpec    # how to read the right table
    ops: tuple[Op, ...]   # the right query's own operations
    table: str

    def apply(self, lf: pl.LazyFrame, at: tuple[Any, Any] | None = None) -> pl.LazyFrame:
        if at is None:   # planning: the output's columns
            return self.op.apply(lf)
        node, unit = at
        pairs = unit.parts if isinstance(unit, BatchUnit) else (unit,)
        if not all(isinstance(p, PairUnit) for p in pairs):
            raise QueryError(f"co-partitioned join with {self.table!r}: partition "
                             f"{getattr(unit, 'partition', '?')} came without its pair")
        parts = [p.rights[self.index] for p in pairs if p.rights[self.index] is not None]
        if not parts:
            return self.op.apply(lf)   # no right rows in these partitions
        frames = [read_rows(node, self.spec, part) for part in parts]
        if any(op.per_partition() for op in self.ops):   # the right side's own steps
            groups = [(f, part) for f, part in zip(frames, parts)]
        else:   # a batch: its partitions' right sides in the same order, in one plan
            groups = [(pl.concat(frames, how="vertical", rechunk=False),
                       parts[0] if len(parts) == 1 else BatchUnit(tuple(parts)))]
        rights = []
        for frame, part in groups:
            rlf = frame.lazy()
            for op in self.ops:
                rlf = op.apply(rlf, (node, part))
            rights.append(rlf.collect())
        right = rights[0] if len(rights) == 1 else \
            pl.concat(rights, how="vertical", rechunk=False)
        return replace(self.op, right=right).apply(lf)

    def describe(self) -> str:
        inner = replace(self.op, right=None).describe()
        return f"{inner} -- co-partitioned: each partition joins the same partition of " \
               f"{self.table} on its node"

    def reads(self) -> set[str] | None:
        return self.op.reads()

    def local(self, keys: frozenset[str]) -> bool:
        return True

    def needs(self, downstream: set[str] | None) -> set[str] | None:
        return self.op.needs(downstream)

    def keeps(self, name: str) -> bool:
        return self.op.keeps(name)


def _key_pairs(op: Op) -> list[tuple[str | None, str | None]] | None:
    if isinstance(op, Join):
        if op.how not in ("inner", "left", "semi", "anti"):
            return None
        return [(plain_name(a), plain_name(b)) for a, b in zip(op.left_on, op.right_on)]
    if isinstance(op, (AsofJoin, WindowJoin)):
        return list(zip(op.by_left, op.by_right))
    return None


def _joins(op: Op) -> Join | AsofJoin | WindowJoin | None:
    return op if isinstance(op, (Join, AsofJoin, WindowJoin)) else None


def co_partitioned(op: Op, src: Any, intact: bool, index: int,
                   stage: Callable[..., Any]) -> tuple[CoPartitioned, dict] | None:
    """``op`` as a :class:`CoPartitioned` join and the right table's partitions by key, when
    the left's partition columns are ``intact``, the right side is a query over a table of the
    same database and partition scheme whose work all runs on the nodes, and the join keys
    pair every partition column with itself; else None (broadcast)."""
    join = _joins(op)
    pairs = _key_pairs(op)
    right = getattr(op, "right", None)
    rsrc = getattr(right, "source", None)
    if join is None or not intact or pairs is None or rsrc is None or \
            getattr(getattr(rsrc, "session", None), "catalog", None) is not src.session.catalog \
            or getattr(rsrc, "rowid", False):   # (a right side with rowids: broadcast)
        return None
    scheme = src.manifest.partition_by
    if rsrc.manifest.partition_by != scheme:
        return None
    cols = [lvl.column for lvl in scheme.levels()]
    rs = stage(right, co_partition=False, keep_order=True)
    if rs.driver_ops:
        return None
    where = {c: c for c in cols}   # partition column -> its name in the right's output
    for o in rs.node_ops:
        if isinstance(o, Rename):
            mapping = dict(o.mapping)
            if any(n not in mapping and n in mapping.values() for n in where.values()):
                return None
            where = {c: mapping.get(n, n) for c, n in where.items()}
        elif not all(o.keeps(n) for n in where.values()):
            return None
    if not all((c, where[c]) in pairs for c in cols):
        return None
    empty = pl.DataFrame(schema=rs.node_schema())
    co = CoPartitioned(replace(join, right=empty), index, rs.spec, tuple(rs.node_ops),
                       rsrc.name)
    return co, {u.key: u for u in rs.units}


def paired_units(units: list[Any], pairs: list[dict]) -> list[PairUnit]:
    """Each left unit with the same partition of each right table."""
    return [PairUnit(u, tuple(p.get(u.key) for p in pairs)) for u in units]
