"""Random queries over a :class:`~sqlfuzz.data.Dataset`: the statement half of the grammar.

Shapes (each query is one, its clauses drawn at random): projections with WHERE, DISTINCT,
ORDER BY ... LIMIT/OFFSET; aggregates without GROUP BY; GROUP BY (columns, expressions,
ordinals, ALL) with HAVING; window functions (ranking, offsets, first/last value, aggregates
over whole partitions, running and ROWS/RANGE frames, QUALIFY); joins (inner, LEFT, FULL,
RIGHT, SEMI, ANTI, CROSS, USING, ASOF [LEFT]); subqueries (IN, NOT IN, scalar, EXISTS, derived
tables, CTEs); set operations (UNION [ALL], INTERSECT, EXCEPT); SELECT * with EXCLUDE / REPLACE /
RENAME / COLUMNS; SELECT without FROM.

A query is ordered only when its ORDER BY names every output column (so the order is total up
to equal rows); a LIMIT or OFFSET is only drawn with such an ORDER BY, and window and
``first``/``last`` orders end with ``id`` (unique), so every query has one right answer.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from sqlfuzz.data import KIND, Dataset
from sqlfuzz.exprs import ExprGen, NoProduction, Scope

__all__ = ["Query", "QueryGen"]

_KEY_KINDS = ("str", "int", "date", "bool", "time", "ts", "tstz", "float")


@dataclass(frozen=True)
class Query:
    sql: str
    ordered: bool
    shape: str
    tags: frozenset[str]
    params: tuple[Any, ...] = ()   # bound to the ``$n`` placeholders of ``sql``


class QueryGen:
    """Queries over the tables ``t`` and ``u`` of a dataset, from ``rng``; constructs whose
    tags are in ``disabled`` are not drawn."""

    def __init__(self, rng: random.Random, dataset: Dataset, *,
                 disabled: frozenset[str] = frozenset()) -> None:
        self.rng = rng
        self.dataset = dataset
        self.disabled = disabled
        t, u = dataset.table("t"), dataset.table("u")
        self.t_cols = [(n, KIND[ty]) for n, ty in t.columns]
        self.u_cols = [(n, KIND[ty]) for n, ty in u.columns]
        self.tags: set[str] = set()
        self.params: list[Any] = []

    def gen(self, scope: Scope, *, params: bool = False) -> ExprGen:
        g = ExprGen(self.rng, scope, disabled=self.disabled)
        g.tags = self.tags   # one set for the whole query
        if params:
            g.params = self.params   # one list for the whole query
        return g

    def t_scope(self, qualifier: str = "") -> Scope:
        q = f"{qualifier}." if qualifier else ""
        return Scope([(q + n, k) for n, k in self.t_cols], q + "id")

    def u_scope(self, qualifier: str = "") -> Scope:
        q = f"{qualifier}." if qualifier else ""
        return Scope([(q + n, k) for n, k in self.u_cols], q + "id")

    def use(self, tag: str) -> bool:
        """Whether ``tag`` may be drawn (and note it as used when so)."""
        if tag in self.disabled:
            return False
        self.tags.add(tag)
        return True

    def query(self) -> Query:
        """One random query (drawn again if every production of a part is switched off)."""
        shapes = [("project", 4), ("aggregate", 2), ("group", 4), ("window", 3), ("join", 3),
                  ("subquery", 3), ("derived", 1.5), ("setop", 1.5), ("star", 0.7),
                  ("nofrom", 0.7), ("pivot", 0.8), ("timetravel", 0.6), ("params", 1.2)]
        for _ in range(50):
            self.tags = set()
            shape = self.rng.choices([s for s, _ in shapes], [w for _, w in shapes])[0]
            if f"shape:{shape}" in self.disabled:
                continue
            self.params = []
            try:
                sql, ordered = getattr(self, f"_{shape}")()
            except NoProduction:
                continue
            self.tags.add(f"shape:{shape}")
            return Query(sql, ordered, shape, frozenset(self.tags), tuple(self.params))
        raise NoProduction()

    # -- clauses -----------------------------------------------------------------------------
    def kinds(self, scope: Scope, n: int, *, allow_bool: bool = True) -> list[str]:
        have = [k for k in scope.kinds() if allow_bool or k != "bool"]
        return [self.rng.choice(have) for _ in range(n)]

    def where(self, g: ExprGen, p: float = 0.6) -> str:
        return f" WHERE {g.expr('bool', 2)}" if self.rng.random() < p else ""

    def order_all(self, names: list[str], *, limit: bool = True) -> tuple[str, bool]:
        """ORDER BY every output (shuffled, random directions), maybe LIMIT/OFFSET; or
        nothing.  Returns (text, ordered)."""
        r = self.rng
        if r.random() > 0.45 or not names:
            return "", False
        keys = list(range(len(names)))
        r.shuffle(keys)
        parts = []
        by_position = r.random() < 0.3 and self.use("clause:order_ordinal")
        for k in keys:
            ref = str(k + 1) if by_position else names[k]
            direction = r.choice(("", " ASC", " DESC"))
            nulls = r.choice(("", "", " NULLS FIRST", " NULLS LAST"))
            if nulls:
                self.tags.add("clause:nulls_order")
            parts.append(ref + direction + nulls)
        text = " ORDER BY " + ", ".join(parts)
        if limit and r.random() < 0.6:
            if r.random() < 0.1 and self.use("clause:limit_percent"):
                text += f" LIMIT {r.choice((10, 50))}%"
            else:
                text += f" LIMIT {r.choice((0, 1, 3, 10))}"
                if r.random() < 0.3 and self.use("clause:offset"):
                    text += f" OFFSET {r.choice((1, 2, 5))}"
        return text, True

    def items(self, g: ExprGen, n: int, prefix: str = "c"
              ) -> tuple[list[str], list[str], list[str]]:
        """``n`` row expressions: (their texts, their aliases, their kinds)."""
        kinds = self.kinds(g.scope, n)
        exprs = [g.expr(k, 2) for k in kinds]
        names = [f"{prefix}{i + 1}" for i in range(n)]
        return exprs, names, kinds

    @staticmethod
    def select_list(exprs: list[str], names: list[str]) -> str:
        return ", ".join(f"{e} AS {n}" for e, n in zip(exprs, names))

    # -- shapes ------------------------------------------------------------------------------
    def _project(self) -> tuple[str, bool]:
        g = self.gen(self.t_scope())
        exprs, names, _ = self.items(g, self.rng.randint(1, 4))
        distinct = "DISTINCT " if self.rng.random() < 0.2 and self.use("clause:distinct") else ""
        order, ordered = self.order_all(names)
        return f"SELECT {distinct}{self.select_list(exprs, names)} FROM t{self.where(g)}" \
               f"{order}", ordered

    def _aggregate(self) -> tuple[str, bool]:
        g = self.gen(self.t_scope())
        n = self.rng.randint(1, 3)
        kinds = self.kinds(g.scope, n)
        aggs = [g.agg_expr(k) for k in kinds]
        names = [f"a{i + 1}" for i in range(n)]
        return f"SELECT {self.select_list(aggs, names)} FROM t{self.where(g, 0.4)}", False

    def key(self, g: ExprGen) -> tuple[str, str]:
        """A GROUP BY key over at least one column: (text, kind)."""
        r = self.rng
        kinds = [k for k in _KEY_KINDS if g.has(k)]
        k = r.choice(kinds)
        if r.random() < 0.55:
            return g.col(k), k
        for _ in range(5):
            text = g.expr(k, 1)
            if any(c in text for c, _ in g.scope.columns) and text != "NULL":
                return text, k
        return g.col(k), k

    def group_query(self, g: ExprGen, source: str, where: str) -> tuple[str, bool]:
        r = self.rng
        keys = [self.key(g) for _ in range(r.randint(1, 3))]
        aggs = [g.agg_expr(k) for k in self.kinds(g.scope, r.randint(1, 3))]
        knames = [f"k{i + 1}" for i in range(len(keys))]
        anames = [f"a{i + 1}" for i in range(len(aggs))]
        select = self.select_list([k for k, _ in keys], knames)
        if aggs:
            select += ", " + self.select_list(aggs, anames)
        style = r.random()
        if style < 0.15 and self.use("clause:group_all"):
            group = "ALL"
        elif style < 0.35 and self.use("clause:group_ordinal"):
            group = ", ".join(str(i + 1) for i in range(len(keys)))
        else:
            group = ", ".join(k for k, _ in keys)
        having = ""
        if r.random() < 0.3 and self.use("clause:having"):
            kind = r.choice(("int", "float"))
            having = f" HAVING {g.agg(kind)} {r.choice(('>', '<=', '=', '<>'))} " \
                     f"{g.lit(kind)}"
            if r.random() < 0.3:
                having = " HAVING count(*) > 1"
        order, ordered = self.order_all(knames + anames)
        return f"SELECT {select} FROM {source}{where} GROUP BY {group}{having}{order}", ordered

    def _group(self) -> tuple[str, bool]:
        g = self.gen(self.t_scope())
        return self.group_query(g, "t", self.where(g, 0.4))

    def window(self, g: ExprGen) -> str:
        r = self.rng
        sc = g.scope
        part_cols = [c for c, k in sc.columns if k in ("str", "date", "bool", "int")
                     and not c.endswith("id")]
        part = r.sample(part_cols, r.randint(0, min(2, len(part_cols))))
        orderable = [c for c, k in sc.columns if k != "bool"]
        o = r.choice(orderable)
        desc = r.choice(("", " DESC"))
        nulls = r.choice(("", "", " NULLS FIRST", " NULLS LAST"))
        if nulls:
            self.tags.add("win:nulls_order")
        tie_desc = desc
        if r.random() < 0.15 and self.use("win:mixed_dir"):
            tie_desc = " DESC" if not desc else ""
        pb = f"PARTITION BY {', '.join(part)} " if part else ""
        total = f"{pb}ORDER BY {o}{desc}{nulls}, {sc.order_key}{tie_desc}"
        ties = f"{pb}ORDER BY {o}{desc}{nulls}"
        num = [k for k in ("int", "float") if g.has(k)]
        kind = r.choice(num)
        x = g.expr(kind, 1)
        agg = r.choice(("sum", "avg", "min", "max", "count"))
        any_kind = r.choice([k for k in sc.kinds()])
        y = g.expr(any_kind, 1)
        options = [
            ("win:row_number", 2, lambda: f"row_number() OVER ({total})"),
            ("win:rank", 2, lambda: f"{r.choice(('rank', 'dense_rank'))}() OVER ({ties})"),
            ("win:ntile", 1, lambda: f"ntile({r.choice((2, 3))}) OVER ({total})"),
            ("win:lag", 2, lambda: f"{r.choice(('lag', 'lead'))}({y}"
                                   f"{r.choice(('', ', 1', ', 2'))}) OVER ({total})"),
            ("win:lag_default", 1, lambda: f"{r.choice(('lag', 'lead'))}({x}, 1, {g.lit(kind)}) "
                                           f"OVER ({total})"),
            ("win:first_value", 1, lambda: f"{r.choice(('first_value', 'last_value'))}({y}) "
                                           f"OVER ({total})"),
            ("win:first_value_whole", 1,
             lambda: f"{r.choice(('first_value', 'last_value'))}({y}) OVER ({total} ROWS "
                     "BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)"),
            ("win:ignore_nulls", 1, lambda: f"{r.choice(('first_value', 'last_value'))}({y} "
                                            f"IGNORE NULLS) OVER ({total} ROWS BETWEEN "
                                            "UNBOUNDED PRECEDING AND CURRENT ROW)"),
            ("win:agg_whole", 2, lambda: f"{agg}({x}) OVER ({pb.strip()})"),
            ("win:count_star", 1, lambda: f"count(*) OVER ({ties})"),
            ("win:agg_running", 2, lambda: f"{agg}({x}) OVER ({ties})"),
            ("win:agg_rows", 2, lambda: f"{agg}({x}) OVER ({total} ROWS BETWEEN "
                                        f"{r.choice((1, 2, 3))} PRECEDING AND CURRENT ROW)"),
            ("win:agg_rows_unbounded", 2,
             lambda: f"{agg}({x}) OVER ({total} ROWS UNBOUNDED PRECEDING)"),
            ("win:agg_rows_following", 1,
             lambda: f"{agg}({x}) OVER ({total} ROWS BETWEEN {r.choice((0, 1, 2))} PRECEDING "
                     f"AND {r.choice((1, 2))} FOLLOWING)"),
        ]
        times = [c for c, k in sc.columns if k in ("ts", "tstz", "time")]
        if times:
            tcol = r.choice(times)
            options.append(("win:agg_range_interval", 1,
                            lambda: f"{agg}({x}) OVER ({pb}ORDER BY {tcol} RANGE BETWEEN "
                                    f"INTERVAL '{r.choice((1, 5, 90))} minutes' PRECEDING AND "
                                    "CURRENT ROW)"))
        live = [o for o in options if o[0] not in self.disabled]
        if not live:
            raise NoProduction()
        tag, _, build = r.choices(live, [w for _, w, _ in live])[0]
        self.tags.add(tag)
        return build()

    def _window(self) -> tuple[str, bool]:
        g = self.gen(self.t_scope())
        r = self.rng
        wins = [self.window(g) for _ in range(r.randint(1, 3))]
        exprs, names, _ = self.items(g, r.randint(0, 2))
        cols = ["id"] + [f"{e} AS {n}" for e, n in zip(exprs, names)] + \
            [f"{w} AS w{i + 1}" for i, w in enumerate(wins)]
        qualify = ""
        if r.random() < 0.15 and self.use("clause:qualify"):
            qualify = f" QUALIFY {self.window(g)} {r.choice(('=', '<=', '>'))} 1"
        return f"SELECT {', '.join(cols)} FROM t{self.where(g, 0.3)}{qualify}", False

    def _join(self) -> tuple[str, bool]:
        r = self.rng
        # the tie-breaker must be unique over the joined rows: a t row meets several u rows
        # (t.id alone left first(x ORDER BY y, t.id) to DuckDB's arbitrary pick among them,
        # fuzz seed 23); ids are within -60..180, a missing side's id 999
        scope = Scope(self.t_scope("t").columns + self.u_scope("u").columns,
                      "(coalesce(t.id, 999) * 1000 + coalesce(u.id, 999))")
        g = self.gen(scope)
        kind = r.choices(("inner", "left", "full", "right", "semi", "anti", "cross", "asof",
                          "asof_left", "using", "asof_using"),
                         (4, 3, 1, 1, 1.5, 1.5, 1, 2, 1, 1, 0.7))[0]
        if not self.use(f"join:{kind}"):
            raise NoProduction()
        eq = [("t.sym", "u.sym")]
        if r.random() < 0.5:
            eq.append(("t.date", "u.date"))
        if kind not in ("asof", "asof_left", "asof_using") and r.random() < 0.3:
            ints_t = [c for c, k in self.t_cols if k == "int"]
            ints_u = [c for c, k in self.u_cols if k == "int"]
            eq = [(f"t.{r.choice(ints_t)}", f"u.{r.choice(ints_u)}")] if r.random() < 0.5 \
                else eq + [(f"t.{r.choice(ints_t)}", f"u.{r.choice(ints_u)}")]
        cond = " AND ".join(f"{a} = {b}" for a, b in eq)
        if kind not in ("asof", "asof_left", "using", "asof_using") and r.random() < 0.2 and \
                self.use("join:theta"):
            cond += f" AND {g.expr('bool', 1)}"
        if kind in ("asof", "asof_left"):
            cond += f" AND t.time {r.choice(('>=', '>', '<=', '<'))} u.time"
            join = f"{'ASOF LEFT JOIN' if kind == 'asof_left' else 'ASOF JOIN'} u ON {cond}"
        elif kind == "asof_using":
            keys = [a.split(".")[1] for a, _ in eq if a in ("t.sym", "t.date")] or ["sym"]
            join = f"ASOF JOIN u USING ({', '.join(keys)}, time)"
        elif kind == "cross":
            join = "CROSS JOIN u"
        elif kind == "using":
            keys = [a.split(".")[1] for a, _ in eq if a in ("t.sym", "t.date")] or ["sym"]
            join = f"JOIN u USING ({', '.join(keys)})"
        else:
            word = {"inner": r.choice(("JOIN", "INNER JOIN")), "left": "LEFT JOIN",
                    "full": "FULL OUTER JOIN", "right": "RIGHT JOIN", "semi": "SEMI JOIN",
                    "anti": "ANTI JOIN"}[kind]
            join = f"{word} u ON {cond}"
        if kind in ("semi", "anti"):
            g = self.gen(self.t_scope("t"))
        where = self.where(g, 0.4)
        source = f"t {join}"
        if kind not in ("semi", "anti") and r.random() < 0.3:
            return self.group_query(g, source, where)
        exprs, names, _ = self.items(g, r.randint(1, 4))
        order, ordered = self.order_all(names)
        return f"SELECT {self.select_list(exprs, names)} FROM {source}{where}{order}", ordered

    def _subquery(self) -> tuple[str, bool]:
        r = self.rng
        g = self.gen(self.t_scope())
        inner = self.gen(self.u_scope())
        shared = [k for k in ("int", "str", "date", "float", "time") if g.has(k) and inner.has(k)]
        k = r.choice(shared)
        form = r.choices(("in", "not_in", "scalar", "exists", "scalar_select",
                          "correlated_scalar"), (2, 3, 1, 1.5, 1, 1))[0]
        if not self.use(f"subq:{form}"):
            raise NoProduction()
        sub_where = self.where(inner, 0.3)
        if form in ("in", "not_in"):
            neg = "NOT " if form == "not_in" else ""
            pred = f"{g.expr(k, 1)} {neg}IN (SELECT {inner.expr(k, 1)} FROM u{sub_where})"
        elif form == "scalar":
            kind = r.choice(("int", "float"))
            pred = f"{g.expr(kind, 1)} {r.choice(('>', '<=', '='))} " \
                   f"(SELECT {inner.agg(kind)} FROM u{sub_where})"
        elif form == "exists":
            neg = "NOT " if r.random() < 0.4 else ""
            extra = r.choice(("", " AND u.id > t.id"))
            pred = f"{neg}EXISTS (SELECT 1 FROM u WHERE u.sym = t.sym{extra})"
        elif form == "correlated_scalar":
            ug = self.gen(self.u_scope("u"))
            tg = self.gen(self.t_scope("t"))
            agg = ug.agg(r.choice(("int", "float")))
            sub = f"(SELECT {agg} FROM u WHERE u.sym = t.sym)"
            exprs, names, _ = self.items(tg, r.randint(1, 2))
            return f"SELECT {self.select_list(exprs, names)}, {sub} AS s FROM t", False
        else:
            exprs, names, _ = self.items(g, r.randint(1, 2))
            sel = self.select_list(exprs, names)
            sub = f"(SELECT {inner.agg(r.choice(('int', 'float')))} FROM u{sub_where})"
            return f"SELECT {sel}, {sub} AS s FROM t{self.where(g, 0.5)}", False
        if r.random() < 0.4:
            aggs = [g.agg_expr(kk) for kk in self.kinds(g.scope, r.randint(1, 2))]
            return f"SELECT {self.select_list(aggs, [f'a{i + 1}' for i in range(len(aggs))])} " \
                   f"FROM t WHERE {pred}", False
        exprs, names, _ = self.items(g, r.randint(1, 3))
        order, ordered = self.order_all(names)
        return f"SELECT {self.select_list(exprs, names)} FROM t WHERE {pred}{order}", ordered

    def _derived(self) -> tuple[str, bool]:
        r = self.rng
        g = self.gen(self.t_scope())
        exprs, names, kinds = self.items(g, r.randint(1, 3))
        inner = f"SELECT id, {self.select_list(exprs, names)} FROM t{self.where(g, 0.5)}"
        outer = self.gen(Scope([("id", "int")] + list(zip(names, kinds)), "id"))
        if r.random() < 0.5 and self.use("subq:cte"):
            prefix, source = f"WITH s AS ({inner}) ", "s"
        else:
            self.use("subq:derived")
            prefix, source = "", f"({inner}) AS s"
        if r.random() < 0.5:
            sql, ordered = self.group_query(outer, source, self.where(outer, 0.4))
        else:
            e2, n2, _ = self.items(outer, r.randint(1, 3), "o")
            order, ordered = self.order_all(n2)
            sql = f"SELECT {self.select_list(e2, n2)} FROM {source}{self.where(outer, 0.5)}" \
                  f"{order}"
        return prefix + sql, ordered

    def _setop(self) -> tuple[str, bool]:
        r = self.rng
        op = r.choice(("UNION", "UNION ALL", "INTERSECT", "EXCEPT", "INTERSECT ALL",
                       "EXCEPT ALL"))
        if not self.use(f"setop:{op.lower().replace(' ', '_')}"):
            raise NoProduction()
        gt, gu = self.gen(self.t_scope()), self.gen(self.u_scope())
        shared = [k for k in gt.scope.kinds() if gu.has(k)]
        kinds = [r.choice(shared) for _ in range(r.randint(1, 2))]
        left = ", ".join(f"{gt.expr(k, 1)} AS c{i + 1}" for i, k in enumerate(kinds))
        right = ", ".join(gu.expr(k, 1) for k in kinds)
        sql = f"SELECT {left} FROM t{self.where(gt, 0.5)} {op} " \
              f"SELECT {right} FROM u{self.where(gu, 0.5)}"
        if r.random() < 0.3:
            return sql + " ORDER BY " + ", ".join(str(i + 1) for i in range(len(kinds))), True
        return sql, False

    def _star(self) -> tuple[str, bool]:
        r = self.rng
        g = self.gen(self.t_scope())
        names = [n for n, _ in self.t_cols]
        form = r.choice(("plain", "exclude", "replace", "rename", "columns", "qualified"))
        if not self.use(f"star:{form}"):
            raise NoProduction()
        if form == "exclude":
            gone = r.sample(names, r.randint(1, min(3, len(names) - 1)))
            sel = f"* EXCLUDE ({', '.join(gone)})"
        elif form == "replace":
            n, k = r.choice(self.t_cols)
            sel = f"* REPLACE ({g.expr(k, 1)} AS {n})"
        elif form == "rename":
            n = r.choice(names)
            sel = f"* RENAME ({n} AS renamed)"
        elif form == "columns":
            sel = f"COLUMNS('{r.choice(('^d', 'i', '^(id|sym)$', 'e'))}')"
        elif form == "qualified":
            sel = "t.*"
        else:
            sel = "*"
        return f"SELECT {sel} FROM t{self.where(g, 0.7)}", False

    def _pivot(self) -> tuple[str, bool]:
        r = self.rng
        g = self.gen(self.t_scope())
        on = r.choice([c for c, k in self.t_cols if k in ("str", "bool", "date")
                       and not c.startswith("c")] or ["sym"])
        kind = r.choice(("int", "float"))
        agg = r.choice(("sum", "count", "min", "max", "avg"))
        using = f"{agg}({g.col(kind)})"
        group = r.choice([g for g in ("date", "sym", "date, sym") if on not in g.split(", ")]
                         or ["id"])
        form = r.choice(("statement", "subquery", "in_list"))
        if not self.use(f"pivot:{form}"):
            raise NoProduction()
        if form == "in_list":
            values = sorted({row[[c for c, _ in self.t_cols].index("sym")]
                             for row in self.dataset.table("t").rows}) or ["A"]
            values = r.sample(values, min(len(values), r.randint(1, 3)))
            lits = ", ".join("'" + v.replace("'", "''") + "'" for v in values)
            return f"SELECT * FROM t PIVOT ({using} FOR sym IN ({lits}) GROUP BY {group})", \
                False
        stmt = f"PIVOT t ON {on} USING {using} GROUP BY {group}"
        if form == "subquery":
            return f"SELECT * FROM ({stmt}) AS p", False
        return stmt, False

    def _timetravel(self) -> tuple[str, bool]:
        """A table read at one of its versions (one per append; 0 is the empty table)."""
        r = self.rng
        self.use("clause:at_version")
        versions = len(self.dataset.table("t").chunks())
        source = f"t AT (VERSION => {r.randint(0, versions)})"
        g = self.gen(self.t_scope())
        if r.random() < 0.4:
            aggs = [g.agg_expr(k) for k in self.kinds(g.scope, r.randint(1, 2))]
            names = [f"a{i + 1}" for i in range(len(aggs))]
            return f"SELECT {self.select_list(aggs, names)} FROM {source}{self.where(g, 0.4)}", \
                False
        exprs, names, _ = self.items(g, r.randint(1, 3))
        order, ordered = self.order_all(names)
        return f"SELECT {self.select_list(exprs, names)} FROM {source}{self.where(g, 0.5)}" \
               f"{order}", ordered

    def _params(self) -> tuple[str, bool]:
        """Literals bound as parameters (``db.sql(text, params=[...])``, ``$n``)."""
        r = self.rng
        g = self.gen(self.t_scope(), params=True)
        if r.random() < 0.4:
            aggs = [g.agg_expr(k) for k in self.kinds(g.scope, r.randint(1, 2))]
            names = [f"a{i + 1}" for i in range(len(aggs))]
            return f"SELECT {self.select_list(aggs, names)} FROM t{self.where(g, 0.8)}", False
        exprs, names, _ = self.items(g, r.randint(1, 3))
        order, ordered = self.order_all(names)
        return f"SELECT {self.select_list(exprs, names)} FROM t{self.where(g, 0.8)}{order}", \
            ordered

    def _nofrom(self) -> tuple[str, bool]:
        g = self.gen(Scope([], "1"))
        exprs: list[str] = []
        names: list[str] = []
        for i in range(self.rng.randint(1, 4)):
            kind = self.rng.choice(("int", "float", "str", "bool", "date", "ts", "time"))
            exprs.append(g.expr(kind, 2))
            names.append(f"c{i + 1}")
        self.use("clause:no_from")
        return f"SELECT {self.select_list(exprs, names)}", False
