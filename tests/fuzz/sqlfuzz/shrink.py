"""Shrinking a mismatch to a minimal reproducer: the query tree, then the rows and columns.

A candidate (a smaller query, fewer rows, fewer columns) is kept when it still gives the same
kind of mismatch (``wrong``, ``crash`` with the same exception type, ``answered_error``) *and*
DuckDB's answer does not depend on the order of the rows (its answers on the stored, reversed
and shuffled rows agree) -- so a shrink never ends at a query without one right answer (a
window order that lost its ``id`` tie-breaker, a LIMIT under a partial ORDER BY).

Queries are shrunk on sqlglot's tree, greedily, smaller text first: drop a clause (WHERE,
HAVING, QUALIFY, ORDER BY with its LIMIT, DISTINCT, a join), drop an item of a list (select
list, GROUP BY, ORDER BY, arguments of AND/OR chains), replace a set operation by one side,
replace an expression by one of its operands or by NULL or 1.  Rows are shrunk by delta
debugging (halves, quarters, ..., single rows), each table in turn; then the columns the
query does not name are dropped, the appends merged and the partitioning simplified.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator
from typing import Any, Protocol

import duckdb
import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

import hfq
from sqlfuzz.compare import differ
from sqlfuzz.data import Dataset, TableSpec
from sqlfuzz.differential import Outcome, order_keys, run_duckdb, run_query
from sqlfuzz.known import Known, explain

__all__ = ["Loader", "order_is_total", "shrink"]


class Loader(Protocol):
    db: hfq.Database
    cons: list[duckdb.DuckDBPyConnection]

    def load(self, dataset: Dataset) -> None: ...


def order_is_total(sql: str) -> bool:
    """Whether the statement's ORDER BY names every output column (by name, position or the
    same expression), so that its order is total up to equal rows."""
    keys = order_keys(sql)
    if keys is None:
        return False
    tree = sqlglot.parse_one(sql, read="duckdb")
    while isinstance(tree, exp.SetOperation):
        tree = tree.this
    return set(keys) >= set(range(len(tree.expressions)))


def _signature(out: Outcome) -> tuple[str, str]:
    return out.status, out.detail.split(":")[0] if out.status == "crash" else ""


class _Checker:
    def __init__(self, loader: Loader, target: tuple[str, str],
                 known: list[Known] | None, params: tuple[Any, ...] = ()) -> None:
        self.loader = loader
        self.params = params
        self.target = target
        self.known = known or []
        self.checks = 0

    def __call__(self, sql: str) -> Outcome | None:
        self.checks += 1
        ordered = order_is_total(sql)
        out = run_query(self.loader.db, self.loader.cons, sql, ordered=ordered,
                        params=self.params)
        if not out.mismatch or _signature(out) != self.target:
            return None
        if explain(sql, frozenset(), out.status, out.detail, self.known) is not None:
            return None   # drifted into an open finding: not the same bug
        answers = [run_duckdb(c, sql, self.params) for c in self.loader.cons]
        if any(isinstance(a, BaseException) for a in answers):
            if not all(isinstance(a, BaseException) for a in answers):
                return None
        elif any(differ(a, answers[0], ordered=ordered) is not None for a in answers[1:]):
            return None   # DuckDB's own answer depends on the order of the rows
        return out


def _structural(node: exp.Expression) -> bool:
    return isinstance(node, (exp.Select, exp.From, exp.Table, exp.TableAlias, exp.Identifier,
                             exp.Join, exp.DataType, exp.Ordered, exp.Order, exp.Group,
                             exp.Where, exp.Having, exp.Limit, exp.Offset, exp.With, exp.CTE,
                             exp.Interval, exp.Var, exp.WindowSpec, exp.Star, exp.Distinct,
                             exp.Qualify, exp.Subquery))


_CLAUSES = ("where", "having", "qualify", "distinct", "group")


def query_candidates(sql: str) -> Iterator[str]:
    """Smaller variants of ``sql``, the largest cuts first."""
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except SqlglotError:
        return
    nodes = list(tree.walk(bfs=True))

    def variant(index: int, edit: Any) -> str | None:
        t = tree.copy()
        target = list(t.walk(bfs=True))[index]
        try:
            out = edit(t, target)
            return (out or t).sql(dialect="duckdb")
        except (SqlglotError, ValueError, AttributeError, TypeError):
            return None

    edits: list[tuple[int, Any]] = []
    for i, node in enumerate(nodes):
        if isinstance(node, exp.Select):
            if node.args.get("order") is not None:
                edits.append((i, lambda t, n: [n.set(k, None) for k in
                                               ("order", "limit", "offset")] and None))
            for key in _CLAUSES:
                if node.args.get(key) is not None:
                    edits.append((i, lambda t, n, k=key: n.set(k, None)))
            for j, _ in enumerate(node.args.get("joins") or []):
                edits.append((i, lambda t, n, j=j: n.args["joins"].pop(j) and None))
            if node.args.get("limit") is not None:
                edits.append((i, lambda t, n: [n.set(k, None) for k in ("limit", "offset")]
                              and None))
        if isinstance(node, exp.SetOperation):
            edits.append((i, lambda t, n: n.this if n is t else n.replace(n.this) and None))
            edits.append((i, lambda t, n: n.expression if n is t else
                          n.replace(n.expression) and None))
        if isinstance(node, exp.With):
            pass
        parent = node.parent
        if parent is not None and isinstance(parent.args.get(node.arg_key), list) and \
                len(parent.args[node.arg_key]) > 1 and node.arg_key in (
                    "expressions", "partition_by") and not isinstance(node, exp.CTE):
            edits.append((i, lambda t, n: n.pop() and None))
        if isinstance(node, exp.Window):
            for key in ("partition_by", "spec"):
                if node.args.get(key):
                    edits.append((i, lambda t, n, k=key: n.set(k, None)))
    for i, node in enumerate(nodes):
        if _structural(node) or isinstance(node, (exp.Column, exp.Literal, exp.Null,
                                                  exp.Boolean)):
            continue
        if node.parent is None:
            continue
        for child in node.iter_expressions():
            if _structural(child) and not isinstance(child, exp.Subquery):
                continue
            if isinstance(node, exp.Alias) and isinstance(child, exp.Identifier):
                continue
            edits.append((i, lambda t, n, c=child: n.replace(
                _find_same(n, c)) and None))
        if not isinstance(node, exp.Alias):
            edits.append((i, lambda t, n: n.replace(exp.null()) and None))
            edits.append((i, lambda t, n: n.replace(exp.Literal.number(1)) and None))
    seen = {sql}
    for index, edit in edits:
        out = variant(index, edit)
        if out and out not in seen and len(out) < len(sql):
            seen.add(out)
            yield out


def _find_same(node: exp.Expression, child: exp.Expression) -> exp.Expression:
    """In a copied tree, the child of ``node`` equal to ``child`` (from the original)."""
    for c in node.iter_expressions():
        if c == child:
            return c.copy()
    raise ValueError("child not found")


def _shrink_query(sql: str, check: _Checker, deadline: float) -> str:
    improved = True
    while improved and time.monotonic() < deadline:
        improved = False
        for cand in query_candidates(sql):
            if time.monotonic() > deadline:
                break
            if check(cand) is not None:
                sql, improved = cand, True
                break
    return sql


def _ddmin(rows: list[Any], test: Any, deadline: float) -> list[Any]:
    n = 2
    while len(rows) >= 1 and time.monotonic() < deadline:
        size = max(1, len(rows) // n)
        chunks = [rows[i:i + size] for i in range(0, len(rows), size)]
        reduced = False
        for i in range(len(chunks)):
            rest = [r for j, c in enumerate(chunks) if j != i for r in c]
            if len(rest) < len(rows) and test(rest):
                rows, n, reduced = rest, max(n - 1, 2), True
                break
        if not reduced:
            if size == 1:
                break
            n = min(len(rows), n * 2)
    return rows


def _named_columns(sql: str) -> set[str] | None:
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except SqlglotError:
        return None
    if any(isinstance(s, exp.Star) for s in tree.find_all(exp.Star)) or \
            "COLUMNS(" in sql.upper():
        return None
    return {c.name for c in tree.find_all(exp.Column)} | \
        {i.name for i in tree.find_all(exp.Identifier)}


def _with_table(ds: Dataset, spec: TableSpec) -> Dataset:
    return Dataset(ds.seed, [spec if t.name == spec.name else t for t in ds.tables])


def shrink(loader: Loader, dataset: Dataset, sql: str, outcome: Outcome, *,
           seconds: float = 120.0, known: list[Known] | None = None,
           params: tuple[Any, ...] = ()) -> tuple[Dataset, str, Outcome]:
    """The smallest (dataset, sql) found within ``seconds`` that still mismatches like
    ``outcome`` (and, given ``known`` open findings, is not explained by one of them: a shrink
    must not drift from a new bug to a known one); the loader is left holding the result's
    dataset."""
    deadline = time.monotonic() + seconds
    check = _Checker(loader, _signature(outcome), known, params)
    loader.load(dataset)
    canonical = sqlglot.parse_one(sql, read="duckdb").sql(dialect="duckdb")
    if canonical != sql and check(canonical) is not None:
        sql = canonical
    if check(sql) is None:   # not reproducible on its own, or a known finding after all
        return dataset, sql, outcome
    sql = _shrink_query(sql, check, deadline)

    def data_ok(ds: Dataset) -> bool:
        loader.load(ds)
        return check(sql) is not None

    for name in ("t", "u"):
        spec = dataset.table(name)
        if not spec.rows:
            continue

        def test(rows: list[Any], spec: TableSpec = spec, dataset: Dataset = dataset) -> bool:
            s = copy.copy(spec)
            s.rows, s.cuts = rows, [c for c in spec.cuts if c < len(rows)]
            return data_ok(_with_table(dataset, s))
        rows = _ddmin(list(spec.rows), test, deadline)
        s = copy.copy(spec)
        s.rows, s.cuts = rows, [c for c in spec.cuts if c < len(rows)]
        dataset = _with_table(dataset, s)
    # simpler storage: one append, then one partition scheme after another
    for name in ("t", "u"):
        for change in ({"cuts": []}, {"scheme": ("date",)}, {"scheme": ("hash", 1)},
                       {"sort_by": ()}):
            spec = dataset.table(name)
            if all(getattr(spec, k) == v for k, v in change.items()):
                continue
            s = copy.copy(spec)
            for k, v in change.items():
                setattr(s, k, v)
            if time.monotonic() < deadline and data_ok(_with_table(dataset, s)):
                dataset = _with_table(dataset, s)
    named = _named_columns(sql)
    if named is not None:
        for name in ("t", "u"):
            spec = dataset.table(name)
            keep = [i for i, (c, _) in enumerate(spec.columns)
                    if c in named or c in ("id", "date", "sym") or c in spec.sort_by]
            if len(keep) < len(spec.columns):
                s = copy.copy(spec)
                s.columns = [spec.columns[i] for i in keep]
                s.rows = [tuple(r[i] for i in keep) for r in spec.rows]
                if data_ok(_with_table(dataset, s)):
                    dataset = _with_table(dataset, s)
    loader.load(dataset)
    sql = _shrink_query(sql, check, deadline + 10)
    final = check(sql)
    return dataset, sql, final or outcome
