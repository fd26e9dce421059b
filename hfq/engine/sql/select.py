"""SELECT statements: FROM and joins, WHERE, GROUP BY, HAVING, the select list, ORDER BY,
LIMIT/OFFSET, DISTINCT, CTEs and subqueries in FROM -- compiled to one
:class:`~hfq.engine.query.Query`."""

from __future__ import annotations

import itertools
from typing import Any

import polars as pl
from sqlglot import exp

from hfq.engine.exprs import every_row, is_rowwise, may_raise, to_tree
from hfq.engine.query import FrameSource, Query
from hfq.engine.rowid import ROWID
from hfq.engine.sql import pushdown, subqueries
from hfq.engine.sql.aggregates import Agg, reads_no_column
from hfq.engine.sql.errors import at, error, unsupported
from hfq.engine.sql.expressions import Plain
from hfq.engine.sql.joins import compile_join
from hfq.engine.sql.literals import count_of
from hfq.engine.sql.pivot import compile_pivot, pivot_statement
from hfq.engine.sql.scope import Catalog, Compiles, Env, Scope
from hfq.engine.sql.setops import compile_setop
from hfq.engine.sql.star import items_of
from hfq.engine.sql.syntax import agg_calls, dedupe, has_agg, is_agg
from hfq.errors import QueryError

__all__ = ["Compiler", "Post"]


class Compiler:
    """Compiles SELECT statements against a catalog (the :class:`~hfq.engine.sql.scope.Env`
    the rules call back into)."""

    def __init__(self, catalog: Catalog, ctes: dict[str, Query], *,
                 derived: bool = False) -> None:
        self.catalog = catalog
        self.ctes = dict(ctes)
        self.counter = itertools.count()
        #: compiling a CTE or a subquery in FROM: its items that can raise are evaluated on
        #: all its rows (F93), as DuckDB's plan does -- polars would push an outer filter
        #: below them and skip the rows it drops
        self.derived = derived

    # -- statements -----------------------------------------------------------------------
    def select(self, node: exp.Expression) -> Query:
        if isinstance(node, exp.Subquery):
            return self.select(node.this)
        with_ = node.args.get("with_")
        if with_ is not None:
            for cte in with_.expressions:
                self.ctes[cte.alias_or_name] = Compiler(self.catalog, self.ctes,
                                                        derived=True).select(cte.this)
        if isinstance(node, exp.SetOperation):
            q = compile_setop(self, node)
            return self.order_limit(node, q, q.columns)
        if isinstance(node, exp.Pivot):   # PIVOT t ON ... USING ... (a statement)
            return pivot_statement(self, node).query
        if not isinstance(node, exp.Select):
            raise unsupported(node, node.key.upper())
        from_ = node.args.get("from_") or node.args.get("from")
        if from_ is None:   # one row of no columns
            scope = Scope(Query(FrameSource(pl.DataFrame({"__one": [0]}))), {})
        else:
            scope = self.source(from_.this)
        joins = node.args.get("joins") or []
        where = node.args.get("where")
        if where is not None and joins and all(_keeps_left(j) for j in joins):
            scope = self.push_below(scope, where.this)   # conjuncts on FROM's own columns
        for join in joins:
            scope = self.join(scope, join)
        if where is not None:
            if has_agg(where.this):
                raise error(where, "aggregates are not allowed in WHERE (use HAVING)")
            if not joins:
                scope = self.push_below(scope, where.this)
            c = Plain(scope, self)
            predicate = c.predicate(where.this, "WHERE")
            with at(where):
                scope.query = scope.query.filter(predicate)
        return self.project(node, scope)

    def push_below(self, scope: Scope, where: exp.Expression) -> Scope:
        """``scope`` with the conjuncts of ``where`` DuckDB pushes below its derived query's
        projection applied to that query's rows first (F104: partitions pruned again, the
        items' errors raised only on the rows kept); the whole ``where`` still follows."""
        made = pushdown.registered(scope.query)
        if made is None:
            return scope
        pushed = [c for c in pushdown.conjuncts(where) if pushdown.pushable(c, scope, made)]
        inner = {q: {n: made.through[c] for n, c in cols.items() if c in made.through}
                 for q, cols in (scope.qualifiers or {"": {c: c for c in scope.columns()}})
                 .items()}
        # a constant conjunct that can raise: DuckDB cannot fold it, keeps it above
        pushed = [c for c in pushed if not pushdown.constant(c) or not may_raise(
            Plain(Scope(made.rows, inner), self).predicate(c, "WHERE"))]
        if not pushed:
            return scope
        both = pushed[0].copy()
        for c in pushed[1:]:
            both = exp.And(this=both, expression=c.copy())
        # rows that are themselves a derived query's answer: pushed below its items too
        below = self.push_below(Scope(made.rows, inner), both)
        predicate = Plain(below, self).predicate(both, "WHERE")
        with at(where):
            rows = below.query.filter(predicate)
        return Scope(made.project(rows), scope.qualifiers, scope.using)

    def source(self, node: exp.Expression) -> Scope:
        if isinstance(node, exp.Table):
            if node.args.get("pivots"):
                return self.pivot(node)
            name = node.name
            version = _version(node)
            if name in self.ctes and version is None:
                q = self.ctes[name]
            else:
                # the rows carry their rowid when the statement names one
                kw: dict[str, Any] = {"rowid": True} if _names_rowid(node) else {}
                if isinstance(version, int):
                    kw["version"] = version
                elif version is not None:
                    kw["as_of"] = version
                try:
                    q = self.catalog(name, **kw)
                except QueryError as exc:
                    raise error(node, str(exc)) from exc
            alias = node.alias_or_name
            cols = {c: c for c in q.columns if not c.startswith("__")}
            if ROWID in q.columns and "rowid" not in cols:
                cols["rowid"] = ROWID
            return Scope(q, {alias: cols})
        if isinstance(node, exp.Subquery):
            if node.args.get("pivots"):
                return self.pivot(node)
            if isinstance(node.this, exp.Pivot):
                inner = pivot_statement(self, node.this)
                alias = node.alias_or_name
                return Scope(inner.query, {alias: {c: c for c in inner.query.columns}}
                             if alias else {})
            q = Compiler(self.catalog, self.ctes, derived=True).select(node.this)
            alias = node.alias_or_name
            return Scope(q, {alias: {c: c for c in q.columns}} if alias else {})
        raise unsupported(node, f"{node.key.upper()} in FROM")

    def join(self, scope: Scope, join: exp.Join) -> Scope:
        return compile_join(self, scope, join)

    def pivot(self, node: exp.Table | exp.Subquery) -> Scope:
        return compile_pivot(self, node)

    # -- SELECT list, GROUP BY, HAVING, ORDER BY, LIMIT -----------------------------------
    def project(self, node: exp.Select, scope: Scope) -> Query:
        items = items_of(node, scope)
        names = dedupe([n for n, _ in items])
        group = node.args.get("group")
        having = node.args.get("having")
        order = node.args.get("order")
        # GROUP BY ALL groups by the items without aggregates that read a column (DuckDB
        # leaves constants out: with nothing else, it groups nothing)
        grouped = group is not None and not (group.args.get("all") and not _all_keys(items))
        aggregate = grouped or having is not None or any(has_agg(e) for _, e in items)
        q = scope.query
        if aggregate:
            q, post = self.aggregate(node, scope, items, names)
        else:
            post = Post(scope, {}, {}, self)
        # windows are computed before the projection (they see every row)
        outputs: list[pl.Expr] = []
        through: dict[str, str] = {}   # items passing a column through unchanged
        rowwise = True
        for name, (_, e) in zip(names, items):
            out = post.expr(e)
            if is_rowwise(to_tree(out)):
                if out.meta.undo_aliases().meta.is_column() and not aggregate:
                    through[name] = out.meta.undo_aliases().meta.output_name()
                if self.derived:   # every row's errors, whatever filter the outer query adds
                    out = every_row(out, out)   # (a window: polars pushes no filter below
                    #                             it anyway); those DuckDB pushes: push_below
            else:
                rowwise = False
            outputs.append(out.alias(name))
        if having is not None:
            predicate = post.predicate(having.this, "HAVING")
            with at(having):
                q = q.filter(predicate)
        hidden: list[pl.Expr] = []
        qualify = node.args.get("qualify")
        if qualify is not None:   # a filter after the windows (select aliases visible)
            test = _aliased(qualify.this, names, items, scope)
            hidden.append(post.predicate(test, "QUALIFY", qualify.this)
                          .alias("__qualify"))
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
        def projected(rows: Query) -> Query:
            with at(node):
                if any(not e.meta.root_names() for e in outputs):
                    # a constant item is one per row (or group): added to the rows, chosen
                    return rows.with_columns(*outputs, *hidden).select(
                        *names, *(h.meta.output_name() for h in hidden))
                return rows.select(*outputs, *hidden)
        rows = q
        q = projected(rows)
        plain = self.derived and rowwise and not aggregate and not hidden and qualify is None \
            and node.args.get("distinct") is None and not sort_keys and \
            node.args.get("limit") is None and node.args.get("offset") is None
        if plain and len(set(names)) == len(names):   # a filter pushed below its items: F104
            pushdown.register(q, pushdown.Pushdown(rows, projected, through))
        if qualify is not None:
            hidden = [h for h in hidden if h.meta.output_name() != "__qualify"]
            with at(qualify):
                q = q.filter(pl.col("__qualify")).select(
                    *names, *(h.meta.output_name() for h in hidden))
        if node.args.get("distinct") is not None:
            if hidden:
                raise error(order, "with SELECT DISTINCT, ORDER BY expressions must appear "
                                    "in the select list")
            q = q.unique()
        if sort_keys:
            q = q.sort([k for k, _, _ in sort_keys], descending=[d for _, d, _ in sort_keys],
                       nulls_last=[n for _, _, n in sort_keys])
        q = self.limit(node, q)
        if hidden:
            q = q.select(*names)
        return q

    def limit(self, node: exp.Expression, q: Query) -> Query:
        limit, offset = node.args.get("limit"), node.args.get("offset")
        options = limit.args.get("limit_options") if limit is not None else None
        if limit is not None and options is not None and options.args.get("percent"):
            return _percent(limit, offset, q)
        if limit is not None or offset is not None:
            n = count_of(limit.expression if limit is not None else None, "LIMIT")
            off = count_of(offset.expression if offset is not None else None, "OFFSET")
            q = q.slice(off or 0, n)
        return q

    def order_limit(self, node: exp.Expression, q: Query, names: list[str]) -> Query:
        """ORDER BY (output columns, by name or position) and LIMIT over a set operation."""
        order = node.args.get("order")
        if order is not None:
            keys, desc, last = [], [], []
            for o in order.expressions:
                e = o.this
                if isinstance(e, exp.Literal) and not e.is_string and e.this.isdigit() and \
                        1 <= int(e.this) <= len(names):
                    keys.append(names[int(e.this) - 1])
                elif isinstance(e, exp.Column) and not e.table and e.name in names:
                    keys.append(e.name)
                else:
                    raise error(e, "ORDER BY over a set operation takes output columns "
                                   f"({', '.join(names)}) or their positions")
                desc.append(bool(o.args.get("desc")))
                last.append(not o.args.get("nulls_first"))
            q = q.sort(keys, descending=desc, nulls_last=last)
        return self.limit(node, q)

    def order_target(self, e: exp.Expression, names: list[str],
                     items: list[tuple[str, exp.Expression]], post: Post) -> str | pl.Expr:
        if isinstance(e, exp.Literal) and not e.is_string:
            k = int(e.this)
            if not 1 <= k <= len(names):
                raise error(e, f"ORDER BY {k}: the select list has {len(names)} items")
            return names[k - 1]
        if isinstance(e, exp.Column) and not e.table and e.name in names:
            return e.name
        for name, (_, item) in zip(names, items):
            if item == e:
                return name
        return post.expr(e)

    def aggregate(self, node: exp.Select, scope: Scope, items: list[tuple[str, Any]],
                  names: list[str]) -> tuple[Query, Post]:
        group = node.args.get("group")
        keys: list[pl.Expr] = []
        key_nodes: dict[exp.Expression, str] = {}
        key_cols: dict[str, str] = {}
        hashed = False   # DuckDB's hash aggregate: some key is not a BOOLEAN or NULL constant
        if group is not None:
            groups = list(group.expressions)
            if group.args.get("all"):   # GROUP BY ALL: every select item without aggregates
                groups = [exp.Literal.number(i + 1) for i in _all_keys(items)]
            for g in groups:
                if isinstance(g, exp.Literal) and not g.is_string:
                    k = int(g.this)
                    if not 1 <= k <= len(items):
                        raise error(g, f"GROUP BY {k}: the select list has {len(items)} items")
                    g_expr, name = items[k - 1][1], names[k - 1]
                elif isinstance(g, exp.Column) and not g.table and g.name in names and \
                        g.name not in scope.query.columns:
                    i = names.index(g.name)
                    g_expr, name = items[i][1], names[i]
                else:
                    g_expr = g
                    name = next((n for n, (_, e) in zip(names, items) if e == g), "") or \
                        f"__k{len(keys)}"
                if has_agg(g_expr):
                    raise error(g, "aggregates are not allowed in GROUP BY")
                if g_expr in key_nodes:   # a repeated key is the same key (GROUP BY a, a)
                    continue
                plain = Plain(scope, self)
                key = plain.expr(g_expr)
                # (grouped by BOOLEAN or NULL constants alone, DuckDB aggregates a constant's
                # copies as over the whole input: F141c)
                hashed = hashed or not reads_no_column(key) or \
                    plain.dtype(key) not in (pl.Boolean, pl.Null)
                # a constant key, written so or folded (c0 || NULL is NULL: F145): one group
                # of every row (none over no rows); its first value, as polars repeats only
                # a scalar (5 IN (SELECT ...) is a one-value column: stop-20 review)
                if not g_expr.find(exp.Column) or reads_no_column(key):
                    key = pl.repeat(key.first(), pl.len())
                keys.append(key.alias(name))
                key_nodes[g_expr] = name
                if isinstance(g_expr, exp.Column):
                    key_cols[scope.resolve(g_expr)] = name
        post = Post(scope, key_nodes, key_cols, self)
        post.grouped = hashed
        where = node.args.get("where")
        # rows an IN or EXISTS subquery kept: DuckDB's semi join hands them on in its hash
        # table's order (stop-17 review), as a SEMI JOIN does
        post.semi = where is not None and any(
            isinstance(n, exp.Exists) or (isinstance(n, exp.In) and n.args.get("query"))
            for n in where.walk())
        # collect every aggregate call in the select list, HAVING and ORDER BY
        exprs = [e for _, e in items]
        if node.args.get("having") is not None:
            exprs.append(node.args["having"].this)
        if node.args.get("order") is not None:
            exprs += [o.this for o in node.args["order"].expressions]
        for e in exprs:
            for call in agg_calls(e):
                post.register(call)
        if not post.aggs and not keys:
            raise error(node, "nothing to aggregate")
        aggs = [a.alias(n) for n, a in post.aggs.values()]
        q = scope.query
        with at(group if group is not None else node):
            if post.columns:
                q = q.with_columns(*post.columns.values())
            if keys:
                q = q.group_by(*keys).agg(*(aggs or [pl.len().alias("__n")]))
            else:
                q = q.agg(*aggs)
        post.scope = Scope(q, {})
        post.aggregated = True
        return q, post

    # -- expressions ----------------------------------------------------------------------
    def expr(self, node: exp.Expression, scope: Scope) -> pl.Expr:
        return Plain(scope, self).expr(node)

    def condition(self, node: exp.Expression, scope: Scope, where: str) -> pl.Expr:
        return Plain(scope, self).predicate(node, where)

    def in_subquery(self, c: Compiles, value: pl.Expr, node: exp.In) -> pl.Expr:
        return subqueries.in_subquery(c, value, node)

    def scalar_subquery(self, c: Compiles, node: exp.Subquery) -> pl.Expr:
        return subqueries.scalar_subquery(c, node)

    def exists(self, c: Compiles, node: exp.Exists) -> pl.Expr:
        return subqueries.exists(c, node)

    def subquery_values(self, node: exp.Expression) -> list[Any]:
        q = Compiler(self.catalog, self.ctes).select(node)
        if len(q.columns) != 1:
            raise error(node, f"a subquery in IN must return one column, not "
                               f"{len(q.columns)}")
        return q.collect().to_series().to_list()


def _all_keys(items: list[tuple[str, Any]]) -> list[int]:
    """The positions GROUP BY ALL groups by: items without aggregates that read a column."""
    return [i for i, (_, e) in enumerate(items) if not has_agg(e) and e.find(exp.Column)]


def _percent(limit: exp.Limit, offset: exp.Offset | None, q: Query) -> Query:
    """``LIMIT p% [OFFSET m]`` as DuckDB: ``trunc(p / 100 * n)`` rows (``n`` the rows
    before the offset, the product in DOUBLE) from row ``m``; ``LIMIT NULL%`` keeps all."""
    value = limit.expression
    off = count_of(offset.expression if offset is not None else None, "OFFSET") or 0
    if isinstance(value, exp.Null):
        pct = None
    elif isinstance(value, exp.Literal) and not value.is_string:
        pct = float(value.this)
    else:
        raise error(value, "LIMIT ... % takes a number literal")
    if pct is not None and not 0 <= pct <= 100:
        raise error(value, f"LIMIT {value.sql()}%: the percentage must be between 0 and 100")
    row = pl.int_range(pl.len(), dtype=pl.Int64)
    keep = row >= off
    if pct is not None:
        rows = (pl.lit(pct / 100.0) * pl.len().cast(pl.Float64)).floor().cast(pl.Int64)
        keep = keep & (row < off + rows)
    with at(limit):
        return q.filter(keep)


def _keeps_left(join: exp.Join) -> bool:
    """Does ``join`` keep its left side's rows apart from null-extended ones (an inner,
    cross, left, semi or anti join), so that DuckDB pushes a WHERE conjunct on the left
    side's columns below it (F104)?  A FULL join keeps it above (DuckDB raises); ASOF,
    POSITIONAL, NATURAL and LATERAL joins: not verified, kept above."""
    side, kind = (join.side or "").upper(), (join.kind or "").upper()
    return not join.args.get("method") and side in ("", "LEFT") and \
        kind in ("", "INNER", "OUTER", "CROSS", "SEMI", "ANTI") and \
        isinstance(join.this, (exp.Table, exp.Subquery))


def _names_rowid(node: exp.Table) -> bool:
    """Does the statement holding ``node`` name a column ``rowid`` (of this table or
    another: the pseudo-column then costs a staged read, never a wrong answer)?"""
    return any(c.name.lower() == "rowid" for c in node.root().find_all(exp.Column))


def _version(node: exp.Table) -> int | str | None:
    """The committed version of ``t AT (VERSION => n)``, or the instant (text) of ``t AT
    (TIMESTAMP => '...')`` / ``t FOR SYSTEM_TIME AS OF '...'`` (None: the current one)."""
    when = node.args.get("when") or node.args.get("version")
    if when is None:
        return None
    kind = str(when.args.get("kind") or "").upper()
    value = when.expression
    if isinstance(when, exp.Version):   # FOR SYSTEM_TIME AS OF <instant>
        if kind != "AS OF" or str(when.this).upper() != "TIMESTAMP":
            raise unsupported(when, f"FOR SYSTEM_TIME {kind} (only AS OF an instant)")
        return _instant(value, "FOR SYSTEM_TIME AS OF")
    if str(when.this).upper() != "AT" or kind not in ("VERSION", "TIMESTAMP"):
        raise unsupported(when, f"{str(when.this).upper()} ({kind} => ...): use AT (VERSION "
                                "=> n) or AT (TIMESTAMP => '...')")
    if kind == "TIMESTAMP":
        return _instant(value, "AT (TIMESTAMP => ...)")
    n = count_of(value, "AT (VERSION => n)")
    return n


def _instant(value: exp.Expression, what: str) -> str:
    """The text of a time-travel instant: a string literal, or one cast to a timestamp."""
    if isinstance(value, exp.Cast) and value.to.is_type(*exp.DataType.TEMPORAL_TYPES):
        value = value.this
    if not isinstance(value, exp.Literal) or not value.is_string:
        raise error(value, f"{what} takes a timestamp literal, e.g. '2026-11-20 10:00:00' "
                           "(UTC unless it names its zone)")
    return str(value.this)

def _aliased(node: exp.Expression, names: list[str], items: list[tuple[str, Any]],
             scope: Scope) -> exp.Expression:
    """``node`` with select-list aliases (not columns of the scope) replaced by their
    expressions."""
    def swap(n: exp.Expression) -> exp.Expression:
        if isinstance(n, exp.Column) and not n.table and n.name in names and \
                not scope.knows(n):
            return items[names.index(n.name)][1].copy()
        return n
    return node.copy().transform(swap)


class Post(Plain):
    """Expressions after GROUP BY: keys by name, aggregates by their computed column."""

    def __init__(self, scope: Scope, key_nodes: dict[exp.Expression, str],
                 key_cols: dict[str, str], env: Env) -> None:
        super().__init__(scope, env)
        self.input = scope
        self.key_nodes = key_nodes
        self.key_cols = key_cols
        self.aggs: dict[exp.Expression, tuple[str, pl.Expr]] = {}
        self.columns: dict[str, pl.Expr] = {}   # aggregates' arguments computed before them
        self.semi = False   # the rows passed an IN or EXISTS subquery (a semi join)
        self.grouped = False   # by keys DuckDB hashes (Agg.grouped)
        self.aggregated = False

    def register(self, node: exp.Expression) -> None:
        if node not in self.aggs:
            self.aggs[node] = (f"__agg{len(self.aggs)}",
                               Agg(self.input, self.env, self.columns, self.semi,
                                   grouped=self.grouped)
                               .call(node))

    def expr(self, node: exp.Expression) -> pl.Expr:
        if not self.aggregated:
            return super().expr(node)
        for key, name in self.key_nodes.items():
            if key == node:
                return pl.col(name)
        if is_agg(node):
            if node not in self.aggs:
                raise error(node, f"aggregate {node.sql('duckdb')} is not allowed here")
            return pl.col(self.aggs[node][0])
        return super().expr(node)

    def column(self, node: exp.Column) -> pl.Expr:
        if not self.aggregated:
            return super().column(node)
        name = self.input.resolve(node)
        if name in self.key_cols:
            return pl.col(self.key_cols[name])
        raise error(node, f"column {node.sql()!r} must appear in GROUP BY or be used in an "
                           "aggregate function")
