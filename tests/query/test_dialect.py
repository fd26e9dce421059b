"""The DuckDB dialect quants write (issue 24, "What to build" 4), each equal to DuckDB on the
same rows -- the adversarial tables ``m`` and ``w`` (tests/query/nasty.py, many partitions)
and the TAQ quotes and trades -- plus what DuckDB cannot check for us: bound parameters,
time travel, and the named errors."""

from __future__ import annotations

import datetime as dt

import pytest
from nasty import load
from oracle import assert_same
from oracle import load as load_taq

import hfq
from hfq.errors import SqlError

# (id, SQL, ordered)
DIALECT = [
    ("exclude", "SELECT * EXCLUDE (bid, ts, tod) FROM m", False),
    ("replace", "SELECT * EXCLUDE (ts) REPLACE (bid * 2 AS bid, upper(name) AS name) FROM m",
     False),
    ("rename", "SELECT * RENAME (bid AS b, name AS nm) FROM m", False),
    ("qualified_star_exclude", "SELECT m.* EXCLUDE (f) FROM m", False),
    ("columns_regex", "SELECT COLUMNS('^b') FROM m", False),
    ("columns_agg", "SELECT symbol, max(COLUMNS('^(bid|bidsiz|big)$')) FROM w GROUP BY symbol",
     False),
    ("qualify", "SELECT symbol, ts, bid FROM w QUALIFY row_number() OVER (PARTITION BY symbol "
                "ORDER BY bid DESC NULLS LAST, ts) <= 2", False),
    ("qualify_alias", "SELECT symbol, ts, rank() OVER (PARTITION BY symbol, date ORDER BY "
                      "bidsiz DESC) AS r FROM w QUALIFY r = 1", False),
    ("first_last_order", "SELECT symbol, first(bid ORDER BY ts) AS f, last(bid ORDER BY ts) AS "
                         "l, first(name ORDER BY ts DESC) AS n FROM w GROUP BY symbol", False),
    ("arg_min_max", "SELECT symbol, arg_min(ts, bid) AS a, arg_max(name, ts) AS b, "
                    "min_by(bidsiz, ts) AS c FROM w GROUP BY symbol", False),
    ("weighted_avg", "SELECT symbol, weighted_avg(bid, bidsiz) AS w, wavg(bidsiz, small) AS v "
                     "FROM w GROUP BY symbol", False),
    ("corr_covar", "SELECT symbol, corr(bid, bidsiz) AS c, covar_pop(bid, f) AS p, "
                   "covar_samp(bidsiz, small) AS s FROM w WHERE NOT isnan(bid) GROUP BY symbol",
     False),
    ("regr", "SELECT symbol, regr_slope(bid, bidsiz) AS s, regr_intercept(bid, bidsiz) AS i, "
             "regr_r2(bid, bidsiz) AS r, regr_count(bid, bidsiz) AS n, regr_avgx(bid, bidsiz) "
             "AS ax, regr_avgy(bid, bidsiz) AS ay, regr_sxx(bid, bidsiz) AS sxx, "
             "regr_syy(bid, bidsiz) AS syy, regr_sxy(bid, bidsiz) AS sxy FROM w "
             "WHERE NOT isnan(bid) GROUP BY symbol", False),
    ("regr_global", "SELECT regr_slope(bidsiz, small) AS s, corr(bidsiz, small) AS c, "
                    "covar_samp(bid, small) AS v FROM w WHERE NOT isnan(bid)", False),
    ("corr_edges", "SELECT corr(bid, bidsiz) AS c, covar_samp(bid, bidsiz) AS s, "
                   "covar_pop(bid, bidsiz) AS p, regr_slope(bid, bidsiz) AS r FROM m", False),
    ("ntile", "SELECT ts, ntile(3) OVER (PARTITION BY symbol, date ORDER BY ts) AS t FROM w",
     False),
    ("stddev", "SELECT symbol, stddev_pop(bid) AS p, stddev_samp(bidsiz) AS s, "
               "variance(small) AS v FROM w GROUP BY symbol", False),
    ("median_quantiles", "SELECT symbol, median(bidsiz) AS m, quantile_cont(bid, 0.25) AS a, "
                         "quantile_disc(bidsiz, 0.9) AS b FROM w GROUP BY symbol", False),
    ("within_group", "SELECT symbol, percentile_cont(0.9) WITHIN GROUP (ORDER BY bidsiz - small)"
                     " AS p, percentile_disc(0.5) WITHIN GROUP (ORDER BY bidsiz DESC) AS d "
                     "FROM w GROUP BY symbol", False),
    ("pivot_statement", "PIVOT (SELECT symbol, date, bidsiz FROM w) ON date "
                        "USING sum(bidsiz) GROUP BY symbol", False),
    ("pivot_in_dates", "SELECT * FROM (PIVOT (SELECT symbol, date, bidsiz FROM w) ON date IN "
                       "(DATE '2016-11-13', DATE '2016-11-15') USING count(bidsiz) "
                       "GROUP BY symbol)", False),
    ("asof_using", "SELECT t.symbol, t.date, t.time, t.price, q.bid FROM trades t ASOF JOIN "
                   "quotes q USING (symbol, date, time)", False),
    ("asof_expression", "SELECT t.symbol, t.time, t.price, q.bid FROM trades t ASOF LEFT JOIN "
                        "quotes q ON t.symbol = q.symbol AND t.date = q.date AND "
                        "t.time >= q.time + INTERVAL 2 SECONDS WHERE t.symbol IN ('IBM', 'GE')",
     False),
    ("range_join", "SELECT t.symbol, t.date, t.time, count(*) AS n, avg(q.bid) AS b FROM trades "
                   "t JOIN quotes q ON q.symbol = t.symbol AND q.date = t.date AND q.time "
                   "BETWEEN t.time - INTERVAL 30 SECONDS AND t.time WHERE t.symbol = 'IBM' "
                   "GROUP BY ALL", False),
    ("union_all", "SELECT symbol, bid FROM m UNION ALL SELECT symbol, bid FROM m1", False),
    ("union", "SELECT symbol, bidsiz FROM w WHERE bidsiz < 0 UNION SELECT symbol, bidsiz "
              "FROM m", False),
    ("intersect", "SELECT symbol, flag FROM w INTERSECT SELECT symbol, flag FROM m", False),
    ("except", "SELECT name FROM w EXCEPT SELECT name FROM m", False),
    ("union_order_limit", "SELECT bid FROM m UNION ALL SELECT bid FROM w ORDER BY 1 DESC "
                          "LIMIT 5", True),
    ("distinct_from", "SELECT count(*) AS n FROM w WHERE name IS DISTINCT FROM 'x' AND "
                      "flag IS NOT DISTINCT FROM true", False),
    ("filter", "SELECT symbol, count(*) FILTER (WHERE bid > 100) AS n, sum(bidsiz) FILTER "
               "(WHERE flag) AS s, avg(bid) FILTER (WHERE name = 'x') AS a FROM w "
               "GROUP BY symbol", False),
    ("last_value_ignore_nulls", "SELECT ts, last_value(bidsiz IGNORE NULLS) OVER (PARTITION BY "
                                "symbol, date ORDER BY ts) AS l, first_value(bid IGNORE NULLS) "
                                "OVER (PARTITION BY symbol, date ORDER BY ts) AS f FROM w",
     False),
    ("mixed_directions", "SELECT ts, row_number() OVER (PARTITION BY symbol ORDER BY bidsiz "
                         "DESC, ts) AS r, sum(small) OVER (PARTITION BY symbol ORDER BY "
                         "date DESC, ts) AS s FROM w", False),
    ("multi_unit_interval", "SELECT count(*) AS n FROM w WHERE time BETWEEN TIMESTAMP "
                            "'2016-11-14 09:30:00' AND TIMESTAMP '2016-11-14 09:30:00' + "
                            "INTERVAL '6 hours 30 minutes'", False),
    ("minus_infinity", "SELECT coalesce(max(time), '-infinity'::TIMESTAMPTZ) > "
                       "'-infinity'::TIMESTAMPTZ AS a FROM w", False),
    ("time_cast", "SELECT ts::TIME AS t, count(*) AS n FROM w WHERE ts::TIME >= TIME '09:30:00' "
                  "GROUP BY ALL", False),
    ("no_from", "SELECT 1 AS a, 0.1 + 0.2 = 0.3 AS b, 'x' || 'y' AS c, "
                "TIMESTAMP '2020-01-01 10:00:00' + INTERVAL '90 minutes' AS d", False),
    ("exists_correlated", "SELECT count(*) AS n FROM w WHERE EXISTS (SELECT 1 FROM m WHERE "
                          "m.symbol = w.symbol AND m.bid > 1)", False),
    ("in_correlated", "SELECT count(*) AS n FROM w WHERE bidsiz NOT IN (SELECT m.bidsiz FROM m "
                      "WHERE m.symbol = w.symbol)", False),
    ("scalar_correlated", "SELECT symbol, ts, bid > (SELECT avg(w2.bid) FROM w w2 WHERE "
                          "w2.symbol = w.symbol AND NOT isnan(w2.bid)) AS above, "
                          "(SELECT count(*) FROM m WHERE m.symbol = w.symbol) AS n FROM w",
     False),
]


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    d = hfq.connect(str(tmp_path_factory.mktemp("dialectdb")))
    load(d)
    load_taq(d)
    return d


@pytest.fixture(scope="module")
def duck(db):
    from nasty import oracle
    con = oracle(db)
    for name in ("quotes", "trades"):
        con.register(name, db[name].to_arrow())
    return con


@pytest.mark.parametrize("case", DIALECT, ids=[c[0] for c in DIALECT])
def test_dialect_equals_duckdb(db, duck, case):
    what, sql, ordered = case
    assert_same(db.sql(sql).collect(), duck.sql(sql).pl(), ordered=ordered, what=what)


def test_star_modifiers_name_the_columns_like_duckdb(db, duck):
    sql = "SELECT * EXCLUDE (ts) REPLACE (bidsiz + 1 AS bidsiz) RENAME (bid AS b) FROM m"
    assert db.sql(sql).collect().columns == duck.sql(sql).pl().columns


def test_parameters_are_bound_as_typed_literals(db, duck):
    sql = ("SELECT count(*) AS n, sum(bidsiz) AS s FROM w WHERE symbol = ? AND bid > ? "
           "AND time >= ? AND name IS DISTINCT FROM ?")
    args = ["A", 99.5, dt.datetime(2016, 11, 14, 9, 30, tzinfo=dt.timezone.utc), None]
    assert_same(db.sql(sql, params=args).collect(), duck.sql(sql, params=args).pl(),
                what="params")
    numbered = "SELECT $2 AS a, $1 AS b, $1 + 1 AS c"
    got = db.sql(numbered, params=[41, "x"]).collect()
    assert got.row(0) == ("x", 41, 42)
    # a value is a value, never SQL: a quote in it changes nothing
    sneaky = "A' OR '1' = '1"
    assert db.sql("SELECT count(*) AS n FROM w WHERE symbol = ?",
                  params=[sneaky]).collect()["n"][0] == 0
    # floats are doubles (binary), decimals exact
    assert db.sql("SELECT ? + ? = 0.3 AS a", params=[0.1, 0.2]).collect()["a"][0] is False
    import decimal
    assert db.sql("SELECT ? + ? = 0.3 AS a",
                  params=[decimal.Decimal("0.1"), decimal.Decimal("0.2")]).collect()["a"][0]


def test_parameter_errors_are_named(db):
    with pytest.raises(SqlError, match="the statement takes 2 parameters, 1 given"):
        db.sql("SELECT ? + ? AS x", params=[1])
    with pytest.raises(SqlError, match="2 parameters given, but the statement has no "
                                       "placeholder"):
        db.sql("SELECT 1 AS x", params=[1, 2])
    with pytest.raises(SqlError, match="either \\? or \\$1"):
        db.sql("SELECT ? + $1 AS x", params=[1])
    with pytest.raises(SqlError, match="the statement takes 1 parameters, 0 given"):
        db.sql("SELECT $1 AS x")


def test_time_travel_reads_a_committed_version(tmp_path):
    d = hfq.connect(str(tmp_path / "tt"))
    load(d)
    m = d["m"]
    first = m.version
    m.append(m.to_arrow())                       # version 2: the rows twice
    now = d.sql("SELECT count(*) AS n FROM m").collect()["n"][0]
    then = d.sql(f"SELECT count(*) AS n FROM m AT (VERSION => {first})").collect()["n"][0]
    empty = d.sql("SELECT count(*) AS n FROM m AT (VERSION => 0)").collect()["n"][0]
    assert (now, then, empty) == (8, 4, 0)
    both = d.sql(f"SELECT count(*) AS n FROM m JOIN m AT (VERSION => {first}) AS old "
                 "ON m.ts = old.ts").collect()["n"][0]
    assert both == 8
    with pytest.raises(SqlError, match="table 'm' has no version 9"):
        d.sql("SELECT * FROM m AT (VERSION => 9)")
    with pytest.raises(SqlError, match=r"AT \(TIMESTAMP => \.\.\.\): reading as of a time"):
        d.sql("SELECT * FROM m AT (TIMESTAMP => TIMESTAMP '2020-01-01')")


def test_refused_dialect_is_named(db):
    refused = {
        "SELECT * FROM m LIMIT 10%": "LIMIT ... PERCENT",
        "SELECT * FROM m USING SAMPLE 10%": "USING SAMPLE",
        "SELECT rowid FROM m": "unknown column 'rowid'",
        "SELECT COLUMNS(c -> c LIKE 'b%') FROM m": "LAMBDA",
        "SELECT bid FROM m INTERSECT ALL SELECT bid FROM m": "INTERSECT ALL",
        "SELECT string_agg(name, ',') FROM m": "string_agg()",
    }
    for text, what in refused.items():
        with pytest.raises(SqlError) as info:
            db.sql(text).collect()
        assert what in str(info.value), (text, str(info.value))
