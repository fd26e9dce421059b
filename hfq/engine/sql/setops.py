"""``UNION [ALL]``, ``INTERSECT``, ``EXCEPT`` (with ORDER BY / LIMIT over the result): the
left query's plan with a :class:`~hfq.engine.reshape.Combine` step; columns are matched by
position, named as the left's, and take a type both sides convert to exactly."""

from __future__ import annotations

import polars as pl
from sqlglot import exp

from hfq.engine.query import Query
from hfq.engine.reshape import Combine
from hfq.engine.sql.errors import at, error, unsupported
from hfq.engine.sql.scope import Env

__all__ = ["compile_setop", "common_type"]


def common_type(a: pl.DataType, b: pl.DataType) -> pl.DataType | None:
    """The type two columns meet in (None: they do not)."""
    if a == b:
        return a
    text = (pl.String, pl.Categorical, pl.Enum)
    if isinstance(a, text) or a == pl.String:
        return pl.String() if isinstance(b, text) or b == pl.String or b == pl.Null else None
    if isinstance(a, pl.Null):
        return b
    if isinstance(b, pl.Null):
        return a
    if a.is_integer() and b.is_integer():
        return pl.Int64()
    if a.is_numeric() and b.is_numeric():
        if isinstance(a, pl.Decimal) and isinstance(b, pl.Decimal):
            return pl.Decimal(38, max(a.scale or 0, b.scale or 0))
        return pl.Float64()
    if isinstance(a, pl.Datetime) and isinstance(b, pl.Datetime):
        return pl.Datetime("us", a.time_zone or b.time_zone)
    if {type(a), type(b)} == {pl.Date, pl.Datetime}:
        return a if isinstance(a, pl.Datetime) else b
    return None


def compile_setop(c: Env, node: exp.SetOperation) -> Query:
    """``left <op> right`` as one query."""
    distinct = node.args.get("distinct")
    kind = {exp.Union: "union", exp.Intersect: "intersect", exp.Except: "except"}[type(node)]
    if kind != "union" and not distinct:
        raise unsupported(node, f"{kind.upper()} ALL")
    if node.args.get("by_name"):
        raise unsupported(node, f"{kind.upper()} BY NAME")
    how = "all" if kind == "union" and not distinct else kind
    left, right = c.select(node.this), c.select(node.expression)
    if len(left.columns) != len(right.columns):
        raise error(node, f"{kind.upper()}: the left query has {len(left.columns)} columns, "
                          f"the right {len(right.columns)}")
    types = []
    for (name, lt), (rname, rt) in zip(left.schema.items(), right.schema.items()):
        t = common_type(lt, rt)
        if t is None:
            raise error(node, f"{kind.upper()}: column {name!r} is {lt}, the right query's "
                              f"{rname!r} is {rt}")
        types.append((name, t))
    with at(node):
        return left._then(Combine(right, how, tuple(types)))
