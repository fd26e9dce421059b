"""``PIVOT`` in FROM compiled to the engine's pivot: one column per listed value."""

from __future__ import annotations

from sqlglot import exp

from hfq.engine.reshape import Pivot
from hfq.engine.sql.aggregates import Agg
from hfq.engine.sql.errors import at, error, unsupported
from hfq.engine.sql.scope import Env, Scope

__all__ = ["compile_pivot"]


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
    aggs = p.expressions
    fields = p.args.get("fields") or []
    if len(aggs) != 1 or len(fields) != 1 or not isinstance(fields[0], exp.In):
        raise unsupported(p, "PIVOT with several aggregates or FOR columns")
    col = fields[0].this
    if not isinstance(col, exp.Column):
        raise error(col, "PIVOT ... FOR takes a column")
    on = base.resolve(col)
    values = []
    for v in fields[0].expressions:
        if not isinstance(v, exp.Literal):
            raise error(v, "PIVOT ... IN takes literals")
        values.append(v.this if v.is_string else (float(v.this) if "." in v.this
                                                  else int(v.this)))
    group = p.args.get("group")
    agg_expr = Agg(base, c).call(aggs[0])
    with at(p):
        if group is not None:
            index = [base.resolve(g) for g in group.expressions]
        else:
            used = {on, *(base.resolve(x) for x in aggs[0].find_all(exp.Column))}
            index = [x for x in base.query.columns if x not in used]
        q = base.query.group_by(*index, on).agg(agg_expr.alias("__v"))
        q = q._then(Pivot(on, tuple(index), "__v", tuple(values), "first"))
        names = [str(v) for v in values]
        q = q.rename({old: new for old, new in zip(q.columns[len(index):], names)
                      if old != new})
    alias = node.alias_or_name
    return Scope(q, {alias: {x: x for x in q.columns}})

