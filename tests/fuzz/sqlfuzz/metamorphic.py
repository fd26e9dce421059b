"""SQLancer's metamorphic oracles, on hfq alone: answers that must agree with each other.

* **TLP** (ternary logic partitioning): for any predicate ``p`` each row makes ``p`` TRUE,
  FALSE or NULL, so ``WHERE p``, ``WHERE NOT (p)`` and ``WHERE (p) IS NULL`` partition the rows
  of the query without a WHERE.  Checked for projections (the multiset union equals the whole),
  ``SELECT DISTINCT`` (the distinct union), aggregates (``count``, ``sum``, ``min``, ``max`` of
  the three parts combine to the whole; NaN is the largest float, as in DuckDB) and GROUP BY
  (the same, per group).
* **NoREC** (non-optimising reference engine): ``SELECT count(*) FROM t WHERE p`` equals
  ``SELECT sum(CASE WHEN p THEN 1 ELSE 0 END) FROM t`` (the predicate evaluated as a value on
  every row, where no filter pushdown or pruning can act), and the ids ``WHERE p`` keeps are the
  rows whose ``p`` projected is TRUE.

A check whose query hfq refuses is counted as refused, not as a violation.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import hfq
from hfq.errors import HfqError
from sqlfuzz.compare import Answer, _sort_key, render, unmatched
from sqlfuzz.differential import construct, polars_words, run_hfq
from sqlfuzz.queries import QueryGen

__all__ = ["Check", "Result", "random_check"]


@dataclass
class Result:
    status: str   # "ok", "violated", "refused"
    detail: str = ""
    leak: bool = False   # the refusal is in polars' words (a defect)


@dataclass
class Check:
    oracle: str
    kind: str
    queries: list[str]
    verdict: Callable[[list[Answer]], str | None]
    tags: frozenset[str] = frozenset()

    def run(self, db: hfq.Database) -> Result:
        answers: list[Answer] = []
        for sql in self.queries:
            got = run_hfq(db, sql)
            if isinstance(got, HfqError):
                return Result("refused", construct(got), leak=polars_words(str(got)))
            if isinstance(got, BaseException):
                return Result("violated", f"{sql}: {type(got).__name__}: {got}")
            answers.append(got)
        why = self.verdict(answers)
        return Result("ok") if why is None else Result("violated", f"{self.kind}: {why}")


def _multiset(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return sorted(rows, key=_sort_key)


def _same_rows(a: list[tuple[Any, ...]], b: list[tuple[Any, ...]]) -> str | None:
    if len(a) != len(b):
        return f"{len(a)} rows in the parts, {len(b)} in the whole"
    if unmatched(a, b, [True] * (len(a[0]) if a else 0)) is not None:
        return f"parts {render(_multiset(a))} vs whole {render(_multiset(b))}"
    return None


def _nan_last(v: Any) -> tuple[int, Any]:
    return (1, 0) if isinstance(v, float) and math.isnan(v) else (0, v)


def _combine(fn: str, values: list[Any]) -> Any:
    if fn == "count":
        return sum(v or 0 for v in values)
    present = [v for v in values if v is not None]
    if not present:
        return None
    if fn == "sum":
        return sum(present)
    return (min if fn == "min" else max)(present, key=_nan_last)


def _tlp_queries(base: str, p: str, tail: str = "") -> list[str]:
    return [f"{base}{tail}", f"{base} WHERE {p}{tail}", f"{base} WHERE NOT ({p}){tail}",
            f"{base} WHERE ({p}) IS NULL{tail}"]


def random_check(gen: QueryGen) -> Check:
    """A TLP or NoREC check over the dataset of ``gen``."""
    r = gen.rng
    gen.tags = set()
    g = gen.gen(gen.t_scope())
    p = g.expr("bool", 2)
    kind = r.choice(("tlp_where", "tlp_where", "tlp_distinct", "tlp_aggregate", "tlp_group",
                     "norec_count", "norec_rows"))
    if kind in ("tlp_where", "tlp_distinct"):
        exprs, names, _ = gen.items(g, r.randint(1, 3))
        distinct = "DISTINCT " if kind == "tlp_distinct" else ""
        base = f"SELECT {distinct}{gen.select_list(exprs, names)} FROM t"
        qs = _tlp_queries(base, p)

        def verdict(ans: list[Answer]) -> str | None:
            return _tlp_rows(ans, distinct=bool(distinct))
        return Check("tlp", kind, qs, verdict, frozenset(gen.tags))
    if kind in ("tlp_aggregate", "tlp_group"):
        aggs = []
        fns = []
        for _ in range(r.randint(1, 3)):
            fn = r.choice(("count", "count_star", "sum", "min", "max"))
            if fn == "count_star":
                aggs.append("count(*)")
                fns.append("count")
                continue
            k = "int" if fn == "sum" else r.choice([k for k in g.scope.kinds() if k != "bool"])
            aggs.append(f"{fn}({g.expr(k, 1)})")
            fns.append(fn)
        select = ", ".join(f"{a} AS a{i + 1}" for i, a in enumerate(aggs))
        if kind == "tlp_aggregate":
            qs = _tlp_queries(f"SELECT {select} FROM t", p)
            nkeys = 0
        else:
            key, _ = gen.key(g)
            qs = _tlp_queries(f"SELECT {key} AS k1, {select} FROM t", p, " GROUP BY 1")
            nkeys = 1

        def verdict(ans: list[Answer]) -> str | None:
            if not nkeys:   # one row each: the parts' values combine to the whole's
                if any(len(a.rows) != 1 for a in ans):
                    return f"row counts {[len(a.rows) for a in ans]}, expected one each"
                combined = [tuple(_combine(fn, [a.rows[0][i] for a in ans[1:]])
                                  for i, fn in enumerate(fns))]
                return _same_rows(combined, ans[0].rows)
            groups: dict[Any, list[Any]] = {}
            for part in ans[1:]:
                for row in part.rows:
                    slot = groups.setdefault(_group_key(row[:nkeys]),
                                             [row[:nkeys], [[] for _ in fns]])
                    for i, v in enumerate(row[nkeys:]):
                        slot[1][i].append(v)
            combined = [tuple(k) + tuple(_combine(fn, vs) for fn, vs in zip(fns, values))
                        for k, values in groups.values()]
            return _same_rows(combined, ans[0].rows)
        return Check("tlp", kind, qs, verdict, frozenset(gen.tags))
    if kind == "norec_count":
        qs = [f"SELECT count(*) AS n FROM t WHERE {p}",
              f"SELECT sum(CASE WHEN {p} THEN 1 ELSE 0 END) AS n FROM t"]

        def verdict(ans: list[Answer]) -> str | None:
            a, b = ans[0].rows[0][0], ans[1].rows[0][0] or 0
            return None if a == b else f"count(*) WHERE p = {a}, sum(CASE WHEN p ...) = {b}"
        return Check("norec", kind, qs, verdict, frozenset(gen.tags))
    qs = [f"SELECT id FROM t WHERE {p}", f"SELECT id, ({p}) AS v FROM t"]

    def verdict(ans: list[Answer]) -> str | None:
        kept = Counter(r[0] for r in ans[0].rows)
        true = Counter(r[0] for r in ans[1].rows if r[1] is True)
        return None if kept == true else \
            f"WHERE p keeps ids {sorted(kept.elements())}, p is TRUE for {sorted(true.elements())}"
    return Check("norec", kind, qs, verdict, frozenset(gen.tags))


def _group_key(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """GROUP BY's notion of one key: NaNs together, -0.0 with 0.0, else exact."""
    return tuple(("nan",) if isinstance(v, float) and math.isnan(v) else
                 (type(v).__name__ if v is not None else "null", v + 0.0
                  if isinstance(v, float) else v) for v in values)


def _same_value(u: Any, v: Any) -> bool:
    """SQL's DISTINCT: NULL with NULL, NaN with NaN, -0.0 with 0.0, else exact equality (no
    tolerance: 5e-324 and 0.0 are distinct values)."""
    if isinstance(u, float) and isinstance(v, float) and math.isnan(u) and math.isnan(v):
        return True
    return u == v and (u is None) == (v is None)


def _tlp_rows(ans: list[Answer], *, distinct: bool) -> str | None:
    """TLP of rows: the whole (``ans[0]``) is the union of the three parts.  Under DISTINCT
    both sides are made distinct here as the answers hold them: a DECIMAL with a scale is
    compared as a float, so two values a unit apart near 2^63 are one value in the parts'
    union while the whole (made distinct exactly, by the engine) still has both (2-node fuzz
    seed 101, dataset 102432).  Whether the whole kept duplicates is the differential's
    question (DuckDB's DISTINCT), not this check's."""
    parts = ans[1].rows + ans[2].rows + ans[3].rows
    whole = ans[0].rows
    if distinct:
        parts, whole = _distinct(parts), _distinct(whole)
    return _same_rows(parts, whole)


def _distinct(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for row in rows:
        if not any(all(_same_value(u, v) for u, v in zip(kept, row)) for kept in out):
            out.append(row)
    return out
