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

import decimal
from collections.abc import Callable

import polars as pl
from sqlglot import exp

from hfq.engine.aggs import LIGHT, SCALED
from hfq.engine.exprs import empty_lazy, every_row, fail_where, may_raise, raised
from hfq.engine.joins import AsofJoin, Join, WindowJoin
from hfq.engine.ops import Aggregate, Unique, choice
from hfq.engine.query import Query
from hfq.engine.reshape import Combine
from hfq.engine.sql.errors import error, unsupported
from hfq.engine.sql.expressions import Plain
from hfq.engine.sql.scope import Env, Scope
from hfq.engine.sql.syntax import args_of, name_of
from hfq.engine.sql.windows import adds_alike, order_moves

__all__ = ["Agg", "lexical", "reads_no_column"]

_F64 = pl.Float64
_SAMPLE = {"stddev": 1, "stddev_samp": 1, "stddev_pop": 0, "variance": 1, "var_samp": 1,
           "var_pop": 0}
_SAMPLE_COVAR = {"covar_pop": 0, "covar_samp": 1}
_NAN = pl.lit("NaN").cast(_F64)   # (a NaN literal does not survive the engine's expression
#   serialisation to JSON)
_DOWN, _UP = SCALED, 1 / SCALED   # exact scalings (the engine knows _DOWN: AggPlan.light)
_EPS = 2.0 ** -52      # DOUBLE's machine epsilon
_SLACK = 4.0           # F134: the covariance's rounding bound, with a margin (_offset)
_TOLERANCE = 1e-9      # the relative agreement hfq keeps with DuckDB on floating answers
_ABSOLUTE = 1e-12      # ... plus this much near 0 (tests/fuzz/sqlfuzz/compare.py)
_REGR = ("regr_slope", "regr_intercept", "regr_r2", "regr_count", "regr_avgx", "regr_avgy",
         "regr_sxx", "regr_syy", "regr_sxy")
_NAMES = {"variance": "var_samp", "stddev": "stddev_samp", "percentile_cont": "quantile_cont",
          "percentile_disc": "quantile_disc", "max_by": "arg_max", "min_by": "arg_min",
          "wavg": "weighted_avg", "mean": "avg", "quantile": "quantile_disc",
          "variance_pop": "var_pop", "covariance_pop": "covar_pop",
          "covariance_samp": "covar_samp"}
_ORDERED = ("first", "last", "arg_max", "arg_min")   # take ORDER BY inside the call
_SHOWN = {"logical_and": "bool_and", "logical_or": "bool_or"}   # as users write them


class Agg(Plain):
    """Aggregate calls over the input rows.  ``columns``, when given, collects arguments
    computed once as columns before the aggregation (:meth:`_column`); ``semi``: the rows
    passed an IN or EXISTS subquery (in DuckDB a semi join, :func:`_hashed`)."""

    def __init__(self, scope: Scope, env: Env, columns: dict[str, pl.Expr] | None = None,
                 semi: bool = False, grouped: bool = False, filtered: bool = False) -> None:
        super().__init__(scope, env)
        self.columns = columns
        self.hashed = semi or _hashed(scope.query)
        # DuckDB's plan, which decides the rounding of an avg or of a constant's sum: a hash
        # aggregate (``grouped``), or one over the whole input; an aggregate with a FILTER
        # (``filtered``; PIVOT's are)
        self.grouped = grouped
        self.filtered = filtered

    def dtype(self, e: pl.Expr) -> pl.DataType:
        if not self.columns:
            return super().dtype(e)
        try:
            return empty_lazy(self.scope.query.schema).with_columns(
                *self.columns.values()).select(e.alias("_")).collect_schema()["_"]
        except pl.exceptions.PolarsError:
            return pl.Null()

    def _column(self, x: pl.Expr) -> pl.Expr:
        """``x`` (row-wise, reading columns) as a column computed before the aggregation,
        when the caller collects them: a check that reads it several times (a join's sum
        of DOUBLEs, :meth:`_in_hash_order`) then computes it once."""
        if self.columns is None or x.meta.is_column():
            return x
        name = f"__arg{len(self.columns)}"
        self.columns[name] = x.alias(name)
        return pl.col(name)

    def call(self, node: exp.Expression) -> pl.Expr:
        where: pl.Expr | None = None
        if isinstance(node, exp.Filter):   # agg(...) FILTER (WHERE cond)
            cond = node.expression.this
            where = self.expr(cond).fill_null(False)
            self.filtered = True
            if reads_no_column(where):   # a constant condition holds (or not) on every row
                where = pl.repeat(where, pl.len())   # (a literal would count once: F49)
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
        if args and isinstance(args[-1], exp.Order):   # first(x ORDER BY k), arg_min(x, y ORDER ..)
            if name not in _ORDERED:
                raise unsupported(args[-1], f"ORDER BY inside {name}()")
            order = args[-1]
            args = [*args[:-1], order.this]
        if order is not None and name in ("quantile_cont", "quantile_disc", "median"):
            if len(order.expressions) != 1:
                raise error(order, f"{name} WITHIN GROUP takes one ORDER BY expression")
            o = order.expressions[0]
            args = [o.this, *args]
            descending = bool(o.args.get("desc")) and len(args) == 2
            order = order if descending else None   # (kept only to mark a descending order)
        if not args:
            raise error(node, f"{name}() needs an argument")
        values = [self.expr(a) for a in args]
        if order is not None and name in _ORDERED:   # (each key compiled once: a subquery
            keys = [self.expr(o.this) for o in order.expressions]   # in one runs once)
            return self._keys_raised(
                self._ordered(name, values, args, order, where, node, keys), keys)
        return self._ordered(name, values, args, order, where, node)

    def _ordered(self, name: str, values: list[pl.Expr], args: list[exp.Expression],
                 order: exp.Order | None, where: pl.Expr | None, node: exp.Expression,
                 keys: list[pl.Expr] | None = None) -> pl.Expr:
        if all(reads_no_column(v) for v in values) and not isinstance(node, exp.ArgMax) \
                and not isinstance(node, exp.ArgMin):
            return self._constant(name, values[0], where, node)
        # a constant beside a column is one value per row (polars 2.1 reads past the end of
        # a filtered literal inside a grouping: F26)
        values = [pl.repeat(v, pl.len()) if reads_no_column(v) else v for v in values]
        if name in ("sum", "avg") and self.dtype(values[0]).is_float() and \
                self.hashed and not reads_no_column(values[0]):
            values = [self._column(values[0])]
        if where is not None:
            values = [v.filter(where) for v in values]
        values = [lexical(self, v) for v in values] if name in ("min", "max") else values
        if order is not None and keys is not None:   # (arg_*: the first of tied keys)
            values = [self._sorted(v, order, keys, where) for v in values]
        x = values[0]
        build = self._RULES.get(name)
        if build is None:
            raise unsupported(node, f"aggregate {name}()")
        return build(self, name, x, values, args, order, node)

    def _sorted(self, x: pl.Expr, order: exp.Order, keys: list[pl.Expr],
                where: pl.Expr | None) -> pl.Expr:
        """``x`` in the aggregate's ORDER BY order (the rows FILTER keeps), by ``keys``
        (compiled); a constant key orders nothing (its errors: :meth:`_keys_raised`)."""
        by = [(k, o) for k, o in zip(keys, order.expressions) if not reads_no_column(k)]
        if not by:
            return x
        keys = [lexical(self, k) for k, _ in by]
        keys = [k.filter(where) for k in keys] if where is not None else keys
        return x.sort_by(keys, descending=[bool(o.args.get("desc")) for _, o in by],
                         nulls_last=[not o.args.get("nulls_first") for _, o in by],
                         maintain_order=True)

    def _keys_raised(self, out: pl.Expr, keys: list[pl.Expr]) -> pl.Expr:
        """``out``, with the errors of the aggregate's ORDER BY keys raised as DuckDB's: each
        key evaluated on every row of the group (FILTER or not), and so a constant that
        raises fails the query where the group has a row -- over no rows DuckDB answers
        NULL (F132)."""
        for key in keys:
            if not reads_no_column(key):   # (read even where its errors were raised
                # upstream, in a CTE's column: the constant's rule sorts nothing, and an
                # unread column is pruned with its errors; F135)
                out = pl.when(key.count() >= 0).then(out)
                continue
            if not may_raise(key):
                continue
            try:   # a constant: evaluated once, here (pl.repeat would raise over no rows)
                pl.select(key)
            except pl.exceptions.PolarsError as exc:
                message = raised(exc)
                out = every_row(pl.repeat(key, pl.len()), out) if message is None else \
                    fail_where(out, pl.len() > 0, message)   # (another failure: as it runs)
        return out

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
            if reads_no_column(x):   # a constant: one value per row
                x = pl.repeat(x, pl.len())                   # (none over no rows)
            x = x.filter(where) if where is not None else x
            return x.drop_nulls().n_unique().cast(pl.Int64)
        x = self.expr(inner)
        # a constant (a CTE's constant column too: F52) is one value per row
        x = pl.repeat(x, pl.len()) if reads_no_column(x) else x
        return (x.filter(where) if where is not None else x).count().cast(pl.Int64)

    def _sum_over_count(self) -> bool:
        """Whether DuckDB's optimizer makes an avg its sum rounded to a DOUBLE over its
        count (F142): without GROUP BY or FILTER; elsewhere its avg state divides a
        DECIMAL's integers by count * 10^scale in long double (3 / 30 = 0.1, where the
        rewrite gives 0.3 / 3 = 0.09999999999999999)."""
        return not self.grouped and not self.filtered

    def _constant(self, name: str, value: pl.Expr, where: pl.Expr | None,
                  node: exp.Expression) -> pl.Expr:
        """An aggregate of a constant: as if every row held it."""
        n = where.cast(pl.Int64).sum() if where is not None else pl.len().cast(pl.Int64)
        some = pl.when(n > 0)
        dtype = self.dtype(value)
        exact = dtype.is_integer() or isinstance(dtype, pl.Decimal)
        if (name == "sum" and dtype.is_integer()) or (
                name == "avg" and exact and self._sum_over_count()):
            # one value per row, summed exactly as a column is: value * n could wrap past
            # BIGINT; DuckDB's avg rewritten as the sum rounded to a DOUBLE over the count
            # (F142; its avg state, in long double, gives the constant)
            x = pl.repeat(value.cast(pl.Int64) if dtype.is_integer() else value, pl.len())
            build = self._sum if name == "sum" else self._avg
            return build(name, x.filter(where) if where is not None else x, [], [], None, node)
        if name in ("sum", "avg") and dtype.is_float():
            # DuckDB's rounding of n copies: its whole-input aggregate multiplies (value *
            # n), its hash aggregate adds them one by one -- avg(1e300) over 10 rows is an
            # ulp above 1e300 there (F141) -- and so does its whole-input avg with a FILTER
            # (not its sum); the avg divides that sum.  Added to its state's 0.0, as DuckDB
            # (a sum of -0.0 is 0.0)
            if self.grouped or (self.filtered and name == "avg"):
                x = pl.repeat(value.cast(_F64), pl.len())
                total = (x.filter(where) if where is not None else x).cum_sum().last()
            else:
                total = value.cast(_F64) * n
            total = pl.lit(0.0) + total
            return pl.when(value.is_not_null() & (n > 0)).then(
                total if name == "sum" else total / n)
        if name == "sum":
            return pl.when(value.is_not_null() & (n > 0)).then(value * n)
        if name in ("median", "quantile_cont") and isinstance(self.dtype(value), pl.Decimal):
            return some.then(value)   # DuckDB's quantile of a DECIMAL is that DECIMAL (F56)
        if name in ("avg", "median", "quantile_cont"):
            return some.then(value.cast(_F64))
        if name in ("min", "max", "first", "last", "any_value", "quantile_disc", "mode"):
            return some.then(value)
        if name in _SAMPLE:   # no spread; inf or NaN in two rows or more: NaN (Welford's)
            v = value.cast(_F64)
            return pl.when(value.is_not_null() & (n > _SAMPLE[name])).then(
                pl.when((n == 1) | v.is_finite()).then(pl.lit(0.0)).otherwise(_NAN))
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
        return self._in_hash_order("sum", x, pl.when(x.count() > 0).then(x.sum()), node)

    def _avg(self, name: str, x: pl.Expr, values: list[pl.Expr], args: list[exp.Expression],
             order: exp.Order | None, node: exp.Expression) -> pl.Expr:
        if self.dtype(x).is_integer():   # summed exactly in 128 bits (DuckDB's HUGEINT),
            n = x.count()                 # then divided: a mean in doubles loses 2^63's
            return pl.when(n > 0).then(x.cast(pl.Decimal(38, 0)).sum().cast(_F64) / n)
        dtype = self.dtype(x)
        if isinstance(dtype, pl.Decimal):
            # DuckDB's: the DECIMAL's integers summed exactly, as a DOUBLE over count *
            # 10^scale -- a mean of the values as doubles lost 1.5 + 2^63 - 1 and 1.5 - 2^63
            # (0.0 for DuckDB's 1.0, F130) -- or as its optimizer rewrites it (F142)
            n = x.count()
            if self._sum_over_count():
                return pl.when(n > 0).then(x.sum().cast(_F64) / n.cast(_F64))
            return pl.when(n > 0).then(x.sum().to_physical().cast(_F64) /
                                       (n.cast(_F64) * 10.0 ** (dtype.scale or 0)))
        # (FLOAT averaged in DOUBLE, as DuckDB's avg)
        return self._in_hash_order("avg", x, x.cast(_F64).mean() if self.dtype(x) != _F64
                                   else x.mean(), node)

    def _in_hash_order(self, name: str, x: pl.Expr, out: pl.Expr,
                       node: exp.Expression) -> pl.Expr:
        """``out``, the sum or avg of the DOUBLEs ``x``; over rows a join (or another hash
        operator, :func:`_hashed`) made, failing by name where the order of the additions
        could change it (:func:`order_moves`): DuckDB adds them in the order its hash table
        left them, which no order of the stored rows reproduces (F137: avg of -3.75, 1e300,
        -1e300 after a LEFT JOIN, DuckDB 0.0 on every order of its input, hfq -1.25 on two
        nodes)."""
        if not self.hashed:
            return out
        # (values of one sign over the whole frame need no check: the choice picks it, not
        # the answer, which it would hold twice; ``x``, a column, is computed once)
        moves = choice(adds_alike(x), pl.lit(False), order_moves(x, split=True))
        return self.fail(out, moves, node,
                         f"{name} of DOUBLEs over rows a join, grouping, DISTINCT, set "
                         "operation or IN/EXISTS subquery made, whose values cancel or sum "
                         "past DOUBLE's range (its "
                         "value depends on the order of the additions, which DuckDB leaves "
                         "to its hash table) is not supported; CAST the values to DECIMAL "
                         "for an exact sum")

    def _min(self, name: str, x: pl.Expr, *_: object) -> pl.Expr:
        return x.min()   # polars skips NaN unless every value is one: NaN is the largest

    def _max(self, name: str, x: pl.Expr, *_: object) -> pl.Expr:
        return x.nan_max() if self.dtype(x).is_float() else x.max()

    def _moment(self, name: str, x: pl.Expr, values: list[pl.Expr], args: list[exp.Expression],
                order: exp.Order | None, node: exp.Expression) -> pl.Expr:
        dtype = self.dtype(x)
        x = x if dtype == _F64 else x.cast(_F64)
        ddof = _SAMPLE[name]
        # DuckDB's deviation is the root of its variance (inf past DOUBLE's range: inf)
        var = _variance(x, ddof, dtype=dtype)
        out = var.sqrt() if name.startswith("stddev") else var
        if dtype.is_integer() or isinstance(dtype, pl.Decimal) or dtype == pl.Float32:
            return out   # (below 2^129: no spread leaves DOUBLE's range)
        # finite values whose spread max - min leaves DOUBLE's range: DuckDB's Welford
        # update meets x - mean = +-inf, and its variance is -inf, NaN or +inf by the row
        # order and how its threads merge partial states (DBL_MAX and -1e300: -inf in one
        # pass, +inf merged; F138) -- as covar's spread (F101)
        bad = (x.count() >= 2) & _finite(x) & _spread_past_double(x)
        return self.fail(out, bad, node, f"{name} where the values' spread leaves DOUBLE's "
                                         "range (DuckDB's answer, +-inf or NaN, depends on "
                                         "the row order and how it merges them) is not "
                                         "supported")

    def _median(self, name: str, x: pl.Expr, *_: object) -> pl.Expr:
        dtype = self.dtype(x)
        if isinstance(dtype, pl.Decimal):
            return _decimal_interpolated(x, 0.5, dtype)
        return _interpolated(x, 0.5, ranked=self._ranked(x, dtype))

    def _quantile(self, name: str, x: pl.Expr, values: list[pl.Expr],
                  args: list[exp.Expression], order: exp.Order | None,
                  node: exp.Expression) -> pl.Expr:
        if len(args) != 2 or not _is_number(args[1]):
            raise error(node, f"{name}(x, q) takes a numeric literal q")
        q = float(_number(args[1]))
        if not 0 <= q <= 1:
            raise error(args[1], f"{name}: the quantile must be between 0 and 1, not {q}")
        dtype = self.dtype(x)
        if isinstance(dtype, pl.Decimal) and name == "quantile_cont":
            return _decimal_interpolated(x, q, dtype, descending=order is not None)
        if isinstance(dtype, pl.Decimal):
            x, dtype = x.cast(_F64), pl.Float64()
        if name == "quantile_disc":   # the value at ceil(q * n) - 1 in that order (SQL's)
            if dtype.is_integer():   # exactly (polars' quantile passes through doubles: F53)
                n = x.count()
                at = ((n.cast(_F64) * q).ceil().cast(pl.Int64) - 1).clip(0)
                return x.drop_nulls().sort(descending=order is not None) \
                    .get(at, null_on_oob=True)
            if order is not None:   # descending: the same from the top
                if not dtype.is_integer():
                    raise unsupported(node, f"{name} of a descending order of non-integers")
                out = -((-x).quantile(q, "equiprobable"))
            else:
                out = x.quantile(q, "equiprobable")
            return out.cast(dtype) if dtype.is_numeric() else out
        return _interpolated(x, q, descending=order is not None, ranked=self._ranked(x, dtype))

    def _ranked(self, x: pl.Expr, dtype: pl.DataType) -> pl.Expr | None:
        """The integers ``x`` in their narrowest stored type (a column widened to BIGINT
        read as stored), or None when ``x`` is not an integer: a continuous quantile selects
        its two values among these, and a selection in a 4-byte type is twice as fast as in
        DOUBLE (the busiest symbol's 1 M sizes: 6 ms against 13 ms, and no casts).  Exact: the
        cast to DOUBLE after keeps the order (two integers may meet, none cross), so the k-th
        smallest made DOUBLE is the k-th smallest of the values made DOUBLE."""
        if not dtype.is_integer():
            return None
        got = self.stored(x)
        return x if got is None else got[0]

    def _first_last(self, name: str, x: pl.Expr, values: list[pl.Expr],
                    args: list[exp.Expression], order: exp.Order | None,
                    node: exp.Expression) -> pl.Expr:
        # the argument's errors raised for every row, not only the one picked
        return every_row(values[0], x.last() if name == "last" else x.first())

    def _any_value(self, name: str, x: pl.Expr, *_: object) -> pl.Expr:
        return every_row(x, x.drop_nulls().first())

    def _arg(self, name: str, x: pl.Expr, values: list[pl.Expr], args: list[exp.Expression],
             order: exp.Order | None, node: exp.Expression) -> pl.Expr:
        if len(values) != 2:
            raise error(node, f"{name}(value, key) takes two arguments")
        first = self.expr(args[0])
        if reads_no_column(first):   # a constant value: it, if any key is not NULL
            # (never x.filter(...) of a literal: polars 2.1 reads past its end, F26)
            return pl.when(values[1].count() > 0).then(first)
        both = x.is_not_null() & values[1].is_not_null()
        key = lexical(self, values[1]).filter(both)
        if order is None and not self.dtype(key).is_float():
            # no NaN, ties in no order: polars' own max_by/min_by (merged); of tied keys
            # (ORDER BY inside) its streaming engine takes no defined one
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
        types = [self.dtype(e) for e in values]
        decimal = any(isinstance(t, pl.Decimal) for t in types)
        if decimal and not any(t.is_float() for t in types):
            # DuckDB multiplies and sums in DECIMAL, failing past 38 digits
            raise error(node, f"{name}() of DECIMAL values and weights (DuckDB computes value * "
                              "weight in DECIMAL and fails past 38 digits) is not supported; "
                              "CAST them to DOUBLE")
        v, w = values[0].cast(_F64), values[1].cast(_F64)
        num = v * w
        if types[1].is_integer() or isinstance(types[1], pl.Decimal):
            # DuckDB sums integer or DECIMAL weights exactly (its CASE is one of them), then
            # rounds the total to a DOUBLE: BIGINT's extremes sum to -1, not 0.0 (F143)
            exact = pl.Decimal(38, getattr(types[1], "scale", None) or 0)
            den = pl.when(v.is_not_null()).then(values[1].cast(exact)).otherwise(
                pl.lit(0).cast(exact))
            total = pl.when(den.count() > 0).then(den.sum().cast(_F64))
        else:
            den = pl.when(v.is_not_null()).then(w).otherwise(0.0)
            total = pl.when(den.count() > 0).then(den.sum())
        return pl.when(num.count() > 0).then(num.sum()) / total

    def _pairs(self, name: str, x: pl.Expr, values: list[pl.Expr], args: list[exp.Expression],
               order: exp.Order | None, node: exp.Expression) -> pl.Expr:
        """covar_*, corr, regr_*(y, x) over the pairs without a NULL."""
        if len(values) != 2:
            raise error(node, f"{name}(y, x) takes two arguments")
        y, xx = values[0].cast(_F64), values[1].cast(_F64)
        both = y.is_not_null() & xx.is_not_null()
        y, xx = y.filter(both), xx.filter(both)
        n = y.count().cast(pl.Int64)
        if name == "regr_count":
            return n
        if name == "regr_avgx":
            return xx.mean()
        if name == "regr_avgy":
            return y.mean()
        vx, vy = _variance(xx, 0), _variance(y, 0)
        if name == "regr_sxx":
            return vx * n
        if name == "regr_syy":
            return vy * n
        if name in ("covar_pop", "covar_samp", "regr_sxy"):
            # DuckDB's co-moment meets an infinite x as +-inf or NaN by where in the row order
            # it comes (NaN when it is the first pair's: inf * 0): refused by name (F58)
            cov = _covariance(y, xx, _SAMPLE_COVAR.get(name, 0))
            out = cov * n if name == "regr_sxy" else cov
            bad = (n >= 2) & ~_finite(xx) & (xx.is_nan().sum() == 0) & _finite(y) \
                & xx.first().is_finite()
            out = self.fail(out, bad, node, f"{name} of an infinite x (DuckDB's answer, NaN "
                                            "or +-inf, depends on the row order) is not "
                                            "supported")
            return self._offset(name, self._co_moment(name, out, y, xx, n, node), y, xx, n,
                                node)
        cxy = _covariance(y, xx, 0)
        if name in ("corr", "regr_r2"):
            # regr_r2 is DuckDB's corr squared (NULL where var_pop(x) is 0, 1 where only
            # var_pop(y) is): cxy^2 / (vx vy) was inf / inf, NaN, where cxy^2 leaves
            # DOUBLE's range and DuckDB's corr is 0.0 (F148)
            r = self._corr(y, xx, n, vx, vy, cxy)
            if name == "regr_r2":
                r = pl.when((n == 0) | (vx == 0)).then(None).when(vy == 0).then(1.0) \
                    .otherwise(r.pow(2))
            return self._offset(name, r, y, xx, n, node)
        # the slope's x-variance by the covariance's own kernel, cov(x, x): polars' grouped
        # var and cov round apart (1.02481911425164890e18 and ...902e18 for 2147483647,
        # 2147483647, 0), so y = x - 2 had a slope an ulp off 1 and an intercept
        # -2.000000238 under GROUP BY, -2.0 (DuckDB's) without one (F127).  DuckDB: NaN where
        # it is 0 (one pair, a constant x, or a variance that underflows: 5e-324 and -0.0),
        # and the intercept NULL there (F100)
        sxx = _covariance(xx, xx, 0)
        slope = pl.when(sxx == 0).then(_NAN).otherwise(cxy / sxx)
        if name == "regr_slope":
            return self._offset(name, self._co_moment(name, slope, y, xx, n, node), y, xx, n,
                                node)
        if name == "regr_intercept":
            out = pl.when((n > 0) & slope.is_not_nan()).then(y.mean() - slope * xx.mean())
            return self._offset(name, self._co_moment(name, out, y, xx, n, node), y, xx, n,
                                node)
        raise unsupported(node, f"aggregate {name}()")   # pragma: no cover

    @staticmethod
    def _corr(y: pl.Expr, x: pl.Expr, n: pl.Expr, vx: pl.Expr, vy: pl.Expr, cxy: pl.Expr
              ) -> pl.Expr:
        """DuckDB's corr(y, x): NULL over no pair, NaN without spread (one pair, a
        constant) or with inf/NaN, else the correlation."""
        r = pl.corr(y, x)
        # (polars' NaN from products past DOUBLE's range: DuckDB's formula, the
        # covariance over the product of the deviations, each +inf past the range -- so
        # inf / inf is NaN where the deviations' squares overflow, F80)
        r = pl.when(r.is_nan()).then(cxy / (vx.sqrt() * vy.sqrt())).otherwise(r)
        # a variance past DOUBLE's range (polars' corr gave 0.0): DuckDB's formula too,
        # its co-moment +-inf (so NaN) when a product of the deviations leaves the range,
        # else cov / inf = +-0.0 (F82)
        wide = _deviation(x) * _deviation(y)
        r = pl.when(vx.is_infinite() | vy.is_infinite()).then(
            pl.when(wide.is_infinite()).then(_NAN)
            .otherwise(cxy / (vx.sqrt() * vy.sqrt()))).otherwise(r)
        # DuckDB's NaN also where stddev_pop(x) * stddev_pop(y) is 0 without a constant:
        # a variance underflowing (x = 5e-324, 0.0), where cov / 0 gave inf
        spread = vx.sqrt() * vy.sqrt() != 0
        return pl.when(n > 0).then(
            pl.when(_finite(y, x) & ~_flat(y, x) & spread).then(r).otherwise(_NAN))

    def _co_moment(self, name: str, out: pl.Expr, y: pl.Expr, x: pl.Expr, n: pl.Expr,
                   node: exp.Expression) -> pl.Expr:
        """``out``, failing by name where a spread ``max - min`` of finite y or x leaves
        DOUBLE's range: DuckDB's Welford update then meets ``y - mean = -inf`` (the sign
        flipped: +inf for two pairs whose covariance is -inf in one pass, -inf when its
        merge of partial states adds them) or ``inf - inf`` (NaN), by the row order and the
        merge (F101); and where the co-moment leaves the range with the spreads inside it
        (F125), unless y and x are the same values (covar_pop(x, x) is +inf in every
        order); and so where a product of two deviations may leave it, the spreads' product
        past it: DuckDB's running co-moment then meets +-inf (and NaN after it) even where
        the whole sum cancels into the range, as hfq's does (F147)."""
        spread = _spread_past_double(y, x)
        bad = (n >= 2) & _finite(y, x) & spread
        out = self.fail(out, bad, node, f"{name} where the pairs' spread leaves DOUBLE's "
                                        "range (DuckDB's answer, +-inf or NaN, depends on the "
                                        "row order and how it merges them) is not supported")
        # the co-moment (the sum of the deviations' products) past DOUBLE's range with
        # spreads inside it: DuckDB's running sum reaches +inf or -inf by the order of the
        # products' signs (F125) -- except when y and x are the same values (squares: +inf);
        # one product past the range gives +-inf or NaN by the order too (F147)
        moment = pl.cov(y * _DOWN, x * _DOWN, ddof=0) * n.cast(_F64) * _UP * _UP
        product = _range(y) * _range(x)
        wide = (n >= 2) & _finite(y, x) & ~spread & \
            (moment.is_infinite() | product.is_infinite()) & ((y != x).sum() > 0)
        return self.fail(out, wide, node, f"{name} where the sum of the deviations' products, "
                                          "or one of them, leaves DOUBLE's range (DuckDB's "
                                          "answer, +-inf or NaN, depends on the row order) is "
                                          "not supported")

    def _offset(self, name: str, out: pl.Expr, y: pl.Expr, x: pl.Expr, n: pl.Expr,
                node: exp.Expression) -> pl.Expr:
        """``out`` (``name``'s answer), failing by name where the pairs' offset dwarfs their
        spread so far that rounding could move it past the 1e-9 (plus 1e-12) within which
        hfq answers as DuckDB does (F134).  A deviation from a mean near ``m`` carries an
        error of about ``eps |m|`` in any one-pass or merged computation: DuckDB's Welford
        state and hfq's per-partition moments merged by Chan's rule each moved the
        covariance by up to ``0.65 eps (|mean x| sd y + |mean y| sd x)`` over 30,000 random
        groups of 2 to 3,000 pairs with offsets up to 1e9 spreads (``docs/sql.md``), so two
        answers part by less than ``D = _SLACK eps (|mean x| sd y + |mean y| sd x)`` (a margin
        of 3).  Carried to each answer, as ratios (``Rx = |mean x| / sd x``, ``r`` the
        correlation) so that nothing overflows: the covariance moves by ``D``, the correlation
        by ``D / (sd x sd y)``, r^2 by ``(2 r + that)`` times that (r near 0 is itself
        that much noise: stop-15 review), the slope by ``D / var x`` and the
        intercept ``mean y - slope mean x`` by ``|mean x|`` times the slope's move (review:
        x near 1e5 with a spread of 100 moved it by 6e-8 of itself while the slopes agreed to
        1e-13).  Prices (Rx in the hundreds, |r| above 1e-3) and values near 0 answer; an
        answer of 0 for a correlation of 0 answers wherever the move stays under 1e-12."""
        (rx, sx), (ry, sy) = _spread(x), _spread(y)
        # |r| from the covariance in real units (capped at 1 where it is past DOUBLE's range)
        r = (_cov(y, x, 0).abs() / sx / sy).fill_nan(1.0).clip(upper_bound=1.0)
        move = _SLACK * _EPS * (rx + ry)   # the correlation's move
        answer = out.abs()
        if name == "corr":
            bad = move > _TOLERANCE * r + _ABSOLUTE
        elif name == "regr_r2":
            bad = (2 * r + move) * move > _TOLERANCE * r * r + _ABSOLUTE
        elif name in ("regr_slope", "regr_intercept"):
            slope = move * sy / sx
            bad = slope > _TOLERANCE * r * sy / sx + _ABSOLUTE
            if name == "regr_intercept":
                bad = slope * rx * sx > _TOLERANCE * answer + _ABSOLUTE
        else:   # covar_pop, covar_samp, regr_sxy: sums of products, n times for sxy
            times = n.cast(_F64) if name == "regr_sxy" else \
                n.cast(_F64) / (n - 1).cast(_F64) if name == "covar_samp" else pl.lit(1.0)
            bad = move * sx * sy * times > _TOLERANCE * answer + _ABSOLUTE
        bad = (n >= 2) & _finite(y, x) & ~_flat(y, x) & (sx > 0) & (sy > 0) & bad
        return self.fail(out, bad, node, f"{name} over values whose offset dwarfs their "
                                         "spread (|mean| / stddev past what 1e-9 of the answer "
                                         "survives: DuckDB's answer and hfq's both lose those "
                                         "digits to rounding) is not supported; subtract an "
                                         "offset (a value near the mean) first")

    def _bool_agg(self, name: str, x: pl.Expr, values: list[pl.Expr],
                  args: list[exp.Expression], order: exp.Order | None,
                  node: exp.Expression) -> pl.Expr:
        """bool_and / bool_or / count_if of BOOLEAN values, NULLs skipped: NULL over none,
        count_if's too (DuckDB's; its binder refuses other types, and so does hfq)."""
        shown = _SHOWN.get(name, name)
        if self.dtype(x) != pl.Boolean:
            raise error(node, f"{shown}() takes a boolean, not {args[0].sql('duckdb')}")
        ones = x.cast(pl.Int64)   # (integers: min, max and sum merge across partitions)
        out = ones.sum() if name == "count_if" else \
            (ones.min() if name == "logical_and" else ones.max()) == 1
        return pl.when(x.count() > 0).then(out)

    _RULES: dict[str, Callable[..., pl.Expr]] = {
        "sum": _sum, "avg": _avg, "min": _min, "max": _max, "median": _median,
        "quantile_cont": _quantile, "quantile_disc": _quantile,
        "first": _first_last, "last": _first_last, "any_value": _any_value,
        "arg_max": _arg, "arg_min": _arg, "weighted_avg": _weighted_avg,
        "covar_pop": _pairs, "covar_samp": _pairs, "corr": _pairs,
        **dict.fromkeys(_SAMPLE, _moment), **dict.fromkeys(_REGR, _pairs),
        **dict.fromkeys(("logical_and", "logical_or", "count_if"), _bool_agg)}


def _deviation(x: pl.Expr) -> pl.Expr:
    """The largest distance of an ``x`` from their mean (from a min, a max and a mean, so
    it merges across partitions).  The mean of finite values whose sum leaves DOUBLE's range
    (1e300 and DBL_MAX) is taken over the values scaled by 2^-600 and scaled back, as
    DuckDB's running mean stays finite there (F126)."""
    mean = pl.when(x.mean().is_infinite()).then((x * _DOWN).mean() * _UP) \
        .otherwise(x.mean())
    up, down = x.max() - mean, mean - x.min()
    return pl.when(up > down).then(up).otherwise(down)


def _variance(x: pl.Expr, ddof: int, *, dtype: pl.DataType | None = None) -> pl.Expr:
    """DuckDB's variance of the non-NULL ``x``: NULL with at most
    ``ddof`` values; 0 for one value (even inf or NaN); NaN when an inf or NaN is among two or
    more (Welford's update meets inf - inf); exactly 0 for a constant; else polars' (past
    DOUBLE's range, +inf: when finite values give NaN, their squares overflowed, so it is
    computed again over the values scaled by 2^-600 and scaled back).

    ``dtype``: the type ``x`` was cast to DOUBLE from, when known.  Integers and DECIMALs
    (below 2^129) have no inf or NaN, nor do their sums and squares leave DOUBLE's range, and
    FLOAT's squares (below 2^256) do not either: those checks, each a pass over the values
    per group, are left out where they cannot hold.

    Every part is a count, a sum, a min, a max or a variance, so the engine merges it across
    partitions.
    """
    special = dtype is None or not (dtype.is_integer() or isinstance(dtype, pl.Decimal))
    n = x.count()
    spread = x.var(ddof=ddof)
    if special and dtype != pl.Float32:
        scaled = (x * _DOWN).var(ddof=ddof) * _UP * _UP
        spread = pl.when(spread.is_nan()).then(scaled).otherwise(spread)
    if not special:
        return pl.when(n <= ddof).then(None).when(n == 1).then(pl.lit(0.0)) \
            .when(_flat(x)).then(pl.lit(0.0)).otherwise(spread)
    return pl.when(n <= ddof).then(None).when(n == 1).then(pl.lit(0.0)) \
        .when(~_finite(x)).then(_NAN).when(_flat(x)).then(pl.lit(0.0)).otherwise(spread)


def _covariance(y: pl.Expr, x: pl.Expr, ddof: int) -> pl.Expr:
    """DuckDB's covariance of the pairs (``y``, ``x``) without a NULL: NULL with at most
    ``ddof`` pairs; NaN when an inf or NaN is among them (DuckDB gives NaN for inf in ``y``, and
    NaN or an order-dependent +-inf for inf in ``x``: NaN here); exactly 0 for one pair or a
    constant ``y`` or ``x``; else :func:`_cov`."""
    n = y.count()
    return pl.when(n <= ddof).then(None).when(~_finite(y, x)).then(_NAN) \
        .when((n == 1) | _flat(y, x)).then(pl.lit(0.0)).otherwise(_cov(y, x, ddof))


def _cov(y: pl.Expr, x: pl.Expr, ddof: int) -> pl.Expr:
    """polars' covariance of finite pairs, +-inf past DOUBLE's range: where it is NaN, their
    sums or products overflowed, so it is computed again over the pairs scaled by
    :func:`_by_width` and scaled back."""
    cov = pl.cov(y, x, ddof=ddof)
    return pl.when(cov.is_nan()).then(_by_width(
        y, x, lambda a, b: pl.cov(_times(y, a), _times(x, b), ddof=ddof) * (1 / a) * (1 / b))) \
        .otherwise(cov)


def _wide(x: pl.Expr) -> pl.Expr:
    """Whether the finite ``x`` hold a value past ``LIGHT`` (2^480) in magnitude (from
    :func:`_finite`'s own aggregates, as :func:`_flat`)."""
    return (x.nan_max() > LIGHT) | (x.min() < -LIGHT)


def _times(x: pl.Expr, s: float) -> pl.Expr:
    return x if s == 1.0 else x * s


def _by_width(y: pl.Expr, x: pl.Expr, make: Callable[[float, float], pl.Expr]) -> pl.Expr:
    """``make(a, b)``: an aggregate of the pairs (``y * a``, ``x * b``), for finite pairs
    whose sums or products leave DOUBLE's range as they are: a side with a value past 2^480
    scaled by 2^-600 and the other left as it is where it has none (both scaled where neither
    or both have one).  Scaling a side of small values too dropped them below DOUBLE's
    normal range (a y near 1e-299 beside an x near DBL_MAX became 0, and so did their
    covariance: F146); a side at most 2^480 beside one scaled to at most 2^424 keeps every
    product and sum in range.  Each candidate is an aggregate of row-wise inputs, so the
    engine merges it across partitions."""
    if y.meta.eq(x):   # (cov(x, x): both sides are one)
        return make(_DOWN, _DOWN)
    wy, wx = _wide(y), _wide(x)
    return pl.when(wx & ~wy).then(make(1.0, _DOWN)).when(wy & ~wx).then(make(_DOWN, 1.0)) \
        .otherwise(make(_DOWN, _DOWN))


def _spread(x: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """``|mean x| / stddev_pop(x)`` and ``stddev_pop(x)`` of finite ``x``, for F134's offset
    check: over the values as they are where their sums and squares stay in DOUBLE's range;
    else scaled by 2^-600 (the stddev scaled back); and where their squared deviations
    underflow (a stddev of 0: the check reads it only for ``x`` not constant), scaled by
    2^600 -- values near 1e-299 beside DBL_MAX, whose stddev of 0 skipped the check (F146c)."""
    def at(s: float) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
        xs = _times(x, s)
        mean, sd = xs.mean(), xs.var(ddof=0).sqrt()
        return mean.abs() / sd, sd * (1 / s), mean.is_finite() & sd.is_finite()
    plain, down, up = at(1.0), at(_DOWN), at(_UP)

    def pick(k: int) -> pl.Expr:
        return pl.when(plain[1] == 0).then(up[k]).when(plain[2]).then(plain[k]) \
            .otherwise(down[k])
    return pick(0), pick(1)


def reads_no_column(e: pl.Expr) -> bool:
    """Whether ``e`` reads no column: one value, not one per row (a literal, or a column of a
    CTE or subquery that the compiler inlined as its constant -- F52)."""
    return not e.meta.root_names()


def _interpolated(x: pl.Expr, q: float, *, descending: bool = False,
                  ranked: pl.Expr | None = None) -> pl.Expr:
    """DuckDB's continuous quantile of DOUBLE: at rank ``r = (n - 1) * q`` of the sorted values
    (NaN the largest), the value there, or between the two around it (``d = r - floor(r)``)
    ``lo * (1 - d) + hi * d`` in the order given: so -inf beside a number is -inf (polars'
    interpolation gave NaN; F51).  FLOAT is interpolated in DOUBLE too, as hfq's other FLOAT
    arithmetic (``docs/sql.md``; DuckDB's FLOAT rule ``lo + d * (hi - lo)`` made two -inf NaN:
    F57).  ``ranked``, when given, holds the same values in an order-preserving type: the two
    values are selected among them, then made DOUBLE."""
    x = x.cast(_F64)
    rank = (x.count() - 1).cast(_F64) * q
    d = rank - rank.floor()
    pick = x if ranked is None else ranked
    if descending:   # the values at ranks floor(r) and ceil(r) from the top
        lo, hi = _from_top(pick, q)
    else:
        lo, hi = pick.quantile(q, "lower"), pick.quantile(q, "higher")
    if ranked is not None:
        lo, hi = lo.cast(_F64), hi.cast(_F64)
    between = lo * (1 - d) + hi * d
    return pl.when(d == 0).then(lo).otherwise(between)


def _decimal_interpolated(x: pl.Expr, q: float, dtype: pl.Decimal, *,
                          descending: bool = False) -> pl.Expr:
    """DuckDB's continuous quantile of a DECIMAL: a DECIMAL of the same type, interpolated over
    the unscaled integers as ``lo + (hi - lo) * d`` and truncated toward zero (median of 1.25 and
    2.50 is 1.87; F56) -- for a DECIMAL of 19 digits or more (DuckDB's HUGEINT-backed ones)
    ``lo`` plus the step ``(hi - lo) * d`` truncated (the median of -1.0 and -1.5 is -1.3 there,
    -1.2 for DECIMAL(18, 1); F92).  A computed DECIMAL is DECIMAL(38, s) in hfq: as DuckDB's
    for products with an integer column (BIGINT in hfq), wider than DuckDB's for sums of
    narrow DECIMAL columns (there the answer can be a unit off)."""
    units = x.to_physical()
    rank = (x.count() - 1).cast(_F64) * q
    d = rank - rank.floor()
    if descending:
        lo, hi = _from_top(units, q)
    else:
        lo, hi = units.quantile(q, "lower"), units.quantile(q, "higher")
    if (dtype.precision or 38) >= 19:   # DuckDB's HUGEINT decimals: lo + the step truncated
        at = pl.when(d == 0).then(lo).otherwise(lo + ((hi - lo) * d).cast(pl.Int128))  # F92
    else:                               # BIGINT-backed ones: the sum truncated
        at = pl.when(d == 0).then(lo).otherwise(lo + (hi - lo) * d).cast(pl.Int128)
    step = pl.lit(decimal.Decimal(1).scaleb(-(dtype.scale or 0)))
    return (at.cast(pl.Decimal(38, 0)) * step).cast(dtype)


def _from_top(x: pl.Expr, q: float) -> tuple[pl.Expr, pl.Expr]:
    """The values at ranks floor(r) and ceil(r), ``r = (n - 1) * q``, of ``x`` sorted
    descending: ascending ranks ``n - 1 - floor(r)`` and ``n - 1 - ceil(r)``."""
    n = x.count()
    r = (n - 1).cast(_F64) * q
    top = x.drop_nulls().sort(descending=True)
    return (top.get(r.floor().cast(pl.Int64), null_on_oob=True),
            top.get(r.ceil().cast(pl.Int64), null_on_oob=True))


def _finite(*xs: pl.Expr) -> pl.Expr:
    """Whether every value of ``xs`` is finite: the NaN-propagating max and the min are (a min
    and a max merge across partitions)."""
    out = pl.lit(True)
    for x in xs:
        out = out & x.nan_max().is_finite() & x.min().is_finite()
    return out


def _spread_past_double(*xs: pl.Expr) -> pl.Expr:
    """Whether the spread ``max - min`` of one of ``xs`` leaves DOUBLE's range (read where
    :func:`_finite` holds; a min and a max merge across partitions): where DuckDB's Welford
    update meets ``x - mean = +-inf`` (F101, F138)."""
    out = pl.lit(False)
    for x in xs:
        out = out | _range(x).is_infinite()
    return out


def _range(x: pl.Expr) -> pl.Expr:
    """``max - min`` of ``x``, read where :func:`_finite` holds (its own aggregates)."""
    return x.nan_max() - x.min()


def _flat(*xs: pl.Expr) -> pl.Expr:
    """Whether one of ``xs`` holds one value only (min = max: mergeable), read only where
    :func:`_finite` holds: there the NaN-propagating max is the max, and being the very
    aggregate :func:`_finite` reads, it is one partial state for both (a third pass over
    the values cost 6-7 % of a grouped stddev)."""
    out = pl.lit(False)
    for x in xs:
        out = out | (x.min() == x.nan_max())
    return out


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


def _hashed(q: Query) -> bool:
    """Have ``q``'s rows come out of a hash operator in DuckDB's plan -- a join of any kind
    (SEMI and ANTI too, F137c), a set operation (a join on the right side of a UNION ALL:
    stop-17 review), DISTINCT, a grouping -- which hands them on in its hash table's
    order, not the stored one?"""
    return any(isinstance(op, (Join, AsofJoin, WindowJoin, Combine, Unique)) or
               (isinstance(op, Aggregate) and bool(op.keys)) for op in q.ops)
