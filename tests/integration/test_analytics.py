"""Analytics on the embedded one-node cluster, against DuckDB SQL over the same rows."""

from __future__ import annotations

import duckdb
import pytest

import hfq
from hfq import analytics as ha

pytestmark = pytest.mark.timeout(300)

DAYS = ("2007-08-01", "2007-08-02")


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    db = hfq.connect(str(tmp_path_factory.mktemp("analytics")))
    yield db
    db.close()


@pytest.fixture(scope="module")
def data():
    return hfq.synth.taq_table(dates=DAYS, rows_per_day=40_000, symbols=40, seed=11)


@pytest.fixture(scope="module")
def quotes(db, data):
    t = db.create_table("quotes", hfq.schemas.TAQ,
                        partition_by=hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 4)),
                        sort_by=("symbol", "time"))
    t.append(data)
    return t


def test_spread_by_minute_matches_duckdb_sql(quotes, data):
    got = ha.spread_by_minute(quotes, dates=DAYS)
    rows = data.select(["time", "bid", "ofr"])   # noqa: F841 - DuckDB reads it by name
    want = duckdb.sql("""
        SELECT make_time(hour(t), minute(t), 0) AS minute,
               avg((ofr - bid) / (ofr + bid) * 2) AS avg_spread, count(*) AS n
        FROM (SELECT CAST(time AS TIME) AS t, bid, ofr FROM rows)
        WHERE t BETWEEN TIME '09:30:00' AND TIME '15:59:59'
          AND ofr > bid AND bid > 0 AND ofr / bid < 1.2
        GROUP BY 1 ORDER BY 1""").pl()
    assert got.height == want.height > 300
    assert got["minute"].to_list() == want["minute"].to_list()
    assert got["n"].to_list() == want["n"].to_list()
    assert got["avg_spread"].to_numpy() == pytest.approx(want["avg_spread"].to_numpy(),
                                                         rel=1e-12)
    # a window and a symbol filter; nothing matching gives an empty frame of the same shape
    ibm = ha.spread_by_minute(quotes, symbols="IBM", start="10:00:00", end="10:59:59")
    assert ibm["minute"].min().hour == 10 and ibm["minute"].max().hour == 10
    assert ha.spread_by_minute(quotes, dates="1999-01-01").columns == got.columns
