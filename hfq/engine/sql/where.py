"""One SQL condition on its own -- a row filter such as ``hfq scan --where "bid > 0 AND ofr >
bid"`` -- compiled to one polars expression over a table's columns.

The same parser (sqlglot, dialect ``duckdb``), allow-list (:func:`~hfq.engine.sql.check.check`),
rules and errors as the ``WHERE`` of a statement (:mod:`hfq.engine.sql.expressions`), so a
filter means what it would mean in ``SELECT * FROM t WHERE <filter>``, DuckDB's semantics
included; what only a statement can have -- a subquery, an aggregate, a window function -- is
refused.  The text is parsed, never evaluated.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import polars as pl
import sqlglot
from sqlglot import exp

from hfq.engine.query import FrameSource, Query
from hfq.engine.sql.check import check
from hfq.engine.sql.errors import at, error
from hfq.engine.sql.expressions import Plain
from hfq.engine.sql.scope import Scope
from hfq.engine.sql.select import Compiler
from hfq.engine.sql.syntax import is_agg
from hfq.errors import QueryError, SqlError

__all__ = ["compile_where"]

_STATEMENT_ONLY: dict[type[exp.Expression], str] = {
    exp.Subquery: "a subquery", exp.Select: "a subquery", exp.Exists: "EXISTS (a subquery)",
    exp.Window: "a window function (OVER ...)", exp.Star: "*",
}
"""What a statement may hold but a row filter may not (each row is decided alone)."""


def compile_where(text: str, schema: Mapping[str, pl.DataType] | pl.Schema) -> pl.Expr:
    """The polars expression of the SQL condition ``text`` over columns ``schema`` (name ->
    polars type, e.g. a DataFrame's ``schema``): true for the rows to keep.

    Any SQL a statement's ``WHERE`` takes -- comparisons, ``AND``/``OR``/``NOT``,
    arithmetic, ``IN (...)``, ``BETWEEN``, ``LIKE``, ``IS [NOT] NULL``, ``CASE``, casts and
    functions -- with DuckDB's semantics (``time >= '09:30'`` reads the string as a time of
    day).  A syntax error, an unknown column, a type error or a construct only a statement
    can have raises :class:`~hfq.errors.SqlError` with its line and column in ``text``.

    Examples
    --------
    >>> import polars as pl
    >>> frame = pl.DataFrame({"symbol": ["IBM", "MSFT", "C"], "bid": [10.0, None, 3.5]})
    >>> frame.filter(compile_where("symbol IN ('IBM', 'C') AND bid > 5", frame.schema))
    shape: (1, 2)
    ┌────────┬──────┐
    │ symbol ┆ bid  │
    │ ---    ┆ ---  │
    │ str    ┆ f64  │
    ╞════════╪══════╡
    │ IBM    ┆ 10.0 │
    └────────┴──────┘
    >>> compile_where("bid > 0 AND px < 3", frame.schema)
    Traceback (most recent call last):
    ...
    hfq.errors.SqlError: unknown column 'px'; columns: symbol, bid (line 1, column 13)
    >>> compile_where("__import__('os')", frame.schema)
    Traceback (most recent call last):
    ...
    hfq.errors.SqlError: unsupported SQL: function __import__() (line 1, column 1)
    """
    try:
        tree = _parse(text)
        check(tree)
        for node in tree.walk():
            if not isinstance(node, exp.Expression):
                continue
            what = _STATEMENT_ONLY.get(type(node)) or ("an aggregate" if is_agg(node) else None)
            if what is not None:
                raise error(node, f"{what} is not allowed in a row filter")
        frame = pl.DataFrame(schema=pl.Schema(schema))
        compiler = Plain(Scope(Query(FrameSource(frame, name="(filter)")), {}),
                         Compiler(_no_table, {}))
        with at(tree):
            return compiler.predicate(tree, "a row filter")
    except RecursionError:   # parser and rules recurse once per level of nesting
        raise SqlError("the filter nests too deeply to compile (a few dozen levels of "
                       "parentheses, a few hundred operators in a row at most)") from None


def _parse(text: str) -> exp.Expression:
    """``text`` as one SQL condition (nothing after it), or a syntax error with its place."""
    if not text.strip():
        raise SqlError("SQL syntax error: the filter is empty")
    try:
        tree = cast(exp.Expression, sqlglot.parse_one(text, read="duckdb", into=exp.Condition))
    except sqlglot.errors.ParseError as exc:
        err = exc.errors[0] if exc.errors else {}
        raise SqlError(f"SQL syntax error: {err.get('description', exc)}",
                       line=err.get("line"), column=err.get("col")) from None
    except sqlglot.errors.TokenError as exc:
        raise SqlError(f"SQL syntax error: {exc}") from None
    return tree


def _no_table(name: str, **_: Any) -> Query:
    raise QueryError(f"a row filter reads no table ({name!r})")
