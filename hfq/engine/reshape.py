"""Reshaping operations: pivot and unpivot, fills on a regular time grid, seeded sampling."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import polars as pl

from hfq.engine.exprs import bucket_expr, parse_every
from hfq.engine.ops import Op

__all__ = ["Fill", "Pivot", "Sample", "Unpivot"]


@dataclass(frozen=True)
class Pivot(Op):
    """One row per ``index`` value, one column per value in ``columns`` of ``on`` (in that
    order), holding the ``values`` of that cell (``agg`` of them when several).  Runs on the
    driver: a row's cells come from every partition."""

    on: str
    index: tuple[str, ...]
    values: str
    columns: tuple[Any, ...]
    agg: str = "first"

    def apply(self, lf: pl.LazyFrame, at: tuple[Any, Any] | None = None) -> pl.LazyFrame:
        cells = lf.group_by([*self.index, self.on], maintain_order=True).agg(
            getattr(pl.col(self.values), self.agg)().alias(self.values))
        return cells.pivot(on=self.on, on_columns=list(self.columns), index=list(self.index),
                           values=self.values, aggregate_function=None)

    def describe(self) -> str:
        return (f"pivot {self.on} ({', '.join(map(str, self.columns))}) of "
                f"{self.agg}({self.values}) by {', '.join(self.index)}")

    def projects(self) -> bool:
        return True

    def reads(self) -> set[str] | None:
        return {self.on, self.values, *self.index}


@dataclass(frozen=True)
class Unpivot(Op):
    """Columns ``on`` become rows (``variable``, ``value``), keeping ``index``; row-wise."""

    on: tuple[str, ...]
    index: tuple[str, ...]
    variable: str = "variable"
    value: str = "value"

    def apply(self, lf: pl.LazyFrame, at: tuple[Any, Any] | None = None) -> pl.LazyFrame:
        return lf.unpivot(on=list(self.on), index=list(self.index),
                          variable_name=self.variable, value_name=self.value)

    def describe(self) -> str:
        return f"unpivot {', '.join(self.on)} keeping {', '.join(self.index)}"

    def projects(self) -> bool:
        return True

    def reads(self) -> set[str] | None:
        return {*self.on, *self.index}

    def local(self, keys: frozenset[str]) -> bool:
        return True

    def keeps(self, name: str) -> bool:
        return name in self.index


@dataclass(frozen=True)
class Fill(Op):
    """Every ``every`` step of ``on`` between each group's first and last value (groups by
    ``by``), the rows' values filled forward, backward, linearly or with a constant; rows not
    on the grid are dropped.  Local when ``by`` includes the partition columns."""

    on: str
    every: str
    by: tuple[str, ...]
    columns: tuple[str, ...]
    method: str = "forward"
    value: Any = None

    def apply(self, lf: pl.LazyFrame, at: tuple[Any, Any] | None = None) -> pl.LazyFrame:
        schema = lf.collect_schema()
        dtype = schema[self.on]
        step = parse_every(self.every)
        on_grid = bucket_expr(self.on, step, 0, dtype)
        rows = lf.with_columns(on_grid.alias(self.on)) \
            .group_by([*self.by, self.on], maintain_order=True) \
            .agg([pl.col(c).last() for c in self.columns])
        phys = pl.col(self.on).to_physical()
        unit = step if not isinstance(dtype, pl.Datetime) else \
            step // {"ns": 1, "us": 1000, "ms": 10**6}[dtype.time_unit or "us"]
        grid = rows.group_by(list(self.by), maintain_order=True).agg(
            pl.int_ranges(phys.min(), phys.max() + 1, unit).first().alias("__t")) \
            .explode("__t")
        grid = grid.with_columns(pl.col("__t").cast(dtype).alias(self.on)).drop("__t") \
            if not isinstance(dtype, pl.Time) else \
            grid.with_columns(pl.col("__t").cast(pl.Time).alias(self.on)).drop("__t")
        out = grid.join(rows, on=[*self.by, self.on], how="left", nulls_equal=True,
                        maintain_order="left")
        fill = {"forward": lambda c: c.forward_fill(), "backward": lambda c: c.backward_fill(),
                "linear": lambda c: c.interpolate(),
                "constant": lambda c: c.fill_null(self.value)}[self.method]
        over = list(self.by)
        return out.sort([*over, self.on]).with_columns(
            [(fill(pl.col(c)).over(over) if over else fill(pl.col(c))) for c in self.columns])

    def describe(self) -> str:
        by = f" per {', '.join(self.by)}" if self.by else ""
        return f"{self.method} fill of {', '.join(self.columns)} on a {self.every} grid " \
               f"of {self.on}{by}"

    def projects(self) -> bool:
        return True

    def reads(self) -> set[str] | None:
        return {self.on, *self.by, *self.columns}

    def local(self, keys: frozenset[str]) -> bool:
        return keys <= set(self.by)

    def keeps(self, name: str) -> bool:
        return name in self.by


@dataclass(frozen=True)
class Sample(Op):
    """A seeded sample of rows: each row is kept when a hash of (seed, its partition, its
    position) falls under ``fraction`` -- the same rows whatever node runs a partition."""

    fraction: float
    seed: int

    def apply(self, lf: pl.LazyFrame, at: tuple[Any, Any] | None = None) -> pl.LazyFrame:
        unit = at[1] if at is not None else None
        part = unit.partition if unit is not None else ""
        salt = int.from_bytes(hashlib.blake2b(f"{self.seed}/{part}".encode(),
                                              digest_size=8).digest(), "little") >> 1
        threshold = int(self.fraction * 2**63)
        h = pl.int_range(pl.len(), dtype=pl.UInt64).hash(salt) // 2
        return lf.filter(h < threshold)

    def describe(self) -> str:
        return f"sample {self.fraction:.4g} of the rows (seed {self.seed})"

    def per_partition(self) -> bool:
        return True   # rows are drawn by (partition, position in it)

    def local(self, keys: frozenset[str]) -> bool:
        return True


@dataclass(frozen=True)
class Combine(Op):
    """SQL's set operations with a second query's rows (``right``: a query, or its frame
    once run), columns matched by position and named as this query's: ``all`` (UNION ALL),
    ``union`` (distinct rows of both), ``intersect`` (distinct rows in both), ``except``
    (distinct rows not in ``right``); NULLs and NaNs compare equal.  ``types``: the columns'
    common types.  Runs on the driver."""

    right: Any
    how: str
    types: tuple[tuple[str, Any], ...]

    def apply(self, lf: pl.LazyFrame, at: tuple[Any, Any] | None = None) -> pl.LazyFrame:
        right = self.right.lazy() if isinstance(self.right, pl.DataFrame) else \
            pl.LazyFrame(schema=self.right.schema)
        names = [n for n, _ in self.types]
        left = lf.select([pl.col(n).cast(t) for n, t in self.types])
        right = right.select([pl.col(c).cast(t).alias(n) for c, (n, t) in
                              zip(right.collect_schema().names(), self.types)])
        if self.how == "all":
            return pl.concat([left, right], how="vertical")
        if self.how == "union":
            return pl.concat([left, right], how="vertical").unique(maintain_order=True)
        how: Any = "semi" if self.how == "intersect" else "anti"
        return left.unique(maintain_order=True).join(right, on=names, how=how,
                                                     nulls_equal=True)

    def describe(self) -> str:
        return {"all": "union all", "union": "union", "intersect": "intersect",
                "except": "except"}[self.how] + " with a second query (on the driver)"

    def projects(self) -> bool:
        return True

    def reads(self) -> set[str] | None:
        return {n for n, _ in self.types}
