"""What every rule of the SQL compiler shares: the names a query can see (:class:`Scope`) and
the compiler's interface the rules call back into (:class:`Env`).

The rules (``select``, ``expressions``, ``functions``, ``windows``, ``joins``, ``pivot``,
``setops``, ``subqueries``) import this module and never each other upward: a rule that
needs another statement compiled (a subquery, a CTE, the right side of a join) asks the
:class:`Env` it was given, which :mod:`hfq.engine.sql.select` implements.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import polars as pl
from sqlglot import exp

from hfq.engine.query import Query
from hfq.engine.sql.errors import error

__all__ = ["USING", "Catalog", "Compiles", "Env", "Scope"]

USING = "__using "
"""The prefix of the right side's copy of a ``JOIN ... USING`` key."""

Catalog = Callable[..., Query]
"""``catalog(name, version=None, as_of=None)``: a query over that table (at that committed
version, or as of that instant, when given); raises :class:`~hfq.errors.QueryError` for an
unknown table or version."""


@dataclass
class Scope:
    """Names visible in a query: column name -> frame column, per qualifier (table alias)."""

    query: Query
    qualifiers: dict[str, dict[str, str]] = field(default_factory=dict)
    using: dict[str, str] = field(default_factory=dict)
    """The keys of ``JOIN ... USING (k)``: the unqualified name -> the left side's column
    (the right side's copy stays under its qualifier, out of ``*``)."""

    def columns(self) -> list[str]:
        """The columns ``*`` stands for (hidden ``__`` columns left out)."""
        return [c for c in self.query.columns if not c.startswith("__")]

    def resolve(self, col: exp.Column) -> str:
        """The frame column a SQL column reference reads, or a named error."""
        name, qual = col.name, col.table
        if qual:
            cols = self.qualifiers.get(qual)
            if cols is None:
                raise error(col, f"unknown table or alias {qual!r} in {col.sql()}; known: "
                                 f"{', '.join(self.qualifiers) or '(none)'}")
            if name not in cols:
                raise error(col, f"unknown column {col.sql()!r}; columns of {qual}: "
                                 f"{', '.join(cols)}")
            return cols[name]
        if name in self.using:
            return self.using[name]
        hits = {cols[name] for cols in self.qualifiers.values() if name in cols}
        if not self.qualifiers and name in self.query.columns:
            return name
        if len(hits) > 1:
            raise error(col, f"column {name!r} is ambiguous; qualify it "
                             f"({', '.join(q for q, c in self.qualifiers.items() if name in c)})")
        if not hits:
            raise error(col, f"unknown column {name!r}; columns: {', '.join(self.columns())}")
        return hits.pop()

    def knows(self, col: exp.Column) -> bool:
        """Whether ``col`` names a column of this scope (no error when not)."""
        name, qual = col.name, col.table
        if qual:
            return name in self.qualifiers.get(qual, {})
        if not self.qualifiers:
            return name in self.query.columns
        return name in self.using or any(name in cols for cols in self.qualifiers.values())

    def star(self) -> list[tuple[str, str | None]]:
        """What ``*`` stands for: (name, qualifier) of each column, side by side over a
        join (the right side's copies of ``USING`` keys left out)."""
        if not self.qualifiers:
            return [(c, None) for c in self.columns()]
        out = [(c, q) for q, cols in self.qualifiers.items() for c, frame in cols.items()
               if not frame.startswith("__")]   # (USING copies, rowid)
        seen = Counter(c for c, _ in out)   # qualified only where a name is on both sides
        return [(c, q if seen[c] > 1 else None) for c, q in out]


class Env(Protocol):
    """The compiler as the rules see it."""

    catalog: Catalog
    ctes: dict[str, Query]

    def select(self, node: exp.Expression) -> Query:
        """The query of a SELECT (or set operation, or parenthesised query) node."""

    def source(self, node: exp.Expression) -> Scope:
        """The scope of one item of FROM (a table, a subquery, a pivot)."""

    def expr(self, node: exp.Expression, scope: Scope) -> pl.Expr:
        """A row-level expression over ``scope``."""

    def condition(self, node: exp.Expression, scope: Scope, where: str) -> pl.Expr:
        """A row-level condition over ``scope`` (as a WHERE reads it: NULL unknown, integers
        ``<> 0``, other types refused naming ``where``)."""

    def subquery_values(self, node: exp.Expression) -> list[Any]:
        """The values of a one-column subquery, run now."""

    def in_subquery(self, c: Compiles, value: pl.Expr, node: exp.In) -> pl.Expr:
        """``value IN (subquery)`` over ``c``'s rows (three-valued)."""

    def scalar_subquery(self, c: Compiles, node: exp.Subquery) -> pl.Expr:
        """A subquery giving one value per row of ``c``'s scope."""

    def exists(self, c: Compiles, node: exp.Exists) -> pl.Expr:
        """``EXISTS (subquery)`` over ``c``'s rows."""


class Compiles(Protocol):
    """An expression compiler as the function, window and subquery rules see it."""

    scope: Scope
    env: Env
    guards: list[pl.Expr]

    def expr(self, node: exp.Expression) -> pl.Expr:
        """``node`` compiled over :attr:`scope`."""

    def fail(self, value: pl.Expr, bad: pl.Expr, node: exp.Expression, what: str) -> pl.Expr:
        """``value``, failing the query with ``what`` where ``bad`` holds."""

    def condition(self, e: pl.Expr, node: exp.Expression, where: str) -> pl.Expr:
        """``e`` as a boolean condition, or a named error."""

    def predicate(self, node: exp.Expression, where: str,
                  shown: exp.Expression | None = None) -> pl.Expr:
        """A filtering condition, its AND/OR short-circuited (errors raised only for rows
        that reach each side)."""

    def under(self, guard: pl.Expr | None, node: exp.Expression) -> pl.Expr:
        """``node`` compiled as evaluated only on the rows where ``guard`` holds."""

    def exprs(self, nodes: list[exp.Expression]) -> list[pl.Expr]:
        """Each of ``nodes`` compiled."""

    def dtype(self, e: pl.Expr) -> pl.DataType:
        """The type ``e`` has over :attr:`scope` (Null when it cannot be told)."""

    def coerce(self, left: pl.Expr, right: pl.Expr, node: Any) -> tuple[pl.Expr, pl.Expr]:
        """Both sides of a comparison in one type family, or a named error."""
