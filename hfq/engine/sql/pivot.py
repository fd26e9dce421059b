"""``PIVOT`` (in FROM, or DuckDB's statement form) compiled to the engine's pivot: one
column per listed value (or per distinct value)."""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import polars as pl
from sqlglot import exp

from hfq.engine.exprs import empty_lazy
from hfq.engine.query import Query
from hfq.engine.reshape import Pivot
from hfq.engine.sql.aggregates import Agg
from hfq.engine.sql.errors import at, error, unsupported
from hfq.engine.sql.literals import parse_temporal
from hfq.engine.sql.scope import Env, Scope
from hfq.engine.sql.syntax import dedupe

__all__ = ["compile_pivot", "pivot_statement"]


def compile_pivot(c: Env, node: exp.Table | exp.Subquery) -> Scope:
    """``FROM t PIVOT (agg(v) FOR col IN (a, b, ...) [GROUP BY g, ...])``."""
    pivots = node.args["pivots"]
    plain = node.copy()
    plain.set("pivots", None)
    base = c.source(plain)
    if len(pivots) != 1:
        raise unsupported(pivots[1], "several PIVOTs")
    p = pivots[0]
    if p.args.get("unpivot"):
        raise unsupported(p, "UNPIVOT in SQL (use Query.unpivot)")
    fields = p.args.get("fields") or []
    if len(fields) != 1 or not isinstance(fields[0], exp.In):
        raise unsupported(p, "PIVOT with several FOR columns")
    group = p.args.get("group")
    q = _pivot(c, base, fields[0].this, list(fields[0].expressions), list(p.expressions),
               list(group.expressions) if group is not None else None, p)
    alias = node.alias_or_name
    return Scope(q, {alias: {x: x for x in q.columns}})


def pivot_statement(c: Env, node: exp.Pivot) -> Scope:
    """DuckDB's ``PIVOT t ON col [IN (...)] USING agg(v) [GROUP BY g, ...]`` (as a statement
    or in FROM); without IN, one column per distinct value of ``col``, in order."""
    if node.args.get("unpivot"):
        raise unsupported(node, "UNPIVOT in SQL (use Query.unpivot)")
    base = c.source(node.this)
    on = node.expressions
    if len(on) != 1:
        raise unsupported(node, "PIVOT ON several columns")
    values: list[exp.Expression] | None = None
    col = on[0]
    if isinstance(col, exp.In):
        col, values = col.this, list(col.expressions)
    group = node.args.get("group")
    q = _pivot(c, base, col, values, list(node.args.get("using") or []),
               list(group.expressions) if group is not None else None, node)
    return Scope(q, {})


def _pivot(c: Env, base: Scope, col: exp.Expression, value_nodes: list[exp.Expression] | None,
           aggs: list[exp.Expression], group: list[exp.Expression] | None,
           node: exp.Expression) -> Query:
    if not isinstance(col, exp.Column):
        raise error(col, "PIVOT ... ON/FOR takes a column")
    if len(aggs) != 1:
        raise unsupported(node, "PIVOT with several aggregates (or none)")
    agg = aggs[0].this if isinstance(aggs[0], exp.Alias) else aggs[0]
    on = base.resolve(col)
    dtype = base.query.schema[on]
    if value_nodes is None:
        with at(node):
            found = base.query.select(pl.col(on)).unique().sort(on, nulls_last=True).collect()
        values = [v for v in found.to_series().to_list() if v is not None]
    else:
        values = [_value(c, base, v, dtype) for v in value_nodes]
    with at(node):
        if group is not None:
            keys = [base.resolve(g) if isinstance(g, exp.Column) else _column_error(g)
                    for g in group]
            index = list(dict.fromkeys(keys))   # a repeated column is the same key
        else:
            used = {on, *(base.resolve(x) for x in agg.find_all(exp.Column))}
            index = [x for x in base.columns() if x not in used]
        # DuckDB's plan: an aggregate with a FILTER per value, grouped by the index (if any)
        agg_expr = Agg(base, c, grouped=bool(index), filtered=True).call(agg)
        # grouped by the pivoted column too (GROUP BY sym ... FOR sym): a row per value of
        # it, holding the cell of its own value; the pivot reads a copy of the column
        spread = "__on" if on in index else on
        q = base.query.group_by(*index, pl.col(on).alias(spread)).agg(agg_expr.alias("__v"))
        q = q._then(Pivot(spread, tuple(index), "__v", tuple(values), "first"))
        names = [_label(v) for v in values]
        q = q.rename({old: new for old, new in zip(q.columns[len(index):], names)
                      if old != new})
        # a combination without rows holds the aggregate of no rows (count: 0), as DuckDB
        none = empty_lazy(base.query.schema).select(agg_expr.alias("v")).collect().item()
        if none is not None and names:
            q = q.with_columns(pl.col(names).fill_null(none))
        if group is not None and len(keys) > len(index):   # DuckDB repeats it: date, date_1
            q = q.select(*(pl.col(k).alias(n) for k, n in zip(keys, dedupe(keys))), *names)
    return q


def _column_error(g: exp.Expression) -> str:
    raise error(g, "PIVOT ... GROUP BY takes columns")


def _value(c: Env, base: Scope, v: exp.Expression, dtype: pl.DataType) -> Any:
    """A value listed in IN, as a value of the pivoted column's type."""
    if v.find(exp.Column):
        raise error(v, "PIVOT ... IN takes constants")
    lit = c.expr(v, base)
    if dtype.is_temporal() and isinstance(v, exp.Literal) and v.is_string:
        lit = parse_temporal(lit, dtype, v)
    value = pl.select(lit).item()
    if isinstance(value, decimal.Decimal):
        value = int(value) if value == int(value) and dtype.is_integer() else float(value)
    if isinstance(value, dt.datetime) and isinstance(dtype, pl.Date):
        value = value.date()
    return value


def _label(value: Any) -> str:
    """A pivot column's name, as DuckDB writes the value."""
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    return str(value)
