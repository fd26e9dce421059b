"""Aggregate calls over a group's rows (``sum``, ``avg``, ``stddev``, ``first(x ORDER BY y)``,
``arg_max``, ``quantile_cont``...) as polars aggregations; the engine splits them into partial
states on the nodes and exact merges on the driver (:mod:`hfq.engine.aggs`)."""

from __future__ import annotations

import polars as pl
from sqlglot import exp

from hfq.engine.sql.errors import error, unsupported
from hfq.engine.sql.expressions import Plain
from hfq.engine.sql.syntax import args_of, name_of

__all__ = ["Agg"]


class Agg(Plain):
    """Aggregate calls over the input rows."""

    def call(self, node: exp.Expression) -> pl.Expr:
        name = name_of(node)
        args = args_of(node)
        if isinstance(node, exp.Count):
            inner = node.this
            if inner is None or isinstance(inner, exp.Star):
                return pl.len().cast(pl.Int64)
            if isinstance(inner, exp.Distinct):
                if len(inner.expressions) != 1:
                    raise unsupported(node, "count(DISTINCT) of several columns")
                return self.expr(inner.expressions[0]).drop_nulls().n_unique().cast(pl.Int64)
            return self.expr(inner).count().cast(pl.Int64)
        if args and isinstance(args[0], exp.Distinct):
            raise unsupported(node, f"{name}(DISTINCT ...)")
        order = None
        if args and isinstance(args[0], exp.Order):
            order = args[0]
            args = [order.this, *args[1:]]
        values = [self.expr(a) for a in args]
        x = values[0] if values else None
        if x is None:
            raise error(node, f"{name}() needs an argument")
        if isinstance(node, exp.Sum) or name == "sum":
            return pl.when(x.count() > 0).then(x.sum())
        if isinstance(node, exp.Avg):
            return x.mean()
        if isinstance(node, exp.Min):
            return x.min()
        if isinstance(node, exp.Max):
            return x.max()
        if isinstance(node, (exp.Stddev, exp.StddevSamp)) or name == "stddev_samp":
            return x.std(ddof=1)
        if isinstance(node, exp.StddevPop) or name == "stddev_pop":
            return x.std(ddof=0)
        if isinstance(node, exp.Variance) or name == "var_samp":
            return x.var(ddof=1)
        if isinstance(node, exp.VariancePop) or name == "var_pop":
            return x.var(ddof=0)
        if isinstance(node, exp.Median) or name == "median":
            return x.median()
        if isinstance(node, (exp.First, exp.Last)) or name in ("first", "last"):
            last = isinstance(node, exp.Last) or name == "last"
            if order is not None:
                keys = [self.expr(o.this) for o in order.expressions]
                desc = [bool(o.args.get("desc")) for o in order.expressions]
                x = x.sort_by(keys, descending=desc, nulls_last=True, maintain_order=True)
            return x.last() if last else x.first()
        if isinstance(node, (exp.ArgMax, exp.ArgMin)) or name in ("arg_max", "arg_min",
                                                                   "max_by", "min_by"):
            if len(values) != 2:
                raise error(node, f"{name}(value, key) takes two arguments")
            by = values[1]
            return x.max_by(by) if name in ("arg_max", "max_by") or \
                isinstance(node, exp.ArgMax) else x.min_by(by)
        if name in ("quantile_cont", "quantile_disc") or isinstance(
                node, (exp.Quantile, exp.PercentileCont, exp.PercentileDisc)):
            name = "quantile_disc" if isinstance(node, exp.PercentileDisc) else name
            if len(args) != 2 or not isinstance(args[1], exp.Literal) or args[1].is_string:
                raise error(node, f"{name}(x, q) takes a numeric literal q")
            q = float(args[1].this)
            method = "linear" if name != "quantile_disc" else "lower"
            return x.quantile(q, method)   # type: ignore[arg-type]
        if name == "wavg":   # kdb+'s wavg[w; x]
            if len(values) != 2:
                raise error(node, "wavg(weight, value) takes two arguments")
            w, v = values
            both = v.is_not_null() & w.is_not_null()
            return (w * v).filter(both).sum() / w.filter(both).sum()
        raise unsupported(node, f"aggregate {name}()")
