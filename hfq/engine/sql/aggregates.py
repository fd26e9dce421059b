"""Aggregate calls over a group's rows as polars aggregations, with DuckDB's semantics; the
engine splits them into partial states on the nodes and exact merges on the driver
(:mod:`hfq.engine.aggs`).

NULL inputs are skipped (``count(x)``, ``sum``, ``avg``...; pairs with a NULL in
``covar_*``, ``corr``, ``regr_*``, ``arg_min``/``arg_max``), ``sum`` over no values is NULL,
an aggregate of a constant counts the rows (``count(1)``, ``sum(1)``), NaN is the largest
double (``max`` is NaN when one is present, ``min`` only when all are), integer sums of
BIGINT are exact in 128 bits and fail when the total leaves BIGINT, ``FILTER (WHERE ...)``
keeps the rows its condition holds for.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl
from sqlglot import exp

from hfq.engine.exprs import every_row
from hfq.engine.sql.errors import error, unsupported
from hfq.engine.sql.expressions import Plain
from hfq.engine.sql.syntax import args_of, name_of

__all__ = ["Agg", "lexical"]

_F64 = pl.Float64
_SAMPLE = {"stddev": 1, "stddev_samp": 1, "stddev_pop": 0, "variance": 1, "var_samp": 1,
           "var_pop": 0}
_REGR = ("regr_slope", "regr_intercept", "regr_r2", "regr_count", "regr_avgx", "regr_avgy",
         "regr_sxx", "regr_syy", "regr_sxy")
_NAMES = {"variance": "var_samp", "stddev": "stddev_samp", "percentile_cont": "quantile_cont",
          "percentile_disc": "quantile_disc", "max_by": "arg_max", "min_by": "arg_min",
          "wavg": "weighted_avg", "mean": "avg", "quantile": "quantile_disc",
          "variance_pop": "var_pop", "covariance_pop": "covar_pop",
          "covariance_samp": "covar_samp"}


class Agg(Plain):
    """Aggregate calls over the input rows."""

    def call(self, node: exp.Expression) -> pl.Expr:
        where: pl.Expr | None = None
        if isinstance(node, exp.Filter):   # agg(...) FILTER (WHERE cond)
            where = self.expr(node.expression.this).fill_null(False)
            node = node.this
        order: exp.Order | None = None
        if isinstance(node, exp.WithinGroup):   # percentile_cont(q) WITHIN GROUP (ORDER BY x)
            order = node.expression
            node = node.this
        if isinstance(node, exp.IgnoreNulls) and isinstance(node.this, exp.AnyValue):
            node = node.this   # any_value skips NULLs as DuckDB's does
        name = _NAMES.get(name_of(node), name_of(node))
        if isinstance(node, exp.Count):
            return self._count(node, where)
        args = args_of(node)
        if isinstance(node, exp.AnyValue):
            args = [node.this]
        if args and isinstance(args[0], exp.Distinct):
            raise unsupported(node, f"{name}(DISTINCT ...)")
        if args and isinstance(args[0], exp.Order):
            if name not in ("first", "last", "arg_max", "arg_min"):
                raise unsupported(args[0], f"ORDER BY inside {name}()")
            order = args[0]
            args = [order.this, *args[1:]]
        if order is not None and name in ("quantile_cont", "quantile_disc", "median"):
            if len(order.expressions) != 1:
                raise error(order, f"{name} WITHIN GROUP takes one ORDER BY expression")
            o = order.expressions[0]
            args = [o.this, *args]
            descending = bool(o.args.get("desc")) and len(args) == 2
            if descending and name != "quantile_disc":   # the (1 - q)-th from the bottom
                args[1] = _complement(args[1])
            order = order if descending else None   # (kept only to mark a descending order)
        if not args:
            raise error(node, f"{name}() needs an argument")
        values = [self.expr(a) for a in args]
        if all(not a.find(exp.Column) for a in args) and not isinstance(node, exp.ArgMax) \
                and not isinstance(node, exp.ArgMin):
            return self._constant(name, values[0], where, node)
        # a constant beside a column is one value per row (polars 2.1 reads past the end of
        # a filtered literal inside a grouping: F26)
        values = [v if a.find(exp.Column) else pl.repeat(v, pl.len())
                  for a, v in zip(args, values)]
        if where is not None:
            values = [v.filter(where) for v in values]
        values = [lexical(self, v) for v in values] if name in ("min", "max") else values
        x = values[0]
        build = self._RULES.get(name)
        if build is None:
            raise unsupported(node, f"aggregate {name}()")
        return build(self, name, x, values, args, order, node)

    # -- the rules -----------------------------------------------------------------------
    def _count(self, node: exp.Count, where: pl.Expr | None) -> pl.Expr:
        inner = node.this
        if inner is None or isinstance(inner, exp.Star) or \
                (not inner.find(exp.Column) and not isinstance(inner, (exp.Null,
                                                                       exp.Distinct))):
            n = where.cast(pl.Int64).sum() if where is not None else pl.len().cast(pl.Int64)
            if inner is None or isinstance(inner, exp.Star) or isinstance(inner, exp.Literal):
                return n
            # a constant expression: evaluated (its errors raised), counted when not NULL
            return pl.when(self.expr(inner).is_not_null()).then(n).otherwise(0)
        if isinstance(inner, exp.Null):
            return pl.lit(0, dtype=pl.Int64)
        if isinstance(inner, exp.Distinct):
            if len(inner.expressions) != 1:
                raise unsupported(node, "count(DISTINCT) of several columns")
            x = self.expr(inner.expressions[0])
            if not inner.expressions[0].find(exp.Column):   # a constant: one value per row
                x = pl.repeat(x, pl.len())                   # (none over no rows)
            x = x.filter(where) if where is not None else x
            return x.drop_nulls().n_unique().cast(pl.Int64)
        x = self.expr(inner)
        return (x.filter(where) if where is not None else x).count().cast(pl.Int64)

    def _constant(self, name: str, value: pl.Expr, where: pl.Expr | None,
                  node: exp.Expression) -> pl.Expr:
        """An aggregate of a constant: as if every row held it."""
        n = where.cast(pl.Int64).sum() if where is not None else pl.len().cast(pl.Int64)
        some = pl.when(n > 0)
        if name == "sum" and self.dtype(value).is_integer():
            # one value per row, summed as a column is: value * n could wrap past BIGINT
            x = pl.repeat(value.cast(pl.Int64), pl.len())
            return self._sum(name, x.filter(where) if where is not None else x, [], [], None,
                             node)
        if name == "sum":
            return pl.when(value.is_not_null() & (n > 0)).then(value * n)
        if name in ("avg", "median", "quantile_cont"):
            return some.then(value.cast(_F64))
        if name in ("min", "max", "first", "last", "any_value", "quantile_disc", "mode"):
            return some.then(value)
        if name in _SAMPLE:
            return pl.when(value.is_not_null() & (n > _SAMPLE[name])).then(pl.lit(0.0))
        raise unsupported(node, f"{name}() of a constant")

    def _sum(self, name: str, x: pl.Expr, values: list[pl.Expr], args: list[exp.Expression],
             order: exp.Order | None, node: exp.Expression) -> pl.Expr:
        dtype = self.dtype(x)
        if dtype == pl.Int64:   # exact in 128 bits, as DuckDB's HUGEINT; fails past BIGINT
            # (a DECIMAL(38, 0): 128-bit integers that Arrow carries between processes)
            total = x.cast(pl.Decimal(38, 0)).sum()
            narrow = total.cast(pl.Int64, strict=False)
            out = self.fail(narrow, narrow.is_null() & (x.count() > 0), node,
                            "integer overflow (the sum leaves BIGINT)")
            return pl.when(x.count() > 0).then(out)
        if dtype == pl.Float32:   # FLOAT summed in DOUBLE, as DuckDB's sum
            x = x.cast(_F64)
        return pl.when(x.count() > 0).then(x.sum())

    def _avg(self, name: str, x: pl.Expr, *_: object) -> pl.Expr:
        if self.dtype(x).is_integer():   # summed exactly in 128 bits (DuckDB's HUGEINT),
            n = x.count()                 # then divided: a mean in doubles loses 2^63's
            return pl.when(n > 0).then(x.cast(pl.Decimal(38, 0)).sum().cast(_F64) / n)
        # (FLOAT averaged in DOUBLE, as DuckDB's avg)
        return x.cast(_F64).mean() if self.dtype(x) != _F64 else x.mean()

    def _min(self, name: str, x: pl.Expr, *_: object) -> pl.Expr:
        return x.min()   # polars skips NaN unless every value is one: NaN is the largest

    def _max(self, name: str, x: pl.Expr, *_: object) -> pl.Expr:
        return x.nan_max() if self.dtype(x).is_float() else x.max()

    def _moment(self, name: str, x: pl.Expr, *_: object) -> pl.Expr:
        x = x.cast(_F64)
        ddof = _SAMPLE[name]
        out = x.std(ddof=ddof) if name.startswith("stddev") else x.var(ddof=ddof)
        if ddof == 0:   # one value (even NaN or inf) has no spread, as DuckDB says
            return pl.when(x.count() == 1).then(pl.lit(0.0)).otherwise(out)
        return out

    def _median(self, name: str, x: pl.Expr, *_: object) -> pl.Expr:
        return x.cast(_F64).median() if not self.dtype(x).is_float() else x.median()

    def _quantile(self, name: str, x: pl.Expr, values: list[pl.Expr],
                  args: list[exp.Expression], order: exp.Order | None,
                  node: exp.Expression) -> pl.Expr:
        if len(args) != 2 or not _is_number(args[1]):
            raise error(node, f"{name}(x, q) takes a numeric literal q")
        q = float(_number(args[1]))
        if not 0 <= q <= 1:
            raise error(args[1], f"{name}: the quantile must be between 0 and 1, not {q}")
        dtype = self.dtype(x)
        if isinstance(dtype, pl.Decimal):
            x, dtype = x.cast(_F64), pl.Float64()
        if name == "quantile_disc" and dtype.is_integer():
            # picked exactly (polars' quantile goes through doubles: 2^53 + 1 lost its 1)
            v = x.drop_nulls().sort(descending=order is not None)
            at = ((v.len().cast(_F64) * q).ceil().cast(pl.Int64) - 1).clip(lower_bound=0)
            return v.get(at, null_on_oob=True)
        if name == "quantile_disc":   # the value at ceil(q * n) - 1 in that order (SQL's)
            if order is not None:   # descending: the same from the top
                if not dtype.is_integer():
                    raise unsupported(node, f"{name} of a descending order of non-integers")
                out = -((-x).quantile(q, "equiprobable"))
            else:
                out = x.quantile(q, "equiprobable")
            return out.cast(dtype) if dtype.is_numeric() else out
        return x.cast(_F64).quantile(q, "linear")

    def _first_last(self, name: str, x: pl.Expr, values: list[pl.Expr],
                    args: list[exp.Expression], order: exp.Order | None,
                    node: exp.Expression) -> pl.Expr:
        if order is not None:
            keys = [lexical(self, self.expr(o.this)) for o in order.expressions]
            desc = [bool(o.args.get("desc")) for o in order.expressions]
            last = [not o.args.get("nulls_first") for o in order.expressions]
            x = x.sort_by(keys, descending=desc, nulls_last=last, maintain_order=True)
        # the argument's errors raised for every row, not only the one picked
        return every_row(values[0], x.last() if name == "last" else x.first())

    def _any_value(self, name: str, x: pl.Expr, *_: object) -> pl.Expr:
        return every_row(x, x.drop_nulls().first())

    def _arg(self, name: str, x: pl.Expr, values: list[pl.Expr], args: list[exp.Expression],
             order: exp.Order | None, node: exp.Expression) -> pl.Expr:
        if len(values) != 2:
            raise error(node, f"{name}(value, key) takes two arguments")
        if not args[0].find(exp.Column):   # a constant value: it, if any key is not NULL
            # (never x.filter(...) of a literal: polars 2.1 reads past its end, F26)
            return pl.when(values[1].count() > 0).then(self.expr(args[0]))
        both = x.is_not_null() & values[1].is_not_null()
        key = lexical(self, values[1]).filter(both)
        if not self.dtype(key).is_float():   # no NaN: polars' own max_by/min_by (merged)
            return x.filter(both).max_by(key) if name == "arg_max" else \
                x.filter(both).min_by(key)
        return x.filter(both).sort_by(key, descending=name == "arg_max", nulls_last=True,
                                      maintain_order=True).first()

    def _weighted_avg(self, name: str, x: pl.Expr, values: list[pl.Expr],
                      args: list[exp.Expression], order: exp.Order | None,
                      node: exp.Expression) -> pl.Expr:
        """DuckDB's macro: sum(v * w) / sum(CASE WHEN v IS NOT NULL THEN w ELSE 0 END)."""
        if len(values) != 2:
            raise error(node, f"{name}(value, weight) takes two arguments")
        if all(self.dtype(e).is_integer() for e in values):
            # integers as DuckDB: v * w a BIGINT product (overflow raises), the sums exact in
            # 128 bits (a DECIMAL(38, 0), as the grouped sum), the quotient a DOUBLE
            wide = [e.cast(pl.Decimal(38, 0)) for e in values]
            prod = wide[0] * wide[1]
            bad = (prod > 2 ** 63 - 1) | (prod < -(2 ** 63))
            num = self.fail(prod, bad, node, "integer overflow (value * weight leaves BIGINT)")
            den = pl.when(wide[0].is_not_null()).then(wide[1]).otherwise(0)
            return (pl.when(num.count() > 0).then(num.sum()).cast(_F64) /
                    pl.when(den.count() > 0).then(den.sum()).cast(_F64))
        v, w = values[0].cast(_F64), values[1].cast(_F64)
        num, den = v * w, pl.when(v.is_not_null()).then(w).otherwise(0.0)
        return pl.when(num.count() > 0).then(num.sum()) / \
            pl.when(den.count() > 0).then(den.sum())

    def _pairs(self, name: str, x: pl.Expr, values: list[pl.Expr], args: list[exp.Expression],
               order: exp.Order | None, node: exp.Expression) -> pl.Expr:
        """covar_*, corr, regr_*(y, x) over the pairs without a NULL."""
        if len(values) != 2:
            raise error(node, f"{name}(y, x) takes two arguments")
        y, xx = values[0].cast(_F64), values[1].cast(_F64)
        both = y.is_not_null() & xx.is_not_null()
        y, xx = y.filter(both), xx.filter(both)
        n = y.count().cast(pl.Int64)
        if name == "covar_pop":
            return pl.when(n > 0).then(pl.cov(y, xx, ddof=0))
        if name == "covar_samp":
            return pl.when(n > 1).then(pl.cov(y, xx, ddof=1))
        if name == "corr":
            return pl.when(n > 0).then(pl.corr(y, xx))
        if name == "regr_count":
            return n
        if name == "regr_avgx":
            return xx.mean()
        if name == "regr_avgy":
            return y.mean()
        if name == "regr_sxx":
            return pl.when(n > 0).then(xx.var(ddof=0) * n)
        if name == "regr_syy":
            return pl.when(n > 0).then(y.var(ddof=0) * n)
        if name == "regr_sxy":
            return pl.when(n > 0).then(pl.cov(y, xx, ddof=0) * n)
        vx, vy, cxy = xx.var(ddof=0), y.var(ddof=0), pl.cov(y, xx, ddof=0)
        slope = cxy / vx
        if name == "regr_slope":
            return pl.when(n > 0).then(slope)
        if name == "regr_intercept":
            return pl.when((n > 0) & slope.is_not_nan()).then(y.mean() - slope * xx.mean())
        if name == "regr_r2":
            r2 = cxy * cxy / (vx * vy)
            return pl.when((n == 0) | (vx == 0)).then(None).when(vy == 0).then(1.0) \
                .otherwise(r2)
        raise unsupported(node, f"aggregate {name}()")   # pragma: no cover

    _RULES: dict[str, Callable[..., pl.Expr]] = {
        "sum": _sum, "avg": _avg, "min": _min, "max": _max, "median": _median,
        "quantile_cont": _quantile, "quantile_disc": _quantile,
        "first": _first_last, "last": _first_last, "any_value": _any_value,
        "arg_max": _arg, "arg_min": _arg, "weighted_avg": _weighted_avg,
        "covar_pop": _pairs, "covar_samp": _pairs, "corr": _pairs,
        **dict.fromkeys(_SAMPLE, _moment), **dict.fromkeys(_REGR, _pairs)}


def lexical(c: Plain, e: pl.Expr) -> pl.Expr:
    """A SYMBOL/CHAR (categorical) value as its text, so that it orders as text."""
    return e.cast(pl.String) if isinstance(c.dtype(e), (pl.Categorical, pl.Enum)) else e


def _is_number(node: exp.Expression) -> bool:
    return (isinstance(node, exp.Literal) and not node.is_string) or \
        (isinstance(node, exp.Neg) and _is_number(node.this))


def _number(node: exp.Expression) -> float:
    if isinstance(node, exp.Neg):
        return -_number(node.this)
    return float(node.this)


def _complement(node: exp.Expression) -> exp.Expression:
    """``1 - q`` as a literal (a quantile of a descending order)."""
    if not _is_number(node):
        return node
    return exp.Literal.number(repr(1 - _number(node)))
