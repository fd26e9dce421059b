"""Reading sqlglot's tree: which calls are aggregates, a call's name and arguments, the
conjuncts of a condition."""

from __future__ import annotations

from sqlglot import exp

__all__ = ["AGGS", "AGG_NAMES", "agg_calls", "args_of", "conjuncts", "dedupe", "has_agg",
           "is_agg", "name_of"]

AGGS = (exp.Count, exp.Sum, exp.Avg, exp.Min, exp.Max, exp.Stddev, exp.StddevPop,
        exp.StddevSamp, exp.Variance, exp.VariancePop, exp.First, exp.Last, exp.ArgMax,
        exp.ArgMin, exp.Median, exp.Quantile, exp.AnyValue, exp.PercentileCont,
        exp.PercentileDisc, exp.GroupConcat, exp.ArrayAgg, exp.Corr, exp.CovarPop,
        exp.CovarSamp, exp.RegrSlope, exp.RegrIntercept, exp.RegrR2, exp.RegrCount,
        exp.RegrAvgx, exp.RegrAvgy, exp.RegrSxx, exp.RegrSyy, exp.RegrSxy, exp.LogicalAnd,
        exp.LogicalOr, exp.CountIf)
AGG_NAMES = {"quantile_cont", "quantile_disc", "first", "last", "arg_max", "arg_min",
             "max_by", "min_by", "median", "mode", "stddev_samp", "stddev_pop", "var_samp",
             "var_pop", "count_star", "wavg", "weighted_avg", "first_value_agg"}


def is_agg(node: exp.Expression) -> bool:
    """Is ``node`` an aggregate call (not a window)?"""
    if isinstance(node, exp.Window):
        return False
    if isinstance(node, AGGS):
        return True
    if isinstance(node, (exp.Filter, exp.WithinGroup)) or (
            isinstance(node, exp.IgnoreNulls) and isinstance(node.this, exp.AnyValue)):
        return is_agg(node.this)
    return isinstance(node, exp.Anonymous) and node.name.lower() in AGG_NAMES


def has_agg(node: exp.Expression) -> bool:
    """Does ``node`` hold an aggregate call outside windows and subqueries?"""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, (exp.Subquery, exp.Select)) and n is not node:
            continue
        if isinstance(n, exp.Window):
            continue
        if is_agg(n):
            return True
        stack.extend(n.iter_expressions())
    return False


def agg_calls(node: exp.Expression) -> list[exp.Expression]:
    """The aggregate calls of ``node`` computed per group (those inside a window's
    arguments included: ``sum(sum(x)) OVER ()``)."""
    out: list[exp.Expression] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, (exp.Subquery, exp.Select, exp.Window)):
            if isinstance(n, exp.Window):
                inner = n.this
                stack.extend(list(inner.iter_expressions()) if is_agg(inner) else [inner])
            continue
        if is_agg(n):
            out.append(n)
            continue
        stack.extend(n.iter_expressions())
    return out


def name_of(node: exp.Expression) -> str:
    """A call's function name, lower case."""
    if isinstance(node, exp.Func) and not isinstance(node, exp.Anonymous):
        return node.sql_name().lower()
    return node.name.lower()


def args_of(node: exp.Expression) -> list[exp.Expression]:
    """A function call's arguments in order."""
    if isinstance(node, exp.Anonymous):
        return list(node.expressions)
    out: list[exp.Expression] = []
    for key in node.arg_types:
        value = node.args.get(key)
        if isinstance(value, list):
            out += [v for v in value if isinstance(v, exp.Expression)]
        elif isinstance(value, exp.Expression):
            out.append(value)
    return out


def conjuncts(node: exp.Expression | None) -> list[exp.Expression]:
    """The terms of ``a AND b AND ...`` (parentheses looked through)."""
    if node is None:
        return []
    if isinstance(node, exp.And):
        return conjuncts(node.this) + conjuncts(node.expression)
    if isinstance(node, exp.Paren):
        return conjuncts(node.this)
    return [node]


def dedupe(names: list[str]) -> list[str]:
    """Output names made unique: a repeated name gets ``_1``, ``_2``..."""
    seen: dict[str, int] = {}
    out = []
    for n in names:
        if n in seen:
            seen[n] += 1
            out.append(f"{n}_{seen[n]}")
        else:
            seen[n] = 0
            out.append(n)
    return out
