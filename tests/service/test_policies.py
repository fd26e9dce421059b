"""Row policies and column masks where the engine reads a table, without the server: every
path of a query through a session derived for a restricted user gives DuckDB's answer over
the rows and columns that user may see (the oracle filters with pyarrow), and nothing it
returns -- rows, counts, plans, error messages -- holds a value of a row it may not see.
Ray-free and fast: the mutation check runs these."""

from __future__ import annotations

import duckdb
import polars as pl
import pyarrow as pa
import pytest

import hfq
from hfq.errors import AccessDeniedError, ArgumentError, QueryError
from hfq.service.policies import GrantAccess, compile_rows
from hfq.service.server import ServiceDatabase
from hfq.service.state import Grant, SecurityState, User
from tests.conftest import canonical
from tests.service.conftest import SECRETS, analyst_view, quotes_rows


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    db = hfq.connect(str(tmp_path_factory.mktemp("policies") / "db"))
    t = db.create_table("quotes", hfq.schemas.TAQ,
                        partition_by=hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 4)),
                        sort_by=("symbol", "time"))
    rows = quotes_rows()
    t.append(rows.slice(0, 1500))          # version 1
    t.append(rows.slice(1500))             # version 2
    db.create_table("trades", hfq.schemas.TRADES, partition_by=hfq.Value("date"))
    return db, rows


STATE = SecurityState(users={"ann": User("ann", "", roles=("analyst",)),
                             "bob": User("bob", "")}).with_grant(
    Grant("analyst", "quotes", frozenset({"SELECT"}), rows="ex IN ('N', 'P')",
          hidden=("mmid",)))


def as_user(db: hfq.Database, user: str, state: SecurityState = STATE) -> hfq.Database:
    access = GrantAccess(state, user, db.session)
    return hfq.Database.over(db.session.derive(user=user, access=access))


@pytest.fixture(scope="module")
def ann(store):
    return as_user(store[0], "ann")


@pytest.fixture(scope="module")
def oracle(store):
    con = duckdb.connect()
    view = analyst_view(store[1])
    con.register("quotes", view)
    return con


def _exact(frame: pl.DataFrame) -> pl.DataFrame:
    """Floats as their text (NaN equals NaN, -0.0 differs from 0.0), then canonical order."""
    out = canonical(frame)
    return canonical(out.with_columns(pl.col(pl.Float64, pl.Float32).cast(pl.String)))


def same(got: pl.DataFrame, con: duckdb.DuckDBPyConnection, sql: str) -> None:
    want = pl.from_arrow(con.sql(sql).to_arrow_table())
    assert _exact(got).rows() == _exact(want).rows()


def no_secret(value: object) -> None:
    text = str(value)
    for secret in SECRETS:
        assert secret not in text


# -- every path of a query reads only the visible rows and columns -------------------------
PATHS = {
    "select-star": "SELECT * FROM quotes",
    "count": "SELECT count(*) AS n FROM quotes",
    "group": "SELECT symbol, count(*) AS n, max(bid) AS hi FROM quotes GROUP BY symbol",
    "subquery-from": "SELECT count(*) AS n FROM (SELECT * FROM quotes) q",
    "subquery-in": "SELECT count(*) AS n FROM quotes WHERE symbol IN "
                   "(SELECT symbol FROM quotes WHERE ex = 'Q')",
    "subquery-scalar": "SELECT (SELECT count(*) FROM quotes) AS n",
    "exists": "SELECT count(*) AS n FROM quotes a WHERE EXISTS "
              "(SELECT 1 FROM quotes b WHERE b.symbol = 'SECRET')",
    "cte": "WITH q AS (SELECT symbol, ex FROM quotes) SELECT ex, count(*) AS n FROM q GROUP BY ex",
    "join": "SELECT a.symbol, count(*) AS n FROM quotes a JOIN quotes b "
            "ON a.symbol = b.symbol AND a.date = b.date AND a.time = b.time GROUP BY a.symbol",
    "union": "SELECT symbol FROM quotes UNION SELECT symbol FROM quotes",
    "except": "SELECT DISTINCT symbol FROM quotes EXCEPT SELECT symbol FROM quotes "
              "WHERE ex = 'N'",
    "window": "SELECT symbol, time, row_number() OVER (PARTITION BY symbol, date ORDER BY time, "
              "bid) AS rn FROM quotes",
    "distinct-ex": "SELECT DISTINCT ex FROM quotes",
    "where-secret": "SELECT * FROM quotes WHERE symbol = 'SECRET'",
    "point-read": "SELECT symbol, date, time, bid FROM quotes WHERE symbol = 'IBM' "
                  "AND date = DATE '2007-08-01'",
}


@pytest.mark.parametrize("name", sorted(PATHS))
def test_each_path_sees_only_the_visible_rows(ann, oracle, name):
    got = ann.sql(PATHS[name]).collect()
    same(got, oracle, PATHS[name])
    no_secret(got.to_dicts())


def test_rowid_is_refused_under_a_row_policy_and_read_as_its_user_without(store, ann):
    """The service's database (its ``_sql_table`` adds the system tables) passes a
    statement's ``rowid`` on to the table's read, as the user's database does -- except under
    a row policy: the numbering counts every stored row, so its gaps would reveal hidden
    rows."""
    db = store[0]
    sql = "SELECT rowid, symbol, time FROM quotes ORDER BY rowid LIMIT 5"
    for state, user in ((STATE, "ann"), (FULL, "cy")):
        access = GrantAccess(state, user, db.session)
        sdb = ServiceDatabase.over(db.session.derive(user=user, access=access))
        assert isinstance(sdb, ServiceDatabase)
        sdb.access = access
        if user == "ann":
            for where in (sdb, ann):
                with pytest.raises(QueryError, match="rowid .* row policy"):
                    where.sql(sql).collect()
            continue
        got = sdb.sql(sql).collect()
        assert got.height == 5 and got.equals(db.sql(sql).collect())


FULL = SecurityState(users={"cy": User("cy", "")}).with_grant(
    Grant("cy", "quotes", frozenset({"SELECT"}), hidden=("mmid",)))


def test_select_star_has_no_masked_column(ann):
    assert "mmid" not in ann.sql("SELECT * FROM quotes").columns
    assert "mmid" not in ann["quotes"].scan().columns


def test_a_masked_column_is_unknown_and_never_listed(ann):
    for sql in ("SELECT mmid FROM quotes", "SELECT count(*) FROM quotes WHERE mmid = 'X'",
                "SELECT * FROM quotes ORDER BY mmid"):
        with pytest.raises(QueryError) as exc:
            ann.sql(sql).collect()
        assert "unknown column 'mmid'" in str(exc.value)
        assert "mmid" not in str(exc.value).split("columns:")[-1]
    with pytest.raises(ArgumentError):
        ann["quotes"].scan(columns=["mmid"])


def test_time_travel_reads_an_old_version_under_the_policy(ann, store):
    old = analyst_view(store[1].slice(0, 1500))
    got = ann.sql("SELECT count(*) AS n FROM quotes AT (VERSION => 1)").collect()
    assert got["n"][0] == old.num_rows


def test_counts_and_scans_count_only_visible_rows(ann, store):
    visible = analyst_view(store[1]).num_rows
    assert ann["quotes"].scan().count() == visible           # the catalog would say 3,009
    assert ann["quotes"].scan(dates="2007-08-01").count() == \
        analyst_view(store[1]).filter(pa.compute.equal(
            analyst_view(store[1]).column("date"), pa.scalar(
                __import__("datetime").date(2007, 8, 1)))).num_rows
    assert ann.sql("SELECT * FROM quotes").count() == visible
    assert len(ann["quotes"].scan().to_arrow()) == visible


def test_a_scan_filter_runs_after_the_policy(ann, oracle):
    q = ann["quotes"].scan(where=pl.col("bid") > 50, columns=["symbol", "bid", "ex"])
    same(q.collect(), oracle, "SELECT symbol, bid, ex FROM quotes WHERE bid > 50")


def test_explain_shows_no_statistics_nor_the_policy(ann):
    for sql in ("SELECT * FROM quotes WHERE symbol = 'IBM'",
                "SELECT symbol, count(*) FROM quotes GROUP BY symbol"):
        text = ann.sql(sql).explain()
        assert "rows" not in text and "partitions" not in text.split("\n", 2)[-1]
        assert "is_in" not in text and "'Q'" not in text and "3,009" not in text


def test_an_error_never_shows_a_value_the_user_may_not_see(ann):
    # the cast fails on a visible symbol; a hidden one must not be the one it names
    for sql in ("SELECT CAST(symbol AS INTEGER) FROM quotes",
                "SELECT 1 / (bid - 99.0) FROM quotes WHERE symbol IN ('SECRET', 'IBM')",
                "SELECT CAST(ex AS INTEGER) FROM quotes"):
        try:
            ann.sql(sql).collect()
        except QueryError as exc:
            no_secret(exc)
            assert "'Q'" not in str(exc) and "'Z'" not in str(exc)


def test_a_filter_never_runs_on_a_hidden_row(ann):
    # 10 // (mode - 77) divides by zero on the hidden rows alone: run on them, it would
    # raise, and so tell the user such a row exists
    got = ann.sql("SELECT symbol FROM quotes WHERE 10 // (mode - 77) > -100").collect()
    assert got.height == ann["quotes"].scan().count()
    got = ann["quotes"].scan(where=pl.col("mode") != 77).count()
    assert got == ann["quotes"].scan().count()


def test_the_session_refuses_hidden_columns_and_unsafe_filters(store):
    db = store[0]
    s = db.session.derive(user="ann", access=GrantAccess(STATE, "ann", db.session))
    m = db.session.snapshot("quotes")
    with pytest.raises(ArgumentError, match="no column 'mmid'"):
        s.plan_read(m, columns=["symbol", "mmid"])
    with pytest.raises(ArgumentError, match="column 'mmid'"):
        s.plan_read(m, columns=["symbol"], where=pl.col("mmid") == "HIDDENMM")
    with pytest.raises(AccessDeniedError, match="under a row policy"):
        s.plan_read(m, where=pl.col("bid") > 0)      # it would run on the hidden rows too
    assert s.plan_read(m).spec.where is not None     # the policy is the read's filter


def test_a_grant_on_every_table_does_not_cover_the_audit(store):
    state = SecurityState(users={"cy": User("cy", "")}).with_grant(
        Grant("cy", "*", frozenset({"SELECT"})))
    access = GrantAccess(state, "cy", store[0].session)
    assert access.visible("quotes") and access.visible("trades")
    assert not access.visible("hfq_audit")


def test_tables_without_a_grant_do_not_exist(store):
    ann, bob = as_user(store[0], "ann"), as_user(store[0], "bob")
    assert ann.tables() == ["quotes"] and bob.tables() == []
    for user in (ann, bob):
        with pytest.raises(QueryError) as exc:
            user.sql("SELECT * FROM trades").collect()
        assert "trades" not in str(exc.value).split("tables:")[-1]
    with pytest.raises(QueryError):
        bob.sql("SELECT * FROM quotes").collect()
    with pytest.raises(hfq.errors.TableNotFoundError):
        bob["quotes"].scan().count()


def test_the_policy_applies_to_a_table_reached_by_any_name(store):
    # the session itself refuses, whatever facade reached the table
    db = store[0]
    s = db.session.derive(user="bob", access=GrantAccess(STATE, "bob", db.session))
    with pytest.raises(AccessDeniedError):
        s.plan_read(db.session.snapshot("quotes"))


def test_grants_of_several_roles_combine(store, oracle):
    state = SecurityState(users={"cy": User("cy", "", roles=("n_only", "p_only"))}) \
        .with_grant(Grant("n_only", "quotes", frozenset({"SELECT"}), rows="ex = 'N'",
                          hidden=("mmid", "bid"))) \
        .with_grant(Grant("p_only", "quotes", frozenset({"SELECT"}), rows="ex = 'P'",
                          hidden=("mmid",)))
    cy = as_user(store[0], "cy", state)
    assert "bid" in cy.sql("SELECT * FROM quotes").columns      # masked only by one role
    same(cy.sql("SELECT ex, count(*) AS n FROM quotes GROUP BY ex").collect(), oracle,
         "SELECT ex, count(*) AS n FROM quotes GROUP BY ex")


def test_row_conditions_are_row_wise_sql(store):
    m = store[0].session.snapshot("quotes")
    session = store[0].session
    for bad in ("symbol IN (SELECT symbol FROM quotes)", "bid > avg(bid)",
                "row_number() OVER () < 3", "nope = 1", "ex IN ('N'"):
        with pytest.raises(ArgumentError):
            compile_rows(bad, m, session)
    pred = compile_rows("ex IN ('N', 'P') AND bid > 0", m, session)
    assert isinstance(pred, pl.Expr)
