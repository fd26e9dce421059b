"""hfq's thin client: ``hfq.connect("grpc+tls://...")`` -- sql, scan, tables, append through
the service, as the user, with hfq's errors."""

from __future__ import annotations

import polars as pl
import pytest

import hfq
from hfq.errors import AccessDeniedError, AuthenticationError, QueryError
from tests.service.conftest import PW, Env, analyst_view


def remote(env: Env, user: str) -> hfq.Database:
    return hfq.connect(env.uri, user=user, password=PW[user], tls_root_certs=env.ca_pem)


def test_sql_scan_and_tables_as_the_user(env):
    ann = remote(env, "ann")
    assert ann.tables() == ["quotes"] and "trades" not in ann
    visible = pl.from_arrow(analyst_view(env.rows))
    got = ann.sql("SELECT count(*) AS n FROM quotes WHERE symbol = ?", params=["IBM"])
    assert got.to_arrow()["n"][0].as_py() == visible.filter(pl.col("symbol") == "IBM").height
    scan = ann["quotes"].scan(columns=["symbol", "bid"], dates="2007-08-02",
                              symbols=["IBM", "AA", "SECRET"], where="bid > 0")
    want = visible.filter(pl.col("date") == pl.date(2007, 8, 2),
                          pl.col("symbol").is_in(["IBM", "AA", "SECRET"]), pl.col("bid") > 0)
    frame = scan.to_polars()
    assert frame.columns == ["symbol", "bid"] and frame.height == want.height > 0
    assert scan.count() == want.height
    assert "mmid" not in ann["quotes"].schema.names
    assert "partitions" not in scan.explain().split("\n", 2)[-1]


def test_errors_are_hfq_errors(env):
    with pytest.raises(AuthenticationError):
        hfq.connect(env.uri, user="ann", password="wrong password!", tls_root_certs=env.ca_pem)
    ann = remote(env, "ann")
    with pytest.raises(QueryError, match="unknown table 'trades'"):
        ann.sql("SELECT * FROM trades").to_arrow()
    with pytest.raises(AccessDeniedError):
        ann["quotes"].append(env.rows.slice(0, 1).drop_columns(["mmid"]))


def test_append_through_the_service(fresh):
    wendy = remote(fresh, "wendy")
    rows = fresh.db.sql("SELECT * EXCLUDE (mmid) FROM quotes WHERE ex = 'N' LIMIT 3").to_arrow()
    before = len(fresh.db["quotes"])
    assert wendy["quotes"].append(pl.from_arrow(rows)) == 3
    assert len(fresh.db["quotes"].refresh()) == before + 3
