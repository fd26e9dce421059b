"""The security suite: a restricted user's attempts through every path -- a masked column, a
row outside its policy, a table it has no grant on, a write without the right; subqueries,
CTEs, joins, set operations, time travel, EXPLAIN, error messages, statistics, metadata,
prepared statements, bulk ingest -- each refused or filtered, through ADBC's Flight SQL
driver over TLS, and each in the audit log with its outcome.  Attacks on identity (wrong,
expired, forged and revoked tokens; brute force) are in test_auth.py."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import adbc_driver_manager
import duckdb
import polars as pl
import pyarrow as pa
import pytest

from tests.service.conftest import SECRETS, Env, analyst_view

Error = adbc_driver_manager.Error


@pytest.fixture(scope="module")
def ann(env):
    conn = env.adbc("ann")
    yield conn
    conn.close()


@pytest.fixture(scope="module")
def oracle(env):
    con = duckdb.connect()
    con.register("quotes", analyst_view(env.rows))
    return con


def fetch(conn: Any, sql: str, params: list | None = None) -> pa.Table:
    with conn.cursor() as cur:
        if params is None:
            cur.execute(sql)
        else:
            cur.execute(sql, params)
        return cur.fetch_arrow_table()


def text_of(value: Any) -> str:
    return str(value.to_pylist() if isinstance(value, pa.Table) else value)


def no_secret(value: Any) -> None:
    text = text_of(value)
    assert not any(s in text for s in SECRETS), text[:500]


def canon(table: pa.Table) -> list:
    frame = pl.from_arrow(table)
    frame = frame.with_columns(pl.col(pl.Float64, pl.Float32).cast(pl.String))
    return sorted(frame.rows(), key=repr)


@dataclass
class Attempt:
    """One attempt: ``run(env, ann, oracle)`` asserts it was refused or filtered and returns
    the audit record's ``(kind, text)`` to look for; ``outcome``: what the audit says."""

    run: Callable[..., tuple[str, str]]
    outcome: tuple[str, ...]


def refused(sql: str, params: list | None = None, *, outcome: tuple[str, ...] = ("denied",),
            user: str = "ann") -> Attempt:
    def run(env: Env, ann: Any, oracle: Any) -> tuple[str, str]:
        conn = ann if user == "ann" else env.adbc(user)
        try:
            with pytest.raises(Error) as exc:
                fetch(conn, sql, params)
        finally:
            if conn is not ann:
                conn.close()
        no_secret(exc.value)
        assert "mmid" not in str(exc.value).split("columns")[-1].split("(line")[0]
        return "query", sql
    return Attempt(run, outcome)


def filtered(sql: str, params: list | None = None, oracle_sql: str | None = None) -> Attempt:
    def run(env: Env, ann: Any, oracle: Any) -> tuple[str, str]:
        got = fetch(ann, sql, params)
        no_secret(got)
        assert "mmid" not in got.column_names
        want = oracle.sql(oracle_sql or sql, params=params).to_arrow_table()
        assert canon(got) == canon(want)
        return "query", sql
    return Attempt(run, ("ok",))


def plan_has_no_statistics(env: Env, ann: Any, oracle: Any) -> tuple[str, str]:
    sql = "EXPLAIN SELECT symbol, count(*) FROM quotes WHERE symbol = 'IBM' GROUP BY symbol"
    text = "\n".join(fetch(ann, sql).column(0).to_pylist())
    assert "rows" not in text.split("\n", 2)[-1] and "bytes" not in text
    assert "is_in" not in text and "'P'" not in text
    return "query", sql


def error_shows_no_hidden_value(sql: str) -> Attempt:
    def run(env: Env, ann: Any, oracle: Any) -> tuple[str, str]:
        with pytest.raises(Error) as exc:
            fetch(ann, sql)
        no_secret(exc.value)
        for hidden_ex in ("'Q'", "'Z'", "'T'"):
            assert hidden_ex not in str(exc.value)
        return "query", sql
    return Attempt(run, ("error",))


def objects_list_what_is_readable(env: Env, ann: Any, oracle: Any) -> tuple[str, str]:
    objects = ann.adbc_get_objects(depth="all").read_all().to_pylist()
    tables = [t for c in objects for s in c["catalog_db_schemas"] for t in s["db_schema_tables"]]
    assert [t["table_name"] for t in tables] == ["quotes"]
    assert "mmid" not in [c["column_name"] for c in tables[0]["table_columns"]]
    return "", ""


def table_schema_of_unreadable(env: Env, ann: Any, oracle: Any) -> tuple[str, str]:
    with pytest.raises(Error):
        ann.adbc_get_table_schema("trades")
    assert "mmid" not in ann.adbc_get_table_schema("quotes").names
    return "metadata", "GetTables trades"


def bob_sees_no_table(env: Env, ann: Any, oracle: Any) -> tuple[str, str]:
    with env.adbc("bob") as bob:
        objects = bob.adbc_get_objects(depth="tables").read_all().to_pylist()
        assert [t for c in objects for s in c["catalog_db_schemas"] or []
                for t in s["db_schema_tables"] or []] == []
    return "", ""


def ingest(user: str, table: str, rows: pa.Table, *, mode: str = "append") -> Attempt:
    def run(env: Env, ann: Any, oracle: Any) -> tuple[str, str]:
        with env.adbc(user) as conn, conn.cursor() as cur:
            with pytest.raises(Error):
                cur.adbc_ingest(table, rows, mode=mode)
        return "commit", table
    return Attempt(run, ("denied", "error"))


def _rows(env_rows: pa.Table, ex: str, *, mmid: bool = False) -> pa.Table:
    row = env_rows.slice(0, 1)
    row = row.set_column(row.schema.get_field_index("ex"), "ex", pa.array([ex]))
    return row if mmid else row.drop_columns(["mmid"])


VISIBLE_MAX = "SELECT max(bid) FILTER (WHERE bid < 'inf'::DOUBLE) AS hi FROM quotes"

ATTEMPTS: dict[str, Attempt | Callable[[], Attempt]] = {
    # a masked column
    "mask-select": refused("SELECT mmid FROM quotes"),
    "mask-where": refused("SELECT count(*) FROM quotes WHERE mmid = 'HIDDENMM'"),
    "mask-order": refused("SELECT symbol FROM quotes ORDER BY mmid"),
    "mask-group": refused("SELECT mmid, count(*) FROM quotes GROUP BY mmid"),
    "mask-subquery": refused("SELECT (SELECT max(mmid) FROM quotes) AS m"),
    "mask-cte": refused("WITH q AS (SELECT mmid FROM quotes) SELECT * FROM q"),
    "mask-qualified": refused("SELECT q.mmid FROM quotes q"),
    "mask-prepared": refused("SELECT mmid FROM quotes WHERE symbol = ?", ["IBM"]),
    "mask-star": filtered("SELECT * FROM quotes"),
    "mask-exclude": filtered("SELECT * EXCLUDE (bid) FROM quotes"),
    "mask-columns-regex": filtered("SELECT COLUMNS('.*m.*') FROM quotes"),
    # rows outside the policy
    "rows-where-hidden-ex": filtered("SELECT * FROM quotes WHERE ex = 'Q'"),
    "rows-hidden-symbol": filtered("SELECT * FROM quotes WHERE symbol = 'SECRET'"),
    "rows-count": filtered("SELECT count(*) AS n FROM quotes"),
    "rows-count-distinct": filtered("SELECT count(DISTINCT symbol) AS n FROM quotes"),
    "rows-statistics": filtered(VISIBLE_MAX),
    "rows-subquery-in": filtered("SELECT count(*) AS n FROM quotes WHERE symbol IN "
                                 "(SELECT symbol FROM quotes WHERE ex = 'Z')"),
    "rows-subquery-from": filtered("SELECT ex, count(*) AS n FROM (SELECT ex FROM quotes) "
                                   "GROUP BY ex"),
    "rows-exists": filtered("SELECT count(*) AS n FROM quotes WHERE EXISTS "
                            "(SELECT 1 FROM quotes b WHERE b.symbol = 'SECRET')"),
    "rows-cte": filtered("WITH s AS (SELECT DISTINCT symbol FROM quotes) "
                         "SELECT count(*) AS n FROM s"),
    "rows-join": filtered("SELECT count(*) AS n FROM quotes a JOIN quotes b ON "
                          "a.symbol = b.symbol AND a.date = b.date AND a.time = b.time"),
    "rows-union": filtered("SELECT symbol FROM quotes UNION ALL SELECT symbol FROM quotes"),
    "rows-except": filtered("SELECT DISTINCT ex FROM quotes EXCEPT SELECT 'N'"),
    "rows-window": filtered("SELECT symbol, date, count(*) OVER (PARTITION BY symbol, date) "
                            "AS n FROM quotes"),
    "rows-time-travel": filtered("SELECT count(*) AS n FROM quotes AT (VERSION => 1)",
                                 oracle_sql="SELECT count(*) AS n FROM quotes"),
    "rows-prepared": filtered("SELECT * FROM quotes WHERE symbol = ?", ["SECRET"]),
    "rows-prepared-date": filtered("SELECT symbol, bid FROM quotes WHERE date = ? AND "
                                   "symbol = ?", [dt.date(2007, 8, 1), "IBM"]),
    "rows-explain": Attempt(plan_has_no_statistics, ("ok",)),
    "rows-error-cast": error_shows_no_hidden_value("SELECT CAST(symbol AS INTEGER) FROM quotes"),
    "rows-error-ex": error_shows_no_hidden_value("SELECT CAST(ex AS INTEGER) FROM quotes"),
    # tables without a grant
    "table-trades": refused("SELECT * FROM trades"),
    "table-join": refused("SELECT count(*) FROM quotes q JOIN trades t ON q.symbol = t.symbol"),
    "table-subquery": refused("SELECT count(*) FROM quotes WHERE symbol IN "
                              "(SELECT symbol FROM trades)"),
    "table-union": refused("SELECT symbol FROM quotes UNION SELECT symbol FROM trades"),
    "table-time-travel": refused("SELECT * FROM trades AT (VERSION => 1)"),
    "table-audit": refused("SELECT * FROM hfq_audit"),
    "table-bob": refused("SELECT count(*) FROM quotes", user="bob"),
    "meta-objects": Attempt(objects_list_what_is_readable, ()),
    "meta-table-schema": Attempt(table_schema_of_unreadable, ("ok",)),
    "meta-bob": Attempt(bob_sees_no_table, ()),
    # writes
    "write-sql-insert": refused("INSERT INTO quotes SELECT * FROM quotes",
                                outcome=("error",)),
    "write-sql-delete": refused("DELETE FROM quotes", outcome=("error",)),
    "write-sql-drop": refused("DROP TABLE quotes", outcome=("error",)),
}


def _write_attempts(rows: pa.Table) -> dict[str, Attempt]:
    return {
        "write-no-insert-grant": ingest("ann", "quotes", _rows(rows, "N")),
        "write-outside-row-policy": ingest("wendy", "quotes", _rows(rows, "Q")),
        "write-masked-column": ingest("wendy", "quotes", _rows(rows, "N", mmid=True)),
        "write-other-table": ingest("wendy", "trades", _rows(rows, "N")),
        "write-audit-table": ingest("root", "hfq_audit", _rows(rows, "N")),
        "write-create-table": ingest("wendy", "newtable", _rows(rows, "N"), mode="create"),
    }


WRITES = ["write-no-insert-grant", "write-outside-row-policy", "write-masked-column",
          "write-other-table", "write-audit-table", "write-create-table"]


def test_there_are_at_least_40_attempts():
    assert len(ATTEMPTS) + len(WRITES) >= 40


@pytest.mark.parametrize("name", sorted(ATTEMPTS) + WRITES)
def test_attempt_refused_or_filtered_and_audited(env, ann, oracle, name):
    attempt = ATTEMPTS[name] if name in ATTEMPTS else _write_attempts(env.rows)[name]
    assert isinstance(attempt, Attempt)
    kind, text = attempt.run(env, ann, oracle)
    if not kind:
        return
    found = [r for r in env.audit(kind=kind) if r["text"] == text]
    assert found, f"no audit record of {kind} {text!r}"
    assert found[-1]["outcome"] in attempt.outcome, found[-1]
    no_secret(found[-1]["detail"] or "")


def test_the_writer_appends_inside_its_policy(fresh):
    before = len(fresh.db["quotes"])
    with fresh.adbc("wendy") as conn, conn.cursor() as cur:
        assert cur.adbc_ingest("quotes", _rows(fresh.rows, "N"), mode="append") == 1
    assert len(fresh.db["quotes"].refresh()) == before + 1
    [commit] = fresh.audit(kind="commit", outcome="ok")
    assert commit["user"] == "wendy" and commit["rows"] == 1 and commit["text"] == "quotes"
