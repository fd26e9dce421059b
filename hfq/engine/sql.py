"""SQL (DuckDB/Postgres flavour) compiled to the engine's plan.

sqlglot parses the text (dialect ``duckdb``); this module turns the tree into the same
:class:`~hfq.engine.query.Query` the Python API builds, so both run the same way.  Semantics
follow DuckDB (the oracle the tests compare with): ``/`` gives a double, integers are widened to
64 bits before any arithmetic (``EXTRACT(HOUR FROM t) * 60 + EXTRACT(MINUTE FROM t)`` never
wraps), ``sum`` over no values is NULL, ``count(DISTINCT x)`` ignores NULL, NULLs sort last.
Anything not supported raises :class:`~hfq.errors.SqlError` naming the construct and its
line and column -- never a guess.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import itertools
import re
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, cast

import polars as pl
import sqlglot
from sqlglot import exp

from hfq.engine.exprs import bucket_expr, empty_lazy, parse_every
from hfq.engine.query import Query
from hfq.errors import QueryError, SqlError

__all__ = ["SqlCache", "compile_sql"]

Catalog = Callable[[str], Query]
"""A query over the table of that name (raises for an unknown table)."""


class SqlCache:
    """Compiled statements of one database, reused while every table they read is at the
    version it was compiled against (a repeated query skips parsing and planning)."""

    def __init__(self, size: int = 256) -> None:
        self.size = size
        self.entries: OrderedDict[str, tuple[Query, dict[str, Any]]] = OrderedDict()

    def get(self, text: str, version: Callable[[str], Any]) -> Query | None:
        hit = self.entries.get(text)
        if hit is None:
            return None
        query, seen = hit
        try:
            if any(version(name) != token for name, token in seen.items()):
                return None
        except QueryError:   # a table gone since
            return None
        self.entries.move_to_end(text)
        return query.fresh()

    def put(self, text: str, query: Query, seen: dict[str, Any]) -> None:
        self.entries[text] = (query, seen)
        self.entries.move_to_end(text)
        while len(self.entries) > self.size:
            self.entries.popitem(last=False)


def compile_sql(text: str, catalog: Catalog, *, cache: SqlCache | None = None,
                version: Callable[[str], Any] | None = None) -> Query:
    """The query of one SQL ``SELECT`` statement; tables come from ``catalog(name)``.

    With a ``cache`` and ``version(name)`` (the table's current ``(table_id, version)``), a
    statement compiled before against the same versions is reused."""
    if cache is None or version is None:
        return _compile(text, catalog)
    hit = cache.get(text, version)
    if hit is not None:
        return hit
    seen: dict[str, Any] = {}

    def tracked(name: str) -> Query:
        q = catalog(name)
        seen[name] = (q.source.manifest.table_id, q.source.manifest.version)
        return q

    query = _compile(text, tracked)
    cache.put(text, query, seen)
    return query.fresh()


def _compile(text: str, catalog: Catalog) -> Query:
    try:
        trees = sqlglot.parse(text, read="duckdb")
    except sqlglot.errors.ParseError as exc:
        err = exc.errors[0] if exc.errors else {}
        raise SqlError(f"SQL syntax error: {err.get('description', exc)}",
                       line=err.get("line"), column=err.get("col")) from exc
    except sqlglot.errors.TokenError as exc:
        raise SqlError(f"SQL syntax error: {exc}") from exc
    trees = [t for t in trees if t is not None]
    if len(trees) != 1:
        raise SqlError(f"expected one SQL statement, got {len(trees)}")
    tree = cast(exp.Expression, trees[0])
    if not isinstance(tree, (exp.Select, exp.Subquery)):
        raise _unsupported(tree, f"{tree.key.upper()} statements (only SELECT is supported)")
    return _Compiler(catalog, {}).select(tree)


# -- errors -----------------------------------------------------------------------------------
def _position(node: Any) -> tuple[int | None, int | None]:
    """Where ``node`` starts in the text: the first token under it that sqlglot placed."""
    if not isinstance(node, exp.Expression):
        return None, None
    found = []
    for n in node.walk():
        meta = getattr(n, "meta", None) or {}
        if "line" in meta:   # sqlglot records where a token ends
            width = len(str(n.this or "")) if isinstance(n, (exp.Identifier, exp.Literal)) \
                else len(n.name or "")
            found.append((meta["line"], max(1, meta["col"] - width + 1)))
    if found:
        return min(found)
    parent = node.parent
    return _position(parent) if parent is not None and parent is not node else (None, None)


def _error(node: Any, message: str) -> SqlError:
    line, col = _position(node)
    return SqlError(message, line=line, column=col)


def _unsupported(node: Any, what: str | None = None) -> SqlError:
    name = what or _construct(node)
    return _error(node, f"unsupported SQL: {name}")


def _construct(node: Any) -> str:
    if isinstance(node, exp.Anonymous):
        return f"function {node.name}()"
    if isinstance(node, exp.Func):
        return f"function {node.sql_name().lower()}()"
    return str(getattr(node, "key", "?")).upper().replace("_", " ")


# -- scopes -----------------------------------------------------------------------------------
@dataclass
class _Scope:
    """Names visible in a query: column name -> frame column, per qualifier."""

    query: Query
    qualifiers: dict[str, dict[str, str]] = field(default_factory=dict)

    def columns(self) -> list[str]:
        return [c for c in self.query.columns if not c.startswith("__")]

    def resolve(self, col: exp.Column) -> str:
        name, qual = col.name, col.table
        if qual:
            cols = self.qualifiers.get(qual)
            if cols is None:
                raise _error(col, f"unknown table or alias {qual!r} in {col.sql()}; known: "
                                  f"{', '.join(self.qualifiers) or '(none)'}")
            if name not in cols:
                raise _error(col, f"unknown column {col.sql()!r}; columns of {qual}: "
                                  f"{', '.join(cols)}")
            return cols[name]
        hits = {cols[name] for cols in self.qualifiers.values() if name in cols}
        if not self.qualifiers and name in self.query.columns:
            return name
        if len(hits) > 1:
            raise _error(col, f"column {name!r} is ambiguous; qualify it "
                              f"({', '.join(q for q, c in self.qualifiers.items() if name in c)})")
        if not hits:
            raise _error(col, f"unknown column {name!r}; columns: {', '.join(self.columns())}")
        return hits.pop()


_AGGS = (exp.Count, exp.Sum, exp.Avg, exp.Min, exp.Max, exp.Stddev, exp.StddevPop,
         exp.StddevSamp, exp.Variance, exp.VariancePop, exp.First, exp.Last, exp.ArgMax,
         exp.ArgMin, exp.Median, exp.Quantile, exp.AnyValue, exp.PercentileCont,
         exp.PercentileDisc, exp.GroupConcat, exp.ArrayAgg)
_AGG_NAMES = {"quantile_cont", "quantile_disc", "first", "last", "arg_max", "arg_min",
              "max_by", "min_by", "median", "mode", "stddev_samp", "stddev_pop", "var_samp",
              "var_pop", "count_star", "wavg", "first_value_agg"}


def _is_agg(node: exp.Expression) -> bool:
    if isinstance(node, exp.Window):
        return False
    if isinstance(node, _AGGS):
        return True
    return isinstance(node, exp.Anonymous) and node.name.lower() in _AGG_NAMES


def _has_agg(node: exp.Expression) -> bool:
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, (exp.Subquery, exp.Select)) and n is not node:
            continue
        if isinstance(n, exp.Window):
            continue
        if _is_agg(n):
            return True
        stack.extend(n.iter_expressions())
    return False


_TEMPORAL_TYPES = {
    exp.DataType.Type.DATE: pl.Date, exp.DataType.Type.TIME: pl.Time,
    exp.DataType.Type.TIMESTAMP: pl.Datetime("us"), exp.DataType.Type.DATETIME: pl.Datetime("us"),
    exp.DataType.Type.TIMESTAMPNTZ: pl.Datetime("us"),
    exp.DataType.Type.TIMESTAMPTZ: pl.Datetime("us", "UTC")}
_CAST_TYPES: dict[Any, Any] = {
    exp.DataType.Type.TINYINT: pl.Int64, exp.DataType.Type.SMALLINT: pl.Int64,
    exp.DataType.Type.INT: pl.Int64, exp.DataType.Type.BIGINT: pl.Int64,
    exp.DataType.Type.DOUBLE: pl.Float64, exp.DataType.Type.FLOAT: pl.Float64,
    exp.DataType.Type.DECIMAL: pl.Float64, exp.DataType.Type.VARCHAR: pl.String,
    exp.DataType.Type.TEXT: pl.String, exp.DataType.Type.CHAR: pl.String,
    exp.DataType.Type.BOOLEAN: pl.Boolean, **_TEMPORAL_TYPES}
_PARTS = {"year": "year", "month": "month", "day": "day", "hour": "hour", "minute": "minute",
          "second": "second", "millisecond": "millisecond", "microsecond": "microsecond",
          "quarter": "quarter", "week": "week", "dow": "weekday", "doy": "ordinal_day",
          "dayofweek": "weekday", "dayofyear": "ordinal_day", "isodow": "weekday",
          "epoch": "epoch"}
_TRUNC = {"second": "1s", "minute": "1m", "hour": "1h", "day": "1d", "week": "1w",
          "month": "1mo", "quarter": "1q", "year": "1y", "millisecond": "1ms"}
_INTERVAL_UNITS = {"nanosecond": "ns", "microsecond": "us", "millisecond": "ms", "second": "s",
                   "minute": "m", "hour": "h", "day": "d", "week": "w"}


def _interval_ns(node: exp.Expression) -> int:
    """An INTERVAL literal as nanoseconds (days and finer)."""
    if not isinstance(node, exp.Interval):
        raise _error(node, f"expected an INTERVAL, got {node.sql()!r}")
    text = node.this.name if node.this is not None else ""
    unit = node.unit.name if node.unit is not None else ""
    if not unit:
        m = re.match(r"^\s*(\d+)\s*([a-zA-Z]+)\s*$", text)
        if not m:
            raise _error(node, f"interval {node.sql()!r}: use e.g. INTERVAL '5 minutes'")
        text, unit = m.group(1), m.group(2)
    key = unit.lower().rstrip("s") if unit.lower() not in ("s", "ms", "us", "ns") else unit
    short = _INTERVAL_UNITS.get(key, key)
    if short == "w":
        return int(text) * 7 * 86400 * 10**9
    try:
        return parse_every(f"{int(text)}{short}")
    except (QueryError, ValueError) as exc:
        raise _error(node, f"interval {node.sql()!r}: {exc}") from None


class _Compiler:
    def __init__(self, catalog: Catalog, ctes: dict[str, Query]) -> None:
        self.catalog = catalog
        self.ctes = dict(ctes)
        self.counter = itertools.count()

    # -- statements -----------------------------------------------------------------------
    def select(self, node: exp.Expression) -> Query:
        if isinstance(node, exp.Subquery):
            return self.select(node.this)
        if not isinstance(node, exp.Select):
            raise _unsupported(node, f"{node.key.upper()} (set operations and VALUES are not "
                                     "supported)")
        for key in ("windows", "qualify", "laterals", "into", "locks", "sample", "settings",
                    "connect", "prewhere", "cluster", "distribute", "sort"):
            if node.args.get(key):
                raise _unsupported(node.args[key] if isinstance(node.args[key], exp.Expression)
                                   else node, key.upper())
        with_ = node.args.get("with_") or node.args.get("with")
        if with_ is not None:
            if with_.args.get("recursive"):
                raise _unsupported(with_, "WITH RECURSIVE")
            for cte in with_.expressions:
                self.ctes[cte.alias_or_name] = _Compiler(self.catalog, self.ctes).select(
                    cte.this)
        from_ = node.args.get("from_") or node.args.get("from")
        if from_ is None:
            raise _error(node, "a SELECT needs FROM a table")
        scope = self.source(from_.this)
        for join in node.args.get("joins") or []:
            scope = self.join(scope, join)
        where = node.args.get("where")
        if where is not None:
            if _has_agg(where.this):
                raise _error(where, "aggregates are not allowed in WHERE (use HAVING)")
            predicate = self.expr(where.this, scope)
            with _at(where):
                scope.query = scope.query.filter(predicate)
        return self.project(node, scope)

    def source(self, node: exp.Expression) -> _Scope:
        if isinstance(node, exp.Table):
            if node.args.get("pivots"):
                return self.pivot(node)
            name = node.name
            if node.args.get("db") or node.args.get("catalog"):
                raise _unsupported(node, "qualified table names (schema.table)")
            if name in self.ctes:
                q = self.ctes[name]
            else:
                try:
                    q = self.catalog(name)
                except QueryError as exc:
                    raise _error(node, str(exc)) from exc
            alias = node.alias_or_name
            return _Scope(q, {alias: {c: c for c in q.columns}})
        if isinstance(node, exp.Subquery):
            if node.args.get("pivots"):
                return self.pivot(node)
            q = _Compiler(self.catalog, self.ctes).select(node.this)
            alias = node.alias_or_name
            return _Scope(q, {alias: {c: c for c in q.columns}} if alias else {})
        raise _unsupported(node, f"{node.key.upper()} in FROM")

    def join(self, scope: _Scope, join: exp.Join) -> _Scope:
        from hfq.engine.sql_joins import compile_join
        return compile_join(self, scope, join)

    def pivot(self, node: exp.Table | exp.Subquery) -> _Scope:
        from hfq.engine.sql_joins import compile_pivot
        return compile_pivot(self, node)

    # -- SELECT list, GROUP BY, HAVING, ORDER BY, LIMIT -----------------------------------
    def project(self, node: exp.Select, scope: _Scope) -> Query:
        items: list[tuple[str, exp.Expression]] = []
        for e in node.expressions:
            if isinstance(e, exp.Star) or (isinstance(e, exp.Column) and
                                           isinstance(e.this, exp.Star)):
                if isinstance(e, exp.Column) and e.table:
                    cols = scope.qualifiers.get(e.table)
                    if cols is None:
                        raise _error(e, f"unknown table or alias {e.table!r}")
                    items += [(c, exp.column(c, e.table)) for c in cols]
                else:
                    items += [(c, exp.column(c)) for c in scope.columns()]
                continue
            items.append((e.alias_or_name if isinstance(e, exp.Alias) else
                          (e.name if isinstance(e, exp.Column) else e.sql("duckdb")),
                          e.this if isinstance(e, exp.Alias) else e))
        names = _dedupe([n for n, _ in items])
        group = node.args.get("group")
        having = node.args.get("having")
        order = node.args.get("order")
        aggregate = group is not None or having is not None or \
            any(_has_agg(e) for _, e in items)
        q = scope.query
        if aggregate:
            q, post = self.aggregate(node, scope, items, names)
        else:
            post = _Post(scope, {}, {}, self)
        # windows are computed before the projection (they see every row)
        outputs: list[pl.Expr] = []
        for name, (_, e) in zip(names, items):
            outputs.append(post.expr(e).alias(name))
        if having is not None:
            predicate = post.expr(having.this)
            with _at(having):
                q = q.filter(predicate)
        hidden: list[pl.Expr] = []
        sort_keys: list[tuple[str, bool, bool]] = []
        if order is not None:
            for i, o in enumerate(order.expressions):
                target = self.order_target(o.this, names, items, post)
                if isinstance(target, str):
                    key = target
                else:
                    key = f"__o{i}"
                    hidden.append(target.alias(key))
                desc = bool(o.args.get("desc"))
                nulls_first = o.args.get("nulls_first")
                sort_keys.append((key, desc, not nulls_first if nulls_first is not None
                                  else True))
        with _at(node):
            q = q.select(*outputs, *hidden)
        if node.args.get("distinct") is not None:
            if node.args["distinct"].args.get("on"):
                raise _unsupported(node.args["distinct"], "DISTINCT ON")
            if hidden:
                raise _error(order, "with SELECT DISTINCT, ORDER BY expressions must appear "
                                    "in the select list")
            q = q.unique()
        if sort_keys:
            q = q.sort([k for k, _, _ in sort_keys], descending=[d for _, d, _ in sort_keys],
                       nulls_last=[n for _, _, n in sort_keys])
        limit, offset = node.args.get("limit"), node.args.get("offset")
        if limit is not None or offset is not None:
            n = self.count_of(limit.expression if limit is not None else None, "LIMIT")
            off = self.count_of(offset.expression if offset is not None else None, "OFFSET")
            q = q.slice(off or 0, n)
        if hidden:
            q = q.select(*names)
        return q

    def count_of(self, node: exp.Expression | None, what: str) -> int | None:
        if node is None:
            return None
        if isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit():
            return int(node.this)
        raise _error(node, f"{what} takes a non-negative integer literal")

    def order_target(self, e: exp.Expression, names: list[str],
                     items: list[tuple[str, exp.Expression]], post: _Post) -> str | pl.Expr:
        if isinstance(e, exp.Literal) and not e.is_string:
            k = int(e.this)
            if not 1 <= k <= len(names):
                raise _error(e, f"ORDER BY {k}: the select list has {len(names)} items")
            return names[k - 1]
        if isinstance(e, exp.Column) and not e.table and e.name in names:
            return e.name
        for name, (_, item) in zip(names, items):
            if item == e:
                return name
        return post.expr(e)

    def aggregate(self, node: exp.Select, scope: _Scope, items: list[tuple[str, Any]],
                  names: list[str]) -> tuple[Query, _Post]:
        group = node.args.get("group")
        keys: list[pl.Expr] = []
        key_nodes: dict[exp.Expression, str] = {}
        key_cols: dict[str, str] = {}
        if group is not None:
            groups = list(group.expressions)
            if group.args.get("all"):   # GROUP BY ALL: every select item without aggregates
                groups = [exp.Literal.number(i + 1) for i, (_, e) in enumerate(items)
                          if not _has_agg(e)]
            for g in groups:
                if isinstance(g, exp.Literal) and not g.is_string:
                    k = int(g.this)
                    if not 1 <= k <= len(items):
                        raise _error(g, f"GROUP BY {k}: the select list has {len(items)} items")
                    g_expr, name = items[k - 1][1], names[k - 1]
                elif isinstance(g, exp.Column) and not g.table and g.name in names and \
                        g.name not in scope.query.columns:
                    i = names.index(g.name)
                    g_expr, name = items[i][1], names[i]
                else:
                    g_expr = g
                    name = next((n for n, (_, e) in zip(names, items) if e == g), "") or \
                        f"__k{len(keys)}"
                if _has_agg(g_expr):
                    raise _error(g, "aggregates are not allowed in GROUP BY")
                key = _Plain(scope, self).expr(g_expr)
                keys.append(key.alias(name))
                key_nodes[g_expr] = name
                if isinstance(g_expr, exp.Column):
                    key_cols[scope.resolve(g_expr)] = name
        post = _Post(scope, key_nodes, key_cols, self)
        # collect every aggregate call in the select list, HAVING and ORDER BY
        exprs = [e for _, e in items]
        if node.args.get("having") is not None:
            exprs.append(node.args["having"].this)
        if node.args.get("order") is not None:
            exprs += [o.this for o in node.args["order"].expressions]
        for e in exprs:
            for call in _agg_calls(e):
                post.register(call)
        if not post.aggs and not keys:
            raise _error(node, "nothing to aggregate")
        aggs = [a.alias(n) for n, a in post.aggs.values()]
        q = scope.query
        with _at(group if group is not None else node):
            if keys:
                q = q.group_by(*keys).agg(*(aggs or [pl.len().alias("__n")]))
            else:
                q = q.agg(*aggs)
        post.scope = _Scope(q, {})
        post.aggregated = True
        return q, post

    # -- expressions ----------------------------------------------------------------------
    def expr(self, node: exp.Expression, scope: _Scope) -> pl.Expr:
        return _Plain(scope, self).expr(node)

    def subquery_values(self, node: exp.Expression) -> list[Any]:
        q = _Compiler(self.catalog, self.ctes).select(node)
        if len(q.columns) != 1:
            raise _error(node, f"a subquery in IN must return one column, not "
                               f"{len(q.columns)}")
        return q.collect().to_series().to_list()


@contextlib.contextmanager
def _at(node: exp.Expression | None) -> Iterator[None]:
    """Errors of building the plan (unknown columns, type errors) point at ``node``."""
    try:
        yield
    except SqlError:
        raise
    except QueryError as exc:
        raise _error(node, str(exc)) from exc


def _name(node: exp.Expression) -> str:
    if isinstance(node, exp.Func) and not isinstance(node, exp.Anonymous):
        return node.sql_name().lower()
    return node.name.lower()


def _args(node: exp.Expression) -> list[exp.Expression]:
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


def _dedupe(names: list[str]) -> list[str]:
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


def _agg_calls(node: exp.Expression) -> list[exp.Expression]:
    out: list[exp.Expression] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, (exp.Subquery, exp.Select, exp.Window)):
            if isinstance(n, exp.Window):
                stack.extend(_agg_calls_in_window(n))
            continue
        if _is_agg(n):
            out.append(n)
            continue
        stack.extend(n.iter_expressions())
    return out


def _agg_calls_in_window(node: exp.Window) -> list[exp.Expression]:
    """Aggregates inside a window's arguments (``sum(sum(x)) OVER ()``) are group-level."""
    inner = node.this
    return list(inner.iter_expressions()) if _is_agg(inner) else [inner]


# -- expression compilers -----------------------------------------------------------------------
class _Plain:
    """Row-level expressions over a scope (no aggregates)."""

    aggregated = False

    def __init__(self, scope: _Scope, compiler: _Compiler) -> None:
        self.scope = scope
        self.compiler = compiler
        self.windows: list[pl.Expr] = []

    # subclasses override how columns and aggregates are read
    def column(self, node: exp.Column) -> pl.Expr:
        name = self.scope.resolve(node)
        dtype = self.scope.query.schema[name]
        col = pl.col(name)
        if dtype.is_integer() and dtype != pl.Int64:
            col = col.cast(pl.Int64)   # arithmetic never wraps
        return col

    def aggregate(self, node: exp.Expression) -> pl.Expr:
        raise _error(node, f"aggregate {node.sql('duckdb')} is not allowed here")

    def dtype(self, e: pl.Expr) -> pl.DataType:
        try:
            return empty_lazy(self.scope.query.schema).select(
                e.alias("_")).collect_schema()["_"]
        except pl.exceptions.PolarsError:
            return pl.Null()

    def expr(self, node: exp.Expression) -> pl.Expr:
        if _is_agg(node):
            return self.aggregate(node)
        method = getattr(self, f"_{type(node).__name__}", None)
        if method is None:
            if isinstance(node, exp.Anonymous) or isinstance(node, exp.Func):
                return self.function(node)
            raise _unsupported(node)
        return method(node)

    def exprs(self, nodes: list[exp.Expression]) -> list[pl.Expr]:
        return [self.expr(n) for n in nodes]

    # leaves
    def _Column(self, node: exp.Column) -> pl.Expr:
        if isinstance(node.this, exp.Star):
            raise _error(node, "* is only allowed in the select list and count(*)")
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

    # arithmetic and comparisons
    def _binary(self, node: exp.Binary) -> tuple[pl.Expr, pl.Expr]:
        left, right = self.expr(node.this), self.expr(node.expression)
        return self.coerce(left, right, node)

    def coerce(self, left: pl.Expr, right: pl.Expr, node: Any) -> tuple[pl.Expr, pl.Expr]:
        """A string literal compared with a date/time becomes that type (as in DuckDB)."""
        lt, rt = self.dtype(left), self.dtype(right)
        if lt.is_temporal() and rt == pl.String:
            return left, _parse_temporal(right, lt, node)
        if rt.is_temporal() and lt == pl.String:
            return _parse_temporal(left, rt, node), right
        if _kind(lt) and _kind(rt) and _kind(lt) != _kind(rt):
            sides = node.this, node.expression
            raise _error(node, f"type mismatch in {node.sql('duckdb')!r}: "
                               f"{sides[0].sql('duckdb')} is {_kind(lt)}, "
                               f"{sides[1].sql('duckdb')} is {_kind(rt)}")
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
        raise _unsupported(node, "IS other than IS [NOT] NULL")

    def _Between(self, node: exp.Between) -> pl.Expr:
        value = self.expr(node.this)
        value, lo = self.coerce(value, self.expr(node.args["low"]), node)
        value, hi = self.coerce(value, self.expr(node.args["high"]), node)
        return (value >= lo) & (value <= hi)

    def _In(self, node: exp.In) -> pl.Expr:
        value = self.expr(node.this)
        if node.args.get("query") is not None:
            values = self.compiler.subquery_values(node.args["query"].this)
            return value.is_in(pl.Series(values, strict=False).drop_nulls().implode())
        if node.args.get("unnest") or node.args.get("field"):
            raise _unsupported(node, "IN UNNEST")
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
            raise _error(pattern, "LIKE takes a string literal pattern")
        if node.args.get("escape") is not None:
            raise _unsupported(node, "LIKE ... ESCAPE")
        regex = "^" + "".join(".*" if ch == "%" else "." if ch == "_" else re.escape(ch)
                              for ch in pattern.this) + "$"
        if not case:
            regex = "(?is)" + regex
        else:
            regex = "(?s)" + regex
        value = self.expr(node.this)
        test = _like_categorical(value, pattern.this) if case and isinstance(
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

    def _If(self, node: exp.If) -> pl.Expr:
        return pl.when(self.expr(node.this)).then(self.expr(node.args["true"])).otherwise(
            self.expr(node.args["false"]) if node.args.get("false") is not None
            else pl.lit(None))

    def _Coalesce(self, node: exp.Coalesce) -> pl.Expr:
        return pl.coalesce(self.exprs([node.this, *node.expressions]))

    def _Cast(self, node: exp.Cast) -> pl.Expr:
        to = node.to.this
        inner = node.this
        target = _CAST_TYPES.get(to)
        if target is None:
            raise _unsupported(node, f"CAST to {node.to.sql('duckdb')}")
        if isinstance(inner, exp.Literal) and inner.is_string and to in _TEMPORAL_TYPES:
            return pl.lit(_parse_literal(inner.this, target, node), dtype=target)
        value = self.expr(inner)
        if target == pl.String:
            return value.cast(pl.String)
        if target in (pl.Int64,) and self.dtype(value).is_float():
            return value.round(0).cast(pl.Int64)   # DuckDB rounds floats to integers
        return value.cast(target)

    _TryCast = _Cast

    def _Log(self, node: exp.Log) -> pl.Expr:
        if node.expression is None:   # DuckDB's log(x) is base 10
            return self.expr(node.this).cast(pl.Float64).log10()
        base = node.this
        if not (isinstance(base, exp.Literal) and not base.is_string):
            raise _error(base, "log(base, x) takes a numeric literal base")
        return self.expr(node.expression).cast(pl.Float64).log(float(base.this))

    def _TimeToUnix(self, node: exp.Expression) -> pl.Expr:
        return self.part("epoch", self.expr(node.this), node)

    def _Interval(self, node: exp.Interval) -> pl.Expr:
        return pl.lit(dt.timedelta(microseconds=_interval_ns(node) / 1000))

    # time
    def _Extract(self, node: exp.Extract) -> pl.Expr:
        return self.part(node.this.name, self.expr(node.expression), node)

    def part(self, name: str, value: pl.Expr, node: exp.Expression) -> pl.Expr:
        key = _PARTS.get(name.lower())
        if key is None:
            raise _error(node, f"unsupported date part {name!r}; use one of "
                               f"{', '.join(sorted(_PARTS))}")
        if key == "epoch":
            dtype = self.dtype(value)
            if isinstance(dtype, pl.Time):
                return value.to_physical().cast(pl.Float64) / 1e9
            return value.dt.epoch("us").cast(pl.Float64) / 1e6
        out = getattr(value.dt, key)()
        if key == "second":
            out = value.dt.second()
        return out.cast(pl.Int64)

    def _Year(self, node: exp.Expression) -> pl.Expr:
        return self.part("year", self.expr(node.this), node)

    def _Month(self, node: exp.Expression) -> pl.Expr:
        return self.part("month", self.expr(node.this), node)

    def _Day(self, node: exp.Expression) -> pl.Expr:
        return self.part("day", self.expr(node.this), node)

    def _Hour(self, node: exp.Expression) -> pl.Expr:
        return self.part("hour", self.expr(node.this), node)

    def _Minute(self, node: exp.Expression) -> pl.Expr:
        return self.part("minute", self.expr(node.this), node)

    def _Second(self, node: exp.Expression) -> pl.Expr:
        return self.part("second", self.expr(node.this), node)

    def _DayOfWeek(self, node: exp.Expression) -> pl.Expr:
        return self.part("dow", self.expr(node.this), node) % 7

    def _TimestampTrunc(self, node: exp.TimestampTrunc) -> pl.Expr:
        return self.trunc(node.args["unit"].name, self.expr(node.this), node)

    _DateTrunc = _TimestampTrunc

    def trunc(self, unit: str, value: pl.Expr, node: exp.Expression) -> pl.Expr:
        every = _TRUNC.get(unit.lower().strip("'"))
        if every is None:
            raise _error(node, f"date_trunc unit {unit!r}: use one of {', '.join(_TRUNC)}")
        dtype = self.dtype(value)
        if isinstance(dtype, pl.Time):
            return bucket_expr(value, parse_every(every), 0, dtype)
        out = value.dt.truncate(every)
        return out.cast(pl.Datetime("us")) if isinstance(dtype, pl.Date) else out

    def _DateBin(self, node: exp.DateBin) -> pl.Expr:
        # sqlglot keeps DuckDB's third argument (origin or offset) under "unit"
        third = node.args.get("origin") or node.args.get("unit") or node.args.get("zone")
        return self.time_bucket(node.this, node.expression, third, node)

    def time_bucket(self, width: exp.Expression, col: exp.Expression,
                    origin: exp.Expression | None, node: exp.Expression) -> pl.Expr:
        every = _interval_ns(width)
        value = self.expr(col)
        dtype = self.dtype(value)
        anchor = 0
        if origin is not None:
            if isinstance(origin, exp.Interval):
                anchor = _interval_ns(origin)
            else:
                lit = pl.select(self.expr(origin)).item()
                if isinstance(lit, dt.datetime):
                    lit = lit.time()
                if not isinstance(lit, dt.time):
                    raise _error(origin, "time_bucket's origin must be a TIME, TIMESTAMP or "
                                         "INTERVAL literal")
                anchor = ((lit.hour * 60 + lit.minute) * 60 + lit.second) * 10**9
        try:
            out = bucket_expr(value, every, anchor, dtype)
        except QueryError as exc:
            raise _error(node, f"time_bucket: {exc}") from None
        return out

    def function(self, node: exp.Expression) -> pl.Expr:
        name = _name(node)
        args = _args(node)
        simple: dict[str, Callable[..., pl.Expr]] = {
            "abs": pl.Expr.abs, "sqrt": pl.Expr.sqrt, "exp": pl.Expr.exp,
            "ln": pl.Expr.log, "log10": pl.Expr.log10, "floor": pl.Expr.floor,
            "ceil": pl.Expr.ceil, "ceiling": pl.Expr.ceil, "sign": pl.Expr.sign,
            "lower": lambda e: e.cast(pl.String).str.to_lowercase(),
            "upper": lambda e: e.cast(pl.String).str.to_uppercase(),
            "length": lambda e: e.cast(pl.String).str.len_chars().cast(pl.Int64),
            "trim": lambda e: e.cast(pl.String).str.strip_chars(),
        }
        if name in simple and len(args) == 1:
            return simple[name](self.expr(args[0]))
        if name == "round":
            digits = self.compiler.count_of(args[1], "round") if len(args) > 1 else 0
            return self.expr(args[0]).round(digits or 0)
        if name in ("pow", "power"):
            return self.expr(args[0]).cast(pl.Float64).pow(self.expr(args[1]))
        if name in ("greatest", "least"):
            fn = pl.max_horizontal if name == "greatest" else pl.min_horizontal
            return fn(self.exprs(args))
        if name in ("substr", "substring"):
            start = self.expr(args[1])
            length = self.expr(args[2]) if len(args) > 2 else None
            return self.expr(args[0]).cast(pl.String).str.slice(start - 1, length)
        if name == "concat":
            return pl.concat_str([e.cast(pl.String) for e in self.exprs(args)],
                                 ignore_nulls=True)
        if name in ("date_part", "datepart") and len(args) == 2:
            if not (isinstance(args[0], exp.Literal) and args[0].is_string):
                raise _error(args[0], "date_part takes a string literal part")
            return self.part(args[0].this, self.expr(args[1]), node)
        if name == "date_trunc" and len(args) == 2:
            return self.trunc(args[0].name, self.expr(args[1]), node)
        if name == "time_bucket" and len(args) in (2, 3):
            return self.time_bucket(args[0], args[1], args[2] if len(args) == 3 else None,
                                    node)
        if name in ("minute_of_day",) and len(args) == 1:
            v = self.expr(args[0])
            return v.dt.hour().cast(pl.Int64) * 60 + v.dt.minute().cast(pl.Int64)
        if name == "epoch" and len(args) == 1:
            return self.part("epoch", self.expr(args[0]), node)
        if name in ("isnan",):
            return self.expr(args[0]).is_nan()
        raise _unsupported(node)

    # windows
    def _Window(self, node: exp.Window) -> pl.Expr:
        from hfq.engine.sql_window import window_expr
        return window_expr(self, node)

    def _Subquery(self, node: exp.Subquery) -> pl.Expr:
        values = self.compiler.subquery_values(node.this)
        if len(values) > 1:
            raise _error(node, "a scalar subquery returned more than one row")
        return pl.lit(values[0] if values else None)

    def _Star(self, node: exp.Star) -> pl.Expr:
        raise _error(node, "* is only allowed in the select list and count(*)")


class _Post(_Plain):
    """Expressions after GROUP BY: keys by name, aggregates by their computed column."""

    def __init__(self, scope: _Scope, key_nodes: dict[exp.Expression, str],
                 key_cols: dict[str, str], compiler: _Compiler) -> None:
        super().__init__(scope, compiler)
        self.input = scope
        self.key_nodes = key_nodes
        self.key_cols = key_cols
        self.aggs: dict[exp.Expression, tuple[str, pl.Expr]] = {}
        self.aggregated = False

    def register(self, node: exp.Expression) -> None:
        if node not in self.aggs:
            self.aggs[node] = (f"__agg{len(self.aggs)}", _Agg(self.input, self.compiler)
                               .call(node))

    def expr(self, node: exp.Expression) -> pl.Expr:
        if not self.aggregated:
            return super().expr(node)
        for key, name in self.key_nodes.items():
            if key == node:
                return pl.col(name)
        if _is_agg(node):
            if node not in self.aggs:
                raise _error(node, f"aggregate {node.sql('duckdb')} is not allowed here")
            return pl.col(self.aggs[node][0])
        return super().expr(node)

    def column(self, node: exp.Column) -> pl.Expr:
        if not self.aggregated:
            return super().column(node)
        name = self.input.resolve(node)
        if name in self.key_cols:
            return pl.col(self.key_cols[name])
        raise _error(node, f"column {node.sql()!r} must appear in GROUP BY or be used in an "
                           "aggregate function")


class _Agg(_Plain):
    """Aggregate calls over the input rows."""

    def call(self, node: exp.Expression) -> pl.Expr:
        name = _name(node)
        args = _args(node)
        if isinstance(node, exp.Count):
            inner = node.this
            if inner is None or isinstance(inner, exp.Star):
                return pl.len().cast(pl.Int64)
            if isinstance(inner, exp.Distinct):
                if len(inner.expressions) != 1:
                    raise _unsupported(node, "count(DISTINCT) of several columns")
                return self.expr(inner.expressions[0]).drop_nulls().n_unique().cast(pl.Int64)
            return self.expr(inner).count().cast(pl.Int64)
        if args and isinstance(args[0], exp.Distinct):
            raise _unsupported(node, f"{name}(DISTINCT ...)")
        order = None
        if args and isinstance(args[0], exp.Order):
            order = args[0]
            args = [order.this, *args[1:]]
        values = [self.expr(a) for a in args]
        x = values[0] if values else None
        if x is None:
            raise _error(node, f"{name}() needs an argument")
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
                raise _error(node, f"{name}(value, key) takes two arguments")
            by = values[1]
            return x.max_by(by) if name in ("arg_max", "max_by") or \
                isinstance(node, exp.ArgMax) else x.min_by(by)
        if name in ("quantile_cont", "quantile_disc") or isinstance(
                node, (exp.Quantile, exp.PercentileCont, exp.PercentileDisc)):
            name = "quantile_disc" if isinstance(node, exp.PercentileDisc) else name
            if len(args) != 2 or not isinstance(args[1], exp.Literal) or args[1].is_string:
                raise _error(node, f"{name}(x, q) takes a numeric literal q")
            q = float(args[1].this)
            method = "linear" if name != "quantile_disc" else "lower"
            return x.quantile(q, method)   # type: ignore[arg-type]
        if name == "wavg":   # kdb+'s wavg[w; x]
            if len(values) != 2:
                raise _error(node, "wavg(weight, value) takes two arguments")
            w, v = values
            both = v.is_not_null() & w.is_not_null()
            return (w * v).filter(both).sum() / w.filter(both).sum()
        raise _unsupported(node, f"aggregate {name}()")


def _like_categorical(value: pl.Expr, pattern: str) -> pl.Expr | None:
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


def _kind(dtype: pl.DataType) -> str:
    """The family of a type for SQL's type checks ("" when unknown or null)."""
    if dtype == pl.String or isinstance(dtype, (pl.Categorical, pl.Enum)):
        return "text"
    if dtype.is_numeric():
        return "a number"
    if dtype == pl.Boolean:
        return "a boolean"
    if dtype.is_temporal():
        return "a date/time"
    return ""


def _parse_literal(text: str, dtype: Any, node: exp.Expression) -> Any:
    try:
        if dtype == pl.Date:
            return dt.date.fromisoformat(text.strip())
        if dtype == pl.Time:
            return dt.time.fromisoformat(text.strip())
        value = dt.datetime.fromisoformat(text.strip())
        if isinstance(dtype, pl.Datetime) and dtype.time_zone and value.tzinfo is None:
            value = value.replace(tzinfo=dt.timezone.utc)
        return value
    except ValueError:
        raise _error(node, f"{text!r} is not a valid {dtype} literal") from None


def _parse_temporal(lit: pl.Expr, dtype: pl.DataType, node: exp.Expression) -> pl.Expr:
    try:
        text = pl.select(lit).item()
    except pl.exceptions.PolarsError:
        return lit
    if not isinstance(text, str):
        return lit
    target: Any = dtype
    value = _parse_literal(text, pl.Datetime("us", getattr(dtype, "time_zone", None))
                           if isinstance(dtype, pl.Datetime) else target, node)
    if isinstance(dtype, pl.Datetime):
        return pl.lit(value).cast(dtype)
    return pl.lit(value, dtype=target)


