"""F104 (refining F93): the outer WHERE conjuncts DuckDB pushes below a CTE's / FROM
subquery's projection run before its items that can raise; the rest after every row's items
(``hfq/engine/sql/pushdown.py``).  DuckDB 2.0.1 is the oracle, at test time, on the same
rows: where it answers hfq answers the same, where it raises hfq raises -- and for the shapes
hfq cannot tell DuckDB pushes, hfq raises as unoptimized DuckDB does (``plan_error``)."""

from __future__ import annotations

import datetime as dt
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "fuzz"))
from sqlfuzz.campaign import duckdb_connections  # noqa: E402
from sqlfuzz.data import Dataset, TableSpec, load_duckdb, load_hfq  # noqa: E402
from sqlfuzz.differential import run_query  # noqa: E402

import hfq  # noqa: E402

D1, D2, D3 = dt.date(2024, 1, 5), dt.date(2024, 1, 8), dt.date(2024, 1, 9)
T = TableSpec("t", [("id", "LONG"), ("date", "DATE"), ("sym", "SYMBOL"), ("d0", "DOUBLE"),
                    ("l0", "LONG"), ("f0", "DOUBLE"), ("ts", "TIMESTAMP")], ("date",), (),
              [(1, D1, "A", float("-inf"), 5, 0.5, dt.datetime(2024, 1, 5, 10)),
               (2, D1, "BB", 2.5, 6, 1.5, dt.datetime(2024, 1, 5, 11)),
               (3, D2, "CCC", 1.0, None, None, dt.datetime(2024, 1, 8, 10)),
               (4, D3, "DDDD", 7.0, 8, 2.5, dt.datetime(2024, 1, 9, 10))])
"""Row 1's d0 (-inf) fails CAST(d0 AS BIGINT); every filter below drops row 1."""

ITEMS = "id, date, sym, l0, f0, ts, CAST(d0 AS BIGINT) AS c1, id AS k, id + 1 AS e"
FORMS = {"cte": "WITH s AS (SELECT {items} FROM t) SELECT c1 FROM s WHERE {f}",
         "sub": "SELECT s.c1 FROM (SELECT {items} FROM t) AS s WHERE {f}"}

# DuckDB answers (pushes the conjunct: it cannot throw); so does hfq
ANSWERED = [
    "id = 3", "3 = id", "s.id = 3", "k = 3", "k > 1 AND k < 4", "id IN (2, 3)",
    "id NOT IN (1, 2)", "id IN (3, NULL)", "id = NULL", "id BETWEEN 2 AND 3",
    "id NOT BETWEEN 0 AND 1", "l0 IS NULL", "l0 IS NOT NULL AND id > 1", "id <> 1",
    "NOT (id <= 1)", "id = 3 OR id = 2", "id = 3 OR sym = 'BB'", "id = 3 OR l0 IS NULL",
    "(id > 1 AND id < 4)", "sym LIKE 'B%'", "sym NOT LIKE 'A%'", "sym ILIKE 'b%'",
    "sym LIKE '%B_' OR id = 3", "sym = 'BB'", "sym > 'A'", "sym IN ('BB', 'CCC')",
    "date = DATE '2024-01-08'", "date = '2024-01-08'", "date > '2024-01-06'",
    "date = TIMESTAMP '2024-01-08 00:00:00'", "date BETWEEN DATE '2024-01-06' AND "
    "DATE '2024-01-09'", "ts > TIMESTAMP '2024-01-06 00:00:00'", "ts >= '2024-01-06'",
    "ts > DATE '2024-01-06'", "id = 3.5", "id > 1.5", "id > -1 AND sym <> 'A'",
    "f0 > 1", "f0 IS NULL", "id = l0", "l0 < id", "f0 > id", "FALSE",
    "id IS DISTINCT FROM 1 AND id IS NOT DISTINCT FROM 3",
    # a pushed conjunct beside others: the rest runs after every kept row's items
    "id = 3 AND c1 > 0", "date = DATE '2024-01-08' AND e > id",
    "id > 1 AND id + l0 > 0",
]
# DuckDB raises (the filter stays above the projection: it can throw, or reads a computed
# item); so does hfq
RAISED = [
    "id > id + 1", "CASE id WHEN 3 THEN id END > (id - 1)", "c1 = 1", "c1 IS NULL",
    "id + l0 = 7", "id = 3 OR c1 > 0", "abs(id) = 3", "CAST(id AS INTEGER) = 3",
    "id % 2 = 0", "e > id", "sym LIKE 'B!%' ESCAPE '!'",
]
NESTED = "SELECT c FROM (SELECT k AS j, e AS x, c1 AS c FROM (SELECT id AS k, id + 1 AS e, " \
         "CAST(d0 AS BIGINT) AS c1 FROM t) AS a) AS b WHERE {f}"
# DuckDB answers (it pushes them, after rewriting: id + 1 = 4 is id = 3), hfq cannot tell
# and raises as unoptimized DuckDB does
UNSURE = ["e = 4", "id + 1 = 4", "length(sym) = 2", "upper(sym) = 'BB'",
          "CASE id WHEN 3 THEN id END > 0", "coalesce(l0, 0) = 0"]


@pytest.fixture(scope="module")
def engines(tmp_path_factory):
    db = hfq.connect(str(tmp_path_factory.mktemp("pushdown") / "db"))
    dataset = Dataset(0, [T])
    load_hfq(db, dataset)
    cons = duckdb_connections(1)
    load_duckdb(cons[0], db, dataset)
    return db, cons


def _status(engines, form: str, f: str) -> str:
    db, cons = engines
    out = run_query(db, cons, FORMS[form].format(items=ITEMS, f=f), ordered=False)
    assert not out.leak, out.leak
    return out.status


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("f", ANSWERED)
def test_conjuncts_duckdb_pushes_answer(engines, form, f):
    assert _status(engines, form, f) == "same"


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("f", RAISED)
def test_conjuncts_duckdb_keeps_above_raise(engines, form, f):
    assert _status(engines, form, f) == "agreed_error"


@pytest.mark.parametrize("f", ["j > j + 1", "x > j", "j = 3 OR c = 1"])
def test_nested_conjuncts_duckdb_keeps_above_raise(engines, f):
    db, cons = engines
    assert run_query(db, cons, NESTED.format(f=f), ordered=False).status == "agreed_error"


def test_nested_pass_through_of_a_computed_item_raises_as_unoptimized_duckdb(engines):
    # x is b's pass-through of a's computed e = id + 1: pushed below b's items, not a's
    db, cons = engines
    assert run_query(db, cons, NESTED.format(f="x > 2"), ordered=False).status == "plan_error"
    assert run_query(db, cons, NESTED.format(f="j > 2"), ordered=False).status == "same"


@pytest.mark.parametrize("f", ["FALSE", "NULL", "1 > 2", "'a' = 'b'", "NOT TRUE",
                               "CAST(NULL AS BOOLEAN)", "id = 3 AND 1 > 2",
                               "CASE ('_' LIKE 'A%') WHEN TRUE THEN (NULL ILIKE 'a%b') END"])
def test_constant_conjuncts_duckdb_folds_answer(engines, f):
    # a constant false (or NULL) conjunct: DuckDB folds it and computes no item (fuzz seed 47)
    assert _status(engines, "cte", f) == "same"


@pytest.mark.parametrize("f", ["TRUE", "1 = 1", "(1 // 0) > 0", "9223372036854775807 + 1 > 0"])
def test_constant_conjuncts_that_keep_rows_or_raise_raise(engines, f):
    assert _status(engines, "cte", f) == "agreed_error"


@pytest.mark.parametrize("f", UNSURE)
def test_shapes_hfq_cannot_tell_raise_as_unoptimized_duckdb(engines, f):
    assert _status(engines, "cte", f) == "plan_error"


@pytest.mark.parametrize("sql", [
    # the derived query's own WHERE, another CTE reference, an outer aggregate/ORDER BY
    "WITH s AS (SELECT id, sym, CAST(d0 AS BIGINT) AS c1 FROM t WHERE sym <> 'Z') "
    "SELECT c1 FROM s WHERE id = 3",
    "WITH s AS (SELECT id, sym, CAST(d0 AS BIGINT) AS c1 FROM t) SELECT c1 FROM s WHERE "
    "id = 3 UNION ALL SELECT c1 FROM s WHERE id = 2",
    "WITH s AS (SELECT id, sym, CAST(d0 AS BIGINT) AS c1 FROM t) SELECT sym, sum(c1) AS n "
    "FROM s WHERE id > 1 GROUP BY sym",
    "WITH s AS (SELECT id, sym, CAST(d0 AS BIGINT) AS c1 FROM t) SELECT c1 FROM s "
    "WHERE id > 1 ORDER BY c1 LIMIT 2",
    "SELECT c1 FROM (SELECT *, CAST(d0 AS BIGINT) AS c1 FROM t) WHERE id = 3",
    # a join inside the derived query; derived queries nested (pushed through both)
    "SELECT c1 FROM (SELECT a.id, CAST(a.d0 AS BIGINT) AS c1 FROM t AS a JOIN t AS b ON "
    "a.id = b.id) AS s WHERE id = 3",
    "SELECT c1 FROM (SELECT * FROM (SELECT id, CAST(d0 AS BIGINT) AS c1 FROM t) AS a) AS b "
    "WHERE id = 3",
    "SELECT c FROM (SELECT k AS j, c1 + 0 AS c FROM (SELECT id AS k, CAST(d0 AS BIGINT) AS c1 "
    "FROM t) AS a) AS b WHERE j IN (3, 4)",
])
def test_pushed_around_other_clauses(engines, sql):
    db, cons = engines
    assert run_query(db, cons, sql, ordered=False).status == "same"


CTE = "WITH s AS (SELECT id, sym, CAST(d0 AS BIGINT) AS c1 FROM t) "


@pytest.mark.parametrize("sql", [
    "SELECT c1 FROM s JOIN t AS u ON s.id = u.id WHERE s.id = 3",
    "SELECT c1 FROM s LEFT JOIN t AS u ON s.id = u.id + 10 WHERE s.id = 3 AND u.id IS NULL",
    "SELECT c1 FROM s CROSS JOIN t AS u WHERE s.id = 3",
    "SELECT c1 FROM s, t AS u WHERE s.id = 3 AND u.id = 2",
    "SELECT c1 FROM s SEMI JOIN t AS u ON s.id = u.id WHERE s.id = 3",
    "SELECT c1 FROM s ANTI JOIN t AS u ON s.id = u.id + 10 WHERE s.id = 3",
    "SELECT c1 FROM s JOIN t AS u USING (id) WHERE id = 3",
    "SELECT c1 FROM s JOIN t AS u ON s.id = u.id JOIN t AS v ON v.id = u.id WHERE s.id = 3",
])
def test_pushed_into_the_left_side_of_joins_that_keep_its_rows(engines, sql):
    db, cons = engines
    assert run_query(db, cons, CTE + sql, ordered=False).status == "same"


@pytest.mark.parametrize("sql", [
    "SELECT c1 FROM s FULL JOIN t AS u ON s.id = u.id WHERE s.id = 3",   # kept above
    "SELECT c1 FROM s JOIN t AS u ON s.id = u.id WHERE s.id > s.id + 1",
    "SELECT c1 FROM s JOIN t AS u ON s.id = u.id WHERE s.id = 3 OR u.id = 2",
])
def test_joins_duckdb_keeps_above_raise(engines, sql):
    db, cons = engines
    assert run_query(db, cons, CTE + sql, ordered=False).status == "agreed_error"


@pytest.mark.parametrize("sql", [
    # a LIMIT in the derived query: DuckDB pushes nothing below it (raises); so does hfq
    "SELECT c1 FROM (SELECT id, CAST(d0 AS BIGINT) AS c1 FROM t LIMIT 10) AS s WHERE id = 3",
    # a window item: a filter below it would change it; DuckDB raises too
    "SELECT c1 FROM (SELECT id, CAST(d0 AS BIGINT) AS c1, sum(id) OVER () AS w FROM t) AS s "
    "WHERE id = 3 AND w > 0",
])
def test_not_pushed_below_limit_or_window(engines, sql):
    db, cons = engines
    assert run_query(db, cons, sql, ordered=False).status in ("agreed_error", "plan_error")


def test_partition_filter_on_a_pass_through_column_prunes_again(engines):
    db, _ = engines
    sql = ("WITH s AS (SELECT date, sym, CAST(d0 AS BIGINT) AS c FROM t) SELECT sym, sum(c) "
           "AS n FROM s WHERE date = DATE '2024-01-08' AND c >= 0 GROUP BY sym")
    q = db.sql(sql)
    assert "partitions: 1 kept, 2 pruned of 3" in q.explain()
    assert q.collect().rows() == [("CCC", 1)]
    sub = "SELECT c FROM (SELECT sym, CAST(d0 AS BIGINT) AS c FROM t) AS s WHERE sym = 'DDDD'"
    assert db.sql(sub).collect().rows() == [(7,)]
