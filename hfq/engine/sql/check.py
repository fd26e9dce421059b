"""The allow-list: before anything is compiled, every node of sqlglot's tree must be of a
class the compiler handles, with only the arguments it consumes.

:data:`ALLOWED` maps each expression class to the names of the arguments the compiler
reads; a node of another class, or with any other argument set (``EXCLUDE`` on a ``*``, a
``TABLESAMPLE`` or ``AT (...)`` on a table, ``EXCLUDE CURRENT ROW`` in a frame, ``ORDER BY``
inside ``sum``...), is refused with its name and position.  A new sqlglot release that adds
a class or an argument can therefore only make hfq refuse a statement, never answer it while
ignoring part of it.  (Values of the arguments -- which join kinds, which frame bounds, which
function names -- are checked by the rule that consumes them.)
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from hfq.engine.sql.errors import construct, position, unsupported

__all__ = ["ALLOWED", "check", "refusal"]

_BIN = frozenset({"this", "expression"})
_ONE = frozenset({"this"})
_NONE: frozenset[str] = frozenset()


def _entries(names: frozenset[str], *classes: type[exp.Expression]
             ) -> dict[type[exp.Expression], frozenset[str]]:
    return dict.fromkeys(classes, names)


ALLOWED: dict[type[exp.Expression], frozenset[str]] = {
    # statements and clauses
    exp.Select: frozenset({"expressions", "from_", "joins", "where", "group", "having",
                           "order", "limit", "offset", "distinct", "with_", "qualify"}),
    **_entries(frozenset({"this", "expression", "distinct", "order", "limit", "offset",
                          "with_"}), exp.Union, exp.Intersect, exp.Except),
    exp.Qualify: _ONE,
    exp.Subquery: frozenset({"this", "alias", "pivots"}),
    exp.From: _ONE, exp.Where: _ONE, exp.Having: _ONE,
    exp.Group: frozenset({"expressions", "all"}),
    exp.Order: frozenset({"this", "expressions"}),
    exp.Ordered: frozenset({"this", "desc", "nulls_first"}),
    exp.Limit: frozenset({"expression", "limit_options"}),
    exp.LimitOptions: frozenset({"percent"}),
    exp.Offset: frozenset({"expression"}),
    exp.Distinct: frozenset({"expressions"}),
    exp.With: frozenset({"expressions"}),
    exp.CTE: frozenset({"this", "alias"}),
    exp.Table: frozenset({"this", "alias", "pivots", "when", "version"}),
    exp.HistoricalData: frozenset({"this", "kind", "expression"}),
    exp.Version: frozenset({"this", "kind", "expression"}),
    exp.TableAlias: _ONE,
    exp.Join: frozenset({"this", "on", "side", "kind", "method", "using"}),
    exp.Pivot: frozenset({"this", "expressions", "fields", "group", "using", "columns",
                          "pivot_column_naming"}),
    # names and literals
    exp.Identifier: frozenset({"this", "quoted"}),
    exp.Column: frozenset({"this", "table"}),
    exp.Star: frozenset({"except_", "replace", "rename"}),
    exp.Columns: _ONE,
    exp.Alias: frozenset({"this", "alias"}),
    exp.Literal: frozenset({"this", "is_string"}),
    exp.Null: _NONE, exp.Boolean: _ONE, exp.Var: _ONE,
    exp.Interval: frozenset({"this", "unit"}),
    exp.DataType: frozenset({"this", "expressions"}),
    exp.DataTypeParam: _ONE,
    # operators
    exp.DPipe: frozenset({"this", "expression", "safe"}),
    **_entries(_BIN, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.IntDiv, exp.Mod,
               exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.And, exp.Or, exp.Is,
               exp.NullSafeEQ, exp.NullSafeNEQ),
    **_entries(_ONE, exp.Paren, exp.Neg, exp.Not),
    exp.Between: frozenset({"this", "low", "high"}),
    exp.In: frozenset({"this", "expressions", "query"}),
    exp.Like: frozenset({"this", "expression", "negate"}),
    exp.ILike: frozenset({"this", "expression", "negate"}),
    exp.Case: frozenset({"this", "ifs", "default"}),
    exp.If: frozenset({"this", "true", "false"}),
    exp.Cast: frozenset({"this", "to"}), exp.TryCast: frozenset({"this", "to", "safe"}),
    exp.Exists: _ONE,
    # scalar functions
    exp.Anonymous: frozenset({"this", "expressions"}),
    **_entries(_ONE, exp.Abs, exp.Sqrt, exp.Exp, exp.Ln, exp.Floor, exp.Ceil, exp.Sign,
               exp.Lower, exp.Upper, exp.Length, exp.Year, exp.Month, exp.Day,
               exp.Hour, exp.Minute, exp.Second, exp.DayOfWeek, exp.TimeToUnix, exp.IsNan,
               exp.IsInf),
    exp.Nullif: _BIN,
    exp.Round: frozenset({"this", "decimals"}),
    exp.Pow: _BIN, exp.Log: _BIN,
    exp.Greatest: frozenset({"this", "expressions", "ignore_nulls"}),
    exp.Least: frozenset({"this", "expressions", "ignore_nulls"}),
    exp.Substring: frozenset({"this", "start", "length"}),
    exp.Concat: frozenset({"expressions", "safe", "coalesce"}),
    exp.Coalesce: frozenset({"this", "expressions"}),
    exp.Extract: _BIN,
    exp.TimestampTrunc: frozenset({"this", "unit"}),
    exp.DateBin: frozenset({"this", "expression", "unit"}),
    exp.Reverse: _ONE, exp.Trim: frozenset({"this", "expression", "position"}),
    **_entries(_BIN, exp.StartsWith, exp.EndsWith, exp.Contains, exp.Left, exp.Right),
    exp.StrPosition: frozenset({"this", "substr"}),
    exp.Replace: frozenset({"this", "expression", "replacement"}),
    # aggregates
    exp.Count: frozenset({"this", "big_int"}),
    **_entries(_ONE, exp.Sum, exp.Avg, exp.Min, exp.Max, exp.Stddev, exp.StddevPop,
               exp.StddevSamp, exp.Variance, exp.VariancePop, exp.First, exp.Last,
               exp.Median),
    exp.ArgMax: _BIN, exp.ArgMin: _BIN,
    **_entries(_BIN, exp.Corr, exp.CovarPop, exp.CovarSamp, exp.RegrSlope, exp.RegrIntercept,
               exp.RegrR2, exp.RegrCount, exp.RegrAvgx, exp.RegrAvgy, exp.RegrSxx,
               exp.RegrSyy, exp.RegrSxy),
    exp.AnyValue: _ONE,
    **_entries(_ONE, exp.LogicalAnd, exp.LogicalOr, exp.CountIf),
    exp.IgnoreNulls: _ONE,
    exp.Filter: _BIN,
    exp.WithinGroup: _BIN,
    exp.PercentileCont: _BIN, exp.PercentileDisc: _BIN,
    exp.Quantile: frozenset({"this", "quantile"}),
    # windows
    exp.Window: frozenset({"this", "partition_by", "order", "spec", "over"}),
    exp.WindowSpec: frozenset({"kind", "start", "start_side", "end", "end_side"}),
    exp.RowNumber: _NONE, exp.Rank: _NONE, exp.DenseRank: _NONE,
    exp.Lag: frozenset({"this", "offset", "default"}),
    exp.Lead: frozenset({"this", "offset", "default"}),
    exp.FirstValue: _ONE, exp.LastValue: _ONE,
    exp.Ntile: _ONE,
}

_ARG_NAMES = {
    (exp.Star, "except_"): "SELECT * EXCLUDE (...)",
    (exp.Star, "replace"): "SELECT * REPLACE (...)",
    (exp.Star, "rename"): "SELECT * RENAME (...)",
    (exp.Star, "ilike"): "SELECT * ILIKE ...",
    (exp.Table, "sample"): "TABLESAMPLE",
    (exp.Select, "sample"): "USING SAMPLE",
    (exp.Table, "when"): "AT (...) (time travel)",
    (exp.Table, "db"): "qualified table names (schema.table)",
    (exp.Table, "catalog"): "qualified table names (catalog.schema.table)",
    (exp.LimitOptions, "with_ties"): "LIMIT ... WITH TIES",
    (exp.LimitOptions, "rows"): "FETCH ... ROWS",
    (exp.Select, "qualify"): "QUALIFY",
    (exp.Select, "windows"): "WINDOW clause (named windows)",
    (exp.Select, "laterals"): "LATERAL",
    (exp.Distinct, "on"): "DISTINCT ON",
    (exp.With, "recursive"): "WITH RECURSIVE",
    (exp.WindowSpec, "exclude"): "EXCLUDE in a window frame",
    (exp.Join, "using"): "JOIN ... USING",
    (exp.Group, "grouping_sets"): "GROUPING SETS",
    (exp.Group, "cube"): "CUBE",
    (exp.Group, "rollup"): "ROLLUP",
    (exp.TableAlias, "columns"): "column aliases on a table (AS t(a, b))",
    (exp.Like, "escape"): "LIKE ... ESCAPE",
    (exp.Order, "siblings"): "ORDER SIBLINGS BY",
}


def refusal(node: exp.Expression) -> str | None:
    """Why ``node`` alone is refused (its class or an argument set on it), or None."""
    allowed = ALLOWED.get(type(node))
    if allowed is None:
        return _class_name(node)
    for key, value in node.args.items():
        if key in allowed or not _is_set(value):
            continue
        return _ARG_NAMES.get((type(node), key)) or \
            f"{key.upper().rstrip('_').replace('_', ' ')} on {construct(node)}"
    return None


def check(tree: exp.Expression) -> None:
    """Refuse ``tree`` (a :class:`~hfq.errors.SqlError` naming the construct and where it
    starts) when any node is not on the allow-list; the first in the text is named."""
    found = [(n, why) for n in tree.walk()
             if isinstance(n, exp.Expression) and (why := refusal(n)) is not None]
    if not found:
        return
    node, why = min(found, key=lambda f: _order(f[0]))
    raise unsupported(node, why)


def _order(node: exp.Expression) -> tuple[int, int]:
    line, col = position(node)
    return (line or 10**9, col or 10**9)


def _is_set(value: Any) -> bool:
    return value is not None and value is not False and value != [] and value != ""


_CLASS_NAMES = {exp.GroupConcat: "aggregate string_agg() / group_concat() (its order is not "
                                  "defined; list(x ORDER BY y) is not supported either)",
                exp.ArrayAgg: "aggregate list() / array_agg()",
                exp.Mode: "aggregate mode() (ties are not defined)",
                exp.Unnest: "UNNEST", exp.Lateral: "LATERAL", exp.Values: "VALUES",
                exp.Insert: "INSERT statements (hfq's SQL reads only)",
                exp.Update: "UPDATE statements (hfq's SQL reads only)",
                exp.Delete: "DELETE statements (hfq's SQL reads only)",
                exp.Create: "CREATE statements (hfq's SQL reads only)",
                exp.Drop: "DROP statements (hfq's SQL reads only)",
                exp.Command: "this statement (only SELECT reads)"}


def _class_name(node: exp.Expression) -> str:
    named = _CLASS_NAMES.get(type(node))
    if named is not None:
        return named
    if isinstance(node, exp.Func) and isinstance(node.parent, exp.Table) and \
            node.arg_key == "this":
        name = node.name if isinstance(node, exp.Anonymous) else node.sql_name().lower()
        return f"table function {name}() in FROM (only tables of this database)"
    if isinstance(node, exp.Func) and not isinstance(node, exp.Anonymous):
        if isinstance(node, exp.AggFunc):
            return f"aggregate {node.sql_name().lower()}()"
        return construct(node)
    return construct(node)
