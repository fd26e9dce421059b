"""ADBC's Flight SQL driver (a client no one here wrote) against the service, over TLS with
a password: statements with and without parameters, fetch_arrow_table, get_objects,
get_info, bulk ingest by a writer, pandas ``read_sql`` and polars ``read_database``; the
answers equal the same query run in-process."""

from __future__ import annotations

import datetime as dt

import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.flight as flight
import pytest

import hfq
from hfq.service.protocol import MESSAGES, pack
from tests.service.conftest import PW, Env, analyst_view


def in_process(env: Env, sql: str, params: list | None = None) -> pl.DataFrame:
    return env.db.sql(sql, params=params).collect()


def _text(frame: pl.DataFrame) -> list:
    """Rows with floats and categoricals as text (NaN equal to NaN), in one order."""
    frame = frame.with_columns(pl.col(pl.Float64, pl.Float32, pl.Categorical).cast(pl.String))
    return sorted(frame.rows(), key=repr)


def same(got, want: pl.DataFrame) -> None:
    got = pl.from_arrow(got) if not isinstance(got, pl.DataFrame) else got
    assert got.columns == want.columns
    assert _text(got) == _text(want)


def test_statements_with_and_without_parameters(env):
    with env.adbc("root") as conn, conn.cursor() as cur:
        sql = "SELECT symbol, count(*) AS n, avg(bid) AS bid FROM quotes GROUP BY symbol"
        cur.execute(sql)
        same(cur.fetch_arrow_table(), in_process(env, sql))
        sql = "SELECT symbol, time, bid FROM quotes WHERE symbol = ? AND date = ?"
        params = ["IBM", dt.date(2007, 8, 1)]
        cur.execute(sql, params)
        got = cur.fetch_arrow_table()
        assert got.num_rows > 0
        same(got, in_process(env, sql, params))
        cur.execute("SELECT count(*) AS n FROM quotes WHERE bid > ?", [50.0])
        assert cur.fetchone()[0] == in_process(env, "SELECT count(*) AS n FROM quotes "
                                                    "WHERE bid > 50.0")["n"][0]


def test_a_prepared_statement_runs_again_with_new_parameters(env):
    with env.adbc("ann") as conn, conn.cursor() as cur:
        counts = []
        for symbol in ("IBM", "MSFT", "SECRET"):
            cur.execute("SELECT count(*) AS n FROM quotes WHERE symbol = ?", [symbol])
            counts.append(cur.fetchone()[0])
        assert counts[0] > 0 and counts[1] > 0 and counts[2] == 0


def test_get_objects_and_get_info(env):
    with env.adbc("root") as conn:
        objects = conn.adbc_get_objects(depth="all").read_all().to_pylist()
        [catalog] = objects
        assert catalog["catalog_name"] == "hfq"
        [schema] = catalog["catalog_db_schemas"]
        tables = {t["table_name"]: t for t in schema["db_schema_tables"]}
        assert set(tables) == {"hfq_audit", "quotes", "trades"}
        assert [c["column_name"] for c in tables["quotes"]["table_columns"]] == \
            env.db["quotes"].schema.names
        info = conn.adbc_get_info()
        assert info["vendor_name"] == "hfq" and info["vendor_arrow_version"] == pa.__version__
        assert conn.adbc_get_table_types() == ["SYSTEM TABLE", "TABLE"]


def test_bulk_ingest_by_a_writer(fresh):
    rows = fresh.db.sql("SELECT * EXCLUDE (mmid) FROM quotes WHERE ex = 'N' LIMIT 5") \
        .to_arrow()
    before = len(fresh.db["quotes"])
    with fresh.adbc("wendy") as conn, conn.cursor() as cur:
        assert cur.adbc_ingest("quotes", rows, mode="append") == 5
    t = fresh.db["quotes"].refresh()
    assert len(t) == before + 5
    assert fresh.audit(kind="commit")[-1]["detail"] == f"version {t.version}"


def test_pandas_and_polars_read_through_the_driver(env):
    sql = "SELECT symbol, date, bid FROM quotes WHERE symbol IN ('IBM', 'AA') ORDER BY " \
          "symbol, date, time, bid"
    want = in_process(env, sql)
    with env.adbc("ann") as conn:
        frame = pd.read_sql(sql, conn)
        assert list(frame.columns) == ["symbol", "date", "bid"]
        polars_frame = pl.read_database(sql, connection=conn)
    visible = env.db.sql(sql.replace("WHERE", "WHERE ex IN ('N', 'P') AND")).collect()
    assert len(frame) == len(polars_frame) == visible.height < want.height
    same(polars_frame, visible)
    same(pl.from_pandas(frame, nan_to_null=False).with_columns(pl.col("date").cast(pl.Date)),
         visible)


def test_admins_read_the_audit_with_sql(fresh):
    with fresh.adbc("ann") as conn, conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM quotes")
        cur.fetchall()
    with fresh.adbc("root") as conn, conn.cursor() as cur:
        cur.execute("SELECT user, kind, outcome, rows FROM hfq_audit WHERE kind = 'query' "
                    "AND user = 'ann'")
        assert cur.fetchall() == [("ann", "query", "ok", 1)]
        cur.execute("SELECT count(*) FROM hfq_audit WHERE kind = 'login' AND user = ?", ["ann"])
        assert cur.fetchone()[0] == 1


def test_a_wrong_password_is_refused(env):
    import adbc_driver_manager
    with pytest.raises(adbc_driver_manager.Error, match="unknown user or wrong password"):
        env.adbc("ann", PW["bob"])


def _strings(table: pa.Table) -> list:
    """Rows with dictionaries decoded and floats as text (NaN equal to NaN), in one order."""
    frame = pl.from_arrow(table.cast(pa.schema([
        pa.field(f.name, f.type.value_type if pa.types.is_dictionary(f.type) else f.type)
        for f in table.schema])))
    assert isinstance(frame, pl.DataFrame)
    return sorted(frame.with_columns(pl.col(pl.Float64).cast(pl.String)).rows(), key=repr)


WIRE_DICT = pa.dictionary(pa.int32(), pa.string())


def test_categoricals_travel_as_dictionaries_replaced_batch_by_batch(env):
    """Every partition has its own dictionaries: each batch carries its own (a replacement),
    and what ADBC, pandas and polars read equals the rows written (pyarrow's, not the
    engine's: NULL and empty exchanges and market makers, the hidden symbol); the schema
    promised before the fetch is the one streamed."""
    sql = "SELECT * FROM quotes"
    client = flight.FlightClient(env.uri, tls_root_certs=env.ca_pem.encode())
    options = flight.FlightCallOptions(headers=[client.authenticate_basic_token("root",
                                                                                PW["root"])])
    info = client.get_flight_info(flight.FlightDescriptor.for_command(
        pack(MESSAGES["CommandStatementQuery"](query=sql))), options)
    promised = info.schema
    assert client.do_get(info.endpoints[0].ticket, options).read_all().schema == promised
    client.close()
    with env.adbc("root") as conn, conn.cursor() as cur:
        cur.execute(sql)
        got = cur.fetch_arrow_table()
        frame = pd.read_sql(sql, conn)
        polars_frame = pl.read_database(sql, connection=conn)
    assert got.schema == promised
    assert [got.schema.field(n).type for n in ("symbol", "ex", "mmid")] == [WIRE_DICT] * 3
    dictionaries = {tuple(c.dictionary.to_pylist()) for c in got.column("symbol").chunks}
    assert len(dictionaries) > 1            # the stream replaced them between batches
    assert _strings(got) == _strings(env.rows)
    assert frame["symbol"].dtype == "category" and len(frame) == env.rows.num_rows
    from_pandas = pl.from_pandas(frame, nan_to_null=False).to_arrow()
    assert _strings(from_pandas.cast(got.schema)) == _strings(env.rows)
    assert polars_frame.schema["symbol"] == pl.Categorical()
    assert _strings(polars_frame.to_arrow()) == _strings(env.rows)


def test_an_empty_answer_with_categoricals_reads_back(env):
    """No rows, no batch, no dictionary: ADBC's (Go) and Arrow C++'s readers (pyarrow's,
    hfq's client) take the stream with only its schema."""
    sql = "SELECT symbol, ex, bid FROM quotes WHERE symbol = ?"
    with env.adbc("ann") as conn, conn.cursor() as cur:
        cur.execute(sql, ["NO-SUCH"])
        got = cur.fetch_arrow_table()
        frame = pd.read_sql("SELECT symbol, ex FROM quotes WHERE symbol = 'NO-SUCH'", conn)
    assert got.num_rows == 0 and got.schema.field("symbol").type == WIRE_DICT
    assert len(frame) == 0 and list(frame.columns) == ["symbol", "ex"]
    ann = hfq.connect(env.uri, user="ann", password=PW["ann"], tls_root_certs=env.ca_pem)
    empty = ann.sql(sql, params=["NO-SUCH"]).to_arrow()
    assert empty.num_rows == 0 and empty.schema == got.schema


def test_a_policy_filtered_day_through_the_driver_equals_the_visible_rows(env):
    """Under a row policy and a mask, every partition's batches (dictionaries holding only
    what the batch uses or more) decode to exactly the visible rows."""
    with env.adbc("ann") as conn, conn.cursor() as cur:
        cur.execute("SELECT * FROM quotes WHERE date = ?", [dt.date(2007, 8, 1)])
        got = cur.fetch_arrow_table()
    want = analyst_view(env.rows)
    want = want.filter(pc.equal(want.column("date"), pa.scalar(dt.date(2007, 8, 1))))
    assert got.schema.names == want.schema.names
    assert _strings(got) == _strings(want)
