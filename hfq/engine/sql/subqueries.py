"""Subqueries in expressions: ``x [NOT] IN (SELECT ...)``, ``[NOT] EXISTS (SELECT ...)`` and
scalar subqueries, uncorrelated or correlated by equalities.

A subquery is run once, when the statement is compiled (its answer is small: a set of values,
one value, or one row per correlation key).  A correlated one -- whose WHERE compares columns
of its own tables with columns of the outer query, ``q.sym = t.sym`` -- is decorrelated: the
equalities leave its WHERE, its own sides become keys of its answer (grouped by them for a
scalar aggregate), and each outer row looks its keys up.  SQL's three-valued logic is kept:
``x IN S`` is TRUE when found, NULL when not found and ``x`` or some value of ``S`` is NULL,
FALSE otherwise (FALSE too when ``S`` is empty, even for a NULL ``x``); ``EXISTS`` is never
NULL.  Other correlations are refused by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl
from sqlglot import exp

from hfq.engine.query import Query
from hfq.engine.sql.errors import error, unsupported
from hfq.engine.sql.literals import comparable
from hfq.engine.sql.scope import Compiles
from hfq.engine.sql.syntax import conjuncts, has_agg

__all__ = ["Correlation", "correlation", "exists", "in_subquery", "scalar_subquery"]

_CORRELATED = ("correlated subquery: only EXISTS, IN and scalar subqueries whose WHERE "
               "compares the outer query's columns by equality (AND-ed with the rest)")


@dataclass
class Correlation:
    """A subquery split into its uncorrelated body and the equalities to the outer query."""

    select: exp.Select
    inner: list[exp.Expression]   # the subquery's side of each equality
    outer: list[exp.Expression]   # the outer query's side


def _aliases(select: exp.Select) -> set[str]:
    names = set()
    from_ = select.args.get("from_")
    items = ([from_.this] if from_ is not None else []) + \
        [j.this for j in select.args.get("joins") or []]
    for item in items:
        names.add(item.alias_or_name)
    return names


def _outer_columns(node: exp.Expression, inner: set[str], c: Compiles) -> list[exp.Column]:
    return [col for col in node.find_all(exp.Column)
            if col.table and col.table not in inner and col.table in c.scope.qualifiers]


def correlation(select: exp.Expression, c: Compiles) -> Correlation | None:
    """The correlation of ``select`` with ``c``'s scope; None when uncorrelated."""
    if not isinstance(select, exp.Select):
        return None
    inner = _aliases(select)
    if not _outer_columns(select, inner, c):
        return None
    where = select.args.get("where")
    keep, inside, outside = [], [], []
    for cond in conjuncts(where.this if where is not None else None):
        refs = _outer_columns(cond, inner, c)
        if not refs:
            keep.append(cond)
            continue
        if isinstance(cond, exp.EQ):
            a, b = cond.this, cond.expression
            a_out, b_out = _outer_columns(a, inner, c), _outer_columns(b, inner, c)
            a_all = len(a_out) == len(list(a.find_all(exp.Column)))
            b_all = len(b_out) == len(list(b.find_all(exp.Column)))
            if a_all and not b_out and list(b.find_all(exp.Column)):
                outside.append(a)
                inside.append(b)
                continue
            if b_all and not a_out and list(a.find_all(exp.Column)):
                outside.append(b)
                inside.append(a)
                continue
        raise unsupported(cond, _CORRELATED)
    body = select.copy()
    body.set("where", exp.Where(this=exp.and_(*keep)) if keep else None)
    if _outer_columns(body, inner, c):
        raise unsupported(select, _CORRELATED)
    return Correlation(body, inside, outside)


def _run(c: Compiles, select: exp.Expression) -> pl.DataFrame:
    q: Query = c.env.select(select)
    return q.collect()


def _keyed(corr: Correlation, columns: list[exp.Expression], *, group: bool
           ) -> exp.Select:
    """The body selecting its keys (``__k0``...) then ``columns`` (``__v0``...)."""
    body = corr.select.copy()
    keys = [exp.alias_(k.copy(), f"__k{i}") for i, k in enumerate(corr.inner)]
    values = [exp.alias_(v.copy(), f"__v{i}") for i, v in enumerate(columns)]
    body.set("expressions", keys + values)
    if group:
        body.set("group", exp.Group(expressions=[k.copy() for k in corr.inner]))
    return body


def _key(c: Compiles, corr: Correlation, frame: pl.DataFrame) -> tuple[pl.Expr, pl.Series]:
    """The outer rows' key and the answer's keys, as comparable single values."""
    outer = [c.expr(o) for o in corr.outer]
    names = [f"__k{i}" for i in range(len(corr.inner))]
    if len(names) == 1:
        dtype = c.dtype(outer[0])
        keys = frame[names[0]]
        if _text(dtype):
            return outer[0].cast(pl.String), keys.cast(pl.String)
        return outer[0], keys
    return (pl.struct([o.alias(n) for o, n in zip(outer, names)]),
            frame.select(pl.struct(names).alias("k"))["k"])


def _one_column(q_or_select: Any, node: exp.Expression, what: str) -> None:
    exprs = getattr(q_or_select, "expressions", None)
    if exprs is not None and len(exprs) != 1 and not any(isinstance(e, exp.Star)
                                                         for e in exprs):
        raise error(node, f"a subquery in {what} must return one column, not {len(exprs)}")


def in_subquery(c: Compiles, value: pl.Expr, node: exp.In) -> pl.Expr:
    """``value IN (SELECT ...)`` (see the module)."""
    select = node.args["query"].this
    corr = correlation(select, c)
    if corr is None:
        frame = _run(c, select)
        if frame.width != 1:
            raise error(node, f"a subquery in IN must return one column, not {frame.width}")
        values = frame.to_series()
        if values.len() == 0:
            return pl.lit(False)
        value, values = comparable(value, c.dtype(value), values)
        found = value.is_in(values.drop_nulls().implode())
        if values.null_count():
            return pl.when(found).then(True).otherwise(pl.lit(None, dtype=pl.Boolean))
        return found
    _one_column(select, node, "IN")
    body = _keyed(corr, [select.expressions[0]], group=False)
    frame = _run(c, body).unique()
    key, keys = _key(c, corr, frame)
    if _text(c.dtype(value)) or _text(frame.schema["__v0"]):
        value = value.cast(pl.String)
        frame = frame.with_columns(pl.col("__v0").cast(pl.String))
    pairs = frame.filter(pl.col("__v0").is_not_null())
    pair_key = pl.struct(key.alias("k"), value.alias("v"))
    found = pair_key.is_in(pairs.select(pl.struct(k=pl.Series(
        _key(c, corr, pairs)[1]), v=pl.col("__v0")).alias("p"))["p"].implode()) \
        if pairs.height else pl.lit(False)
    with_null = frame.filter(pl.col("__v0").is_null())
    nulls = key.is_in(_key(c, corr, with_null)[1].implode()) if with_null.height \
        else pl.lit(False)
    present = key.is_in(keys.implode())
    return pl.when(~present.fill_null(False)).then(False) \
        .when(found.fill_null(False)).then(True) \
        .when(value.is_null() | nulls.fill_null(False)).then(pl.lit(None, dtype=pl.Boolean)) \
        .otherwise(False)


def _text(dtype: pl.DataType) -> bool:
    return dtype == pl.String or isinstance(dtype, (pl.Categorical, pl.Enum))


def exists(c: Compiles, node: exp.Exists) -> pl.Expr:
    """``EXISTS (SELECT ...)``: TRUE or FALSE, never NULL."""
    select = node.this
    corr = correlation(select, c)
    if corr is None:
        return pl.lit(_run(c, select).height > 0)
    if select.args.get("group") or select.args.get("having") or select.args.get("limit") or \
            has_agg_select(select):
        raise unsupported(node, _CORRELATED + " (EXISTS over an aggregate or LIMIT)")
    frame = _run(c, _keyed(corr, [], group=False)).unique()
    key, keys = _key(c, corr, frame)
    return key.is_in(keys.implode()).fill_null(False)


def has_agg_select(select: exp.Select) -> bool:
    return any(has_agg(e) for e in select.expressions)


def scalar_subquery(c: Compiles, node: exp.Subquery) -> pl.Expr:
    """A subquery as one value per row: uncorrelated (at most one row), or an aggregate
    correlated by equalities (its value for the row's keys; over no rows when there are
    none: 0 for counts, NULL otherwise)."""
    select = node.this
    corr = correlation(select, c)
    if corr is None:
        frame = _run(c, select)
        if frame.width != 1:
            raise error(node, f"a scalar subquery must return one column, not {frame.width}")
        if frame.height > 1:
            raise error(node, "a scalar subquery returned more than one row")
        return pl.lit(frame.to_series()[0] if frame.height else None,
                      dtype=frame.to_series().dtype)
    if len(select.expressions) != 1 or not has_agg_select(select) or \
            select.args.get("group") or select.args.get("having") or select.args.get("limit"):
        raise unsupported(node, _CORRELATED + " (a scalar one must be one aggregate "
                                              "without GROUP BY)")
    frame = _run(c, _keyed(corr, [select.expressions[0]], group=True))
    empty_body = corr.select.copy()
    empty_body.set("where", exp.Where(this=exp.false()))
    empty = _run(c, empty_body).to_series()   # the aggregate over no rows
    key, keys = _key(c, corr, frame)
    default = empty[0] if empty.len() else None
    if len(corr.inner) == 1:
        return key.replace_strict(keys, frame["__v0"], default=pl.lit(default,
                                                                        frame["__v0"].dtype))
    raise unsupported(node, _CORRELATED + " (a correlated scalar subquery takes one key)")
