"""Row-level expressions: literals, columns, operators, comparisons, CASE, CAST, IN, LIKE.

:class:`Plain` compiles one sqlglot node over a :class:`~hfq.engine.sql.scope.Scope` into a
polars expression; functions, windows and subqueries go to their own rules.  Integers are
widened to 64 bits before any arithmetic (as DuckDB's results are BIGINT), ``/`` gives a
double, ``//`` and ``%`` truncate toward zero.
"""

from __future__ import annotations

import re
from typing import Any

import polars as pl
from sqlglot import exp

from hfq.engine.exprs import empty_lazy
from hfq.engine.sql import functions, windows
from hfq.engine.sql.errors import error, unsupported
from hfq.engine.sql.literals import CAST_TYPES, TEMPORAL_TYPES, kind, parse_literal, parse_temporal
from hfq.engine.sql.scope import Env, Scope
from hfq.engine.sql.syntax import is_agg

__all__ = ["Plain", "like_categorical"]


class Plain:
    """Row-level expressions over a scope (no aggregates)."""

    aggregated = False

    def __init__(self, scope: Scope, env: Env) -> None:
        self.scope = scope
        self.env = env

    # subclasses override how columns and aggregates are read
    def column(self, node: exp.Column) -> pl.Expr:
        name = self.scope.resolve(node)
        dtype = self.scope.query.schema[name]
        col = pl.col(name)
        if dtype.is_integer() and dtype != pl.Int64:
            col = col.cast(pl.Int64)   # arithmetic never wraps
        return col

    def aggregate(self, node: exp.Expression) -> pl.Expr:
        raise error(node, f"aggregate {node.sql('duckdb')} is not allowed here")

    def dtype(self, e: pl.Expr) -> pl.DataType:
        try:
            return empty_lazy(self.scope.query.schema).select(
                e.alias("_")).collect_schema()["_"]
        except pl.exceptions.PolarsError:
            return pl.Null()

    def expr(self, node: exp.Expression) -> pl.Expr:
        if is_agg(node):
            return self.aggregate(node)
        method = getattr(self, f"_{type(node).__name__}", None)
        if method is not None:
            return method(node)
        rule = functions.BY_CLASS.get(type(node))
        if rule is not None:
            return rule(self, node)
        if isinstance(node, exp.Func):
            return functions.call(self, node)
        raise unsupported(node)

    def exprs(self, nodes: list[exp.Expression]) -> list[pl.Expr]:
        return [self.expr(n) for n in nodes]

    # leaves
    def _Column(self, node: exp.Column) -> pl.Expr:
        if isinstance(node.this, exp.Star):
            raise error(node, "* is only allowed in the select list and count(*)")
        return self.column(node)

    def _Literal(self, node: exp.Literal) -> pl.Expr:
        if node.is_string:
            return pl.lit(node.this, dtype=pl.String)
        text = node.this
        if re.fullmatch(r"\d+", text):
            return pl.lit(int(text), dtype=pl.Int64)
        return pl.lit(float(text), dtype=pl.Float64)

    def _Boolean(self, node: exp.Boolean) -> pl.Expr:
        return pl.lit(bool(node.this), dtype=pl.Boolean)

    def _Null(self, node: exp.Null) -> pl.Expr:
        return pl.lit(None)

    def _Paren(self, node: exp.Paren) -> pl.Expr:
        return self.expr(node.this)

    def _Alias(self, node: exp.Alias) -> pl.Expr:
        return self.expr(node.this)

    def _Neg(self, node: exp.Neg) -> pl.Expr:
        return -self.expr(node.this)

    def _Not(self, node: exp.Not) -> pl.Expr:
        return ~self.expr(node.this)

    def _Star(self, node: exp.Star) -> pl.Expr:
        raise error(node, "* is only allowed in the select list and count(*)")

    # arithmetic and comparisons
    def _binary(self, node: exp.Binary) -> tuple[pl.Expr, pl.Expr]:
        left, right = self.expr(node.this), self.expr(node.expression)
        return self.coerce(left, right, node)

    def coerce(self, left: pl.Expr, right: pl.Expr, node: Any) -> tuple[pl.Expr, pl.Expr]:
        """A string literal compared with a date/time becomes that type (as in DuckDB)."""
        lt, rt = self.dtype(left), self.dtype(right)
        if lt.is_temporal() and rt == pl.String:
            return left, parse_temporal(right, lt, node)
        if rt.is_temporal() and lt == pl.String:
            return parse_temporal(left, rt, node), right
        if kind(lt) and kind(rt) and kind(lt) != kind(rt):
            sides = node.this, node.expression
            raise error(node, f"type mismatch in {node.sql('duckdb')!r}: "
                              f"{sides[0].sql('duckdb')} is {kind(lt)}, "
                              f"{sides[1].sql('duckdb')} is {kind(rt)}")
        return left, right

    def _Add(self, node: exp.Add) -> pl.Expr:
        left, right = self._binary(node)
        return left + right

    def _Sub(self, node: exp.Sub) -> pl.Expr:
        left, right = self._binary(node)
        return left - right

    def _Mul(self, node: exp.Mul) -> pl.Expr:
        left, right = self._binary(node)
        return left * right

    def _Div(self, node: exp.Div) -> pl.Expr:
        left, right = self._binary(node)
        return left.cast(pl.Float64) / right.cast(pl.Float64)

    def _IntDiv(self, node: exp.IntDiv) -> pl.Expr:
        """Division rounding toward zero, as DuckDB's ``//`` (polars' floors)."""
        left, right = self._binary(node)
        off = ((left % right) != 0) & ((left < 0) != (right < 0))
        return pl.when(off).then(left // right + 1).otherwise(left // right)

    def _Mod(self, node: exp.Mod) -> pl.Expr:
        """The remainder with the dividend's sign, as DuckDB's ``%`` (polars' has the
        divisor's)."""
        left, right = self._binary(node)
        rem = left % right
        return pl.when((rem != 0) & ((left < 0) != (right < 0))).then(rem - right) \
            .otherwise(rem)

    def _DPipe(self, node: exp.DPipe) -> pl.Expr:
        left, right = self._binary(node)
        return pl.concat_str([left.cast(pl.String), right.cast(pl.String)])

    def _EQ(self, node: exp.EQ) -> pl.Expr:
        left, right = self._binary(node)
        return left == right

    def _NEQ(self, node: exp.NEQ) -> pl.Expr:
        left, right = self._binary(node)
        return left != right

    def _GT(self, node: exp.GT) -> pl.Expr:
        left, right = self._binary(node)
        return left > right

    def _GTE(self, node: exp.GTE) -> pl.Expr:
        left, right = self._binary(node)
        return left >= right

    def _LT(self, node: exp.LT) -> pl.Expr:
        left, right = self._binary(node)
        return left < right

    def _LTE(self, node: exp.LTE) -> pl.Expr:
        left, right = self._binary(node)
        return left <= right

    def _And(self, node: exp.And) -> pl.Expr:
        return self.expr(node.this) & self.expr(node.expression)

    def _Or(self, node: exp.Or) -> pl.Expr:
        return self.expr(node.this) | self.expr(node.expression)

    def _Is(self, node: exp.Is) -> pl.Expr:
        if isinstance(node.expression, exp.Null):
            return self.expr(node.this).is_null()
        raise unsupported(node, "IS other than IS [NOT] NULL")

    def _Between(self, node: exp.Between) -> pl.Expr:
        value = self.expr(node.this)
        value, lo = self.coerce(value, self.expr(node.args["low"]), node)
        value, hi = self.coerce(value, self.expr(node.args["high"]), node)
        return (value >= lo) & (value <= hi)

    def _In(self, node: exp.In) -> pl.Expr:
        value = self.expr(node.this)
        if node.args.get("query") is not None:
            values = self.env.subquery_values(node.args["query"].this)
            return value.is_in(pl.Series(values, strict=False).drop_nulls().implode())
        if node.args.get("unnest") or node.args.get("field"):
            raise unsupported(node, "IN UNNEST")
        if node.expressions and all(isinstance(e, exp.Literal) for e in node.expressions):
            lits = [pl.select(self.coerce(value, self.expr(e), node)[1]).item()
                    for e in node.expressions]
            kinds = {type(v) for v in lits}
            if len(kinds) == 1:   # one type of literal: a set test (and pruning by symbol)
                return value.is_in(pl.Series(lits).implode())
        items = [self.expr(e) for e in node.expressions]
        out = None
        for item in items:
            _, item = self.coerce(value, item, node)
            test = value == item
            out = test if out is None else out | test
        return out if out is not None else pl.lit(False)

    def _Like(self, node: exp.Like) -> pl.Expr:
        return self._like(node, case=True)

    def _ILike(self, node: exp.ILike) -> pl.Expr:
        return self._like(node, case=False)

    def _like(self, node: exp.Expression, *, case: bool) -> pl.Expr:
        pattern = node.expression
        if not (isinstance(pattern, exp.Literal) and pattern.is_string):
            raise error(pattern, "LIKE takes a string literal pattern")
        if node.args.get("escape") is not None:
            raise unsupported(node, "LIKE ... ESCAPE")
        regex = "^" + "".join(".*" if ch == "%" else "." if ch == "_" else re.escape(ch)
                              for ch in pattern.this) + "$"
        regex = ("(?is)" if not case else "(?s)") + regex
        value = self.expr(node.this)
        test = like_categorical(value, pattern.this) if case and isinstance(
            self.dtype(value), (pl.Categorical, pl.Enum)) else None
        if test is None:
            test = value.cast(pl.String).str.contains(regex)
        return ~test if node.args.get("negate") else test   # NOT LIKE parses as negate

    def _Case(self, node: exp.Case) -> pl.Expr:
        subject = self.expr(node.this) if node.this is not None else None
        chain: Any = None
        for branch in node.args.get("ifs") or []:
            cond = self.expr(branch.this)
            if subject is not None:
                left, right = self.coerce(subject, cond, branch)
                cond = left == right
            value = self.expr(branch.args["true"])
            chain = pl.when(cond).then(value) if chain is None else \
                chain.when(cond).then(value)
        default = node.args.get("default")
        if chain is None:
            return self.expr(default) if default is not None else pl.lit(None)
        return chain.otherwise(self.expr(default) if default is not None else pl.lit(None))

    def _Cast(self, node: exp.Cast) -> pl.Expr:
        to = node.to.this
        inner = node.this
        target = CAST_TYPES.get(to)
        if target is None:
            raise unsupported(node, f"CAST to {node.to.sql('duckdb')}")
        if isinstance(inner, exp.Literal) and inner.is_string and to in TEMPORAL_TYPES:
            return pl.lit(parse_literal(inner.this, target, node), dtype=target)
        value = self.expr(inner)
        if target == pl.String:
            return value.cast(pl.String)
        if target in (pl.Int64,) and self.dtype(value).is_float():
            return value.round(0).cast(pl.Int64)   # DuckDB rounds floats to integers
        return value.cast(target)

    _TryCast = _Cast

    # windows and subqueries: their own rules
    def _Window(self, node: exp.Window) -> pl.Expr:
        return windows.window_expr(self, node)

    def _Subquery(self, node: exp.Subquery) -> pl.Expr:
        values = self.env.subquery_values(node.this)
        if len(values) > 1:
            raise error(node, "a scalar subquery returned more than one row")
        return pl.lit(values[0] if values else None)


def like_categorical(value: pl.Expr, pattern: str) -> pl.Expr | None:
    """``value LIKE pattern`` (case-sensitive) on a categorical column, tested on its
    distinct values (polars' ``cat`` functions) rather than on each row's text: for
    patterns ``a``, ``a%``, ``%b``, ``a%b`` (``%`` any run, ``a``/``b`` without ``_``).  A row
    matches when it starts with ``a``, ends with ``b`` and has at least their bytes (so they
    do not overlap); null stays null.  None for other patterns."""
    parts = pattern.split("%")
    if "_" in pattern or any(parts[1:-1]):
        return None
    head, tail = parts[0], parts[-1] if len(parts) > 1 else ""
    size = len(head.encode()) + len(tail.encode())
    width = value.cat.len_bytes()
    out = width == size if len(parts) == 1 else width >= size
    if head:
        out = value.cat.starts_with(head) & out
    if tail:
        out = value.cat.ends_with(tail) & out
    return out
