"""The outer ``WHERE`` conjuncts DuckDB pushes below a CTE's / FROM subquery's projection
(F104, refining F93).

A CTE's or FROM subquery's row-wise items that can raise are evaluated on all its rows
(F93: :func:`~hfq.engine.exprs.every_row`), as DuckDB's plan keeps the outer filter above the
projection -- for a filter that can throw.  DuckDB 2.0.1's optimizer pushes a filter that
cannot throw below the projection (into the scan when it reads one column): the items are
then evaluated only on the rows it keeps, and DuckDB answers where the dropped rows would
raise (``WITH s AS (SELECT id, CAST(d0 AS BIGINT) AS c FROM t) SELECT c FROM s WHERE id = 3``
answers with a -inf d0 on id 1; ``... WHERE id > id + 1`` raises: ``id + 1`` can overflow).

hfq pushes the conjuncts it can tell DuckDB pushes -- comparisons, ``IS [NOT] NULL``,
``IN (...)`` of constants, ``BETWEEN``, ``IS [NOT] DISTINCT FROM``, ``[NOT] [I]LIKE`` a
string, ``NOT``/``AND``/``OR``
of them, over columns the derived query passes through unchanged, against constants or each
other, where no side needs a cast that can fail -- below the projection (a ``date =`` /
``symbol =`` filter then prunes partitions again), and the rest after every row's items.  A
shape DuckDB may push but hfq cannot tell (a function or arithmetic of a column, a computed
item, a join around the derived query) keeps F93's order: hfq raises as unoptimized DuckDB
does (the fuzzer's ``plan_error``), never answers where DuckDB raises.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass

import polars as pl
from sqlglot import exp

from hfq.engine.query import Query
from hfq.engine.sql.scope import Scope

__all__ = ["Pushdown", "conjuncts", "constant", "pushable", "register", "registered"]


@dataclass
class Pushdown:
    """How a derived query's answer is made from its rows (FROM and its own WHERE)."""

    rows: Query
    project: Callable[[Query], Query]
    """its select list over ``rows`` (or ``rows`` filtered first)"""
    through: dict[str, str]
    """an item passing a column of ``rows`` through unchanged: its name -> that column"""


_MADE: weakref.WeakKeyDictionary[Query, Pushdown] = weakref.WeakKeyDictionary()


def register(answer: Query, pushdown: Pushdown) -> None:
    """Remember how ``answer`` (a derived query's) was made from its rows."""
    _MADE[answer] = pushdown


def registered(answer: Query) -> Pushdown | None:
    """How ``answer`` was made, when it is a derived query's plain projection."""
    return _MADE.get(answer)


def conjuncts(node: exp.Expression) -> list[exp.Expression]:
    """The top-level ``AND`` operands of a condition (parentheses looked through)."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.And):
        return conjuncts(node.this) + conjuncts(node.expression)
    return [node]


_COMPARE = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.NullSafeEQ,
            exp.NullSafeNEQ)
_NUMERIC = "numeric"


def pushable(node: exp.Expression, scope: Scope, pushdown: Pushdown) -> bool:
    """Does DuckDB push the conjunct ``node`` of a WHERE over ``scope`` (a derived query
    made as ``pushdown`` says) below the derived query's projection?  True only for shapes
    verified against DuckDB 2.0.1 (module docstring); False when unsure.  A constant
    conjunct (:func:`constant`) is pushed only when it cannot raise (the caller checks: DuckDB
    folds it, then drops the rows or the filter)."""
    if constant(node):
        return True
    def family(e: exp.Expression) -> str | None:
        """The column's or constant's type family (None: not a leaf hfq can tell)."""
        while isinstance(e, exp.Paren):
            e = e.this
        if isinstance(e, exp.Column):
            if not scope.knows(e):
                return None
            name = scope.resolve(e)
            if name not in pushdown.through:
                return None   # a computed item (or not one of the derived query's)
            dtype = pushdown.rows.schema.get(pushdown.through[name])
            if dtype is None:
                return None
            if dtype.is_integer() or dtype.is_float():
                return _NUMERIC
            if dtype in (pl.String, pl.Categorical) or isinstance(dtype, pl.Enum):
                return "text"
            if dtype == pl.Date:
                return "date"
            if isinstance(dtype, pl.Datetime) and dtype.time_zone is None:
                return "timestamp"
            if dtype == pl.Boolean:
                return "boolean"
            return None
        if isinstance(e, exp.Neg):
            return "number" if family(e.this) == "number" else None
        if isinstance(e, exp.Literal):
            return "string" if e.is_string else "number"
        if isinstance(e, exp.Null):
            return "null"
        if isinstance(e, exp.Boolean):
            return "bool"
        if isinstance(e, exp.Cast) and isinstance(e.this, exp.Literal) and e.this.is_string:
            if e.to.is_type(exp.DataType.Type.DATE):
                return "date literal"
            if e.to.is_type(exp.DataType.Type.TIMESTAMP, exp.DataType.Type.TIMESTAMPNTZ,
                            exp.DataType.Type.DATETIME):
                return "timestamp literal"
        return None

    def comparable(a: str | None, b: str | None) -> bool:
        """No side of a comparison of ``a`` and ``b`` needs a cast that can fail."""
        if a is None or b is None:
            return False
        if "null" in (a, b):
            return True
        pair = {a, b}
        if a == b:
            return a in (_NUMERIC, "text", "date", "timestamp", "boolean")
        return pair in ({_NUMERIC, "number"}, {"text", "string"}, {"date", "string"},
                        {"date", "date literal"}, {"date", "timestamp literal"},
                        {"timestamp", "string"}, {"timestamp", "timestamp literal"},
                        {"timestamp", "date literal"}, {"boolean", "bool"})

    def column_side(a: str | None, b: str | None) -> bool:
        return comparable(a, b) and (a in _COLUMNS or b in _COLUMNS)

    def ok(e: exp.Expression) -> bool:
        while isinstance(e, exp.Paren):
            e = e.this
        if isinstance(e, (exp.And, exp.Or)):
            return ok(e.this) and ok(e.expression)
        if isinstance(e, exp.Not):
            return ok(e.this)
        if isinstance(e, _COMPARE):
            return column_side(family(e.this), family(e.expression))
        if isinstance(e, exp.Is):   # IS NULL (IS NOT NULL: Not(Is))
            return isinstance(e.expression, exp.Null) and family(e.this) in _COLUMNS
        if isinstance(e, exp.In):
            if e.args.get("query") is not None or e.args.get("unnest") is not None or \
                    e.args.get("field") is not None:
                return False
            col = family(e.this)
            return col in _COLUMNS and bool(e.expressions) and \
                all(comparable(col, family(v)) for v in e.expressions)
        if isinstance(e, exp.Between):
            col = family(e.this)
            return col in _COLUMNS and comparable(col, family(e.args["low"])) and \
                comparable(col, family(e.args["high"]))
        if isinstance(e, (exp.Like, exp.ILike)):   # [NOT] [I]LIKE '...' (no ESCAPE: can throw)
            return e.args.get("escape") is None and family(e.this) == "text" and \
                family(e.expression) == "string"
        if isinstance(e, exp.Boolean):
            return True
        return False

    return ok(node)


def constant(node: exp.Expression) -> bool:
    """Is ``node`` a constant DuckDB folds (no column, subquery, parameter, or random
    function)?"""
    if any(isinstance(n, (exp.Column, exp.Subquery, exp.Select, exp.Exists, exp.Placeholder,
                          exp.Parameter, exp.Star, exp.Rand, exp.Window))
           for n in node.walk()):
        return False
    names = {n.name.lower() for n in node.find_all(exp.Anonymous)} | \
        {n.sql_name().lower() for n in node.find_all(exp.Func)}
    return not any("rand" in n or "uuid" in n or "nextval" in n for n in names)


_COLUMNS = (_NUMERIC, "text", "date", "timestamp", "boolean")
"""The families of a column (the others are constants')."""
