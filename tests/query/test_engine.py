"""The engine's other guarantees, embedded: time-series joins, reshaping, exact merges, the
plan (pruning, node/driver split, explain), writing a result, and the errors users see."""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl
import pytest
from oracle import assert_same, load, oracle

import hfq
from hfq.errors import QueryError, SqlError

col = pl.col


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    d = hfq.connect(str(tmp_path_factory.mktemp("enginedb")))
    load(d)
    return d


@pytest.fixture(scope="module")
def duck(db):
    return oracle(db)


# -- window joins (kdb+ wj / wj1) ---------------------------------------------------------------
def _wj_oracle(duck, prevailing: bool):
    start = ("coalesce((SELECT max(q2.time) FROM quotes q2 WHERE q2.symbol = t.symbol AND "
             "q2.date = t.date AND q2.time <= t.time - INTERVAL 60 SECOND), "
             "t.time - INTERVAL 60 SECOND)") if prevailing else "t.time - INTERVAL 60 SECOND"
    inside = f"q.symbol = t.symbol AND q.date = t.date AND q.time BETWEEN {start} AND t.time"
    return duck.sql(f"""SELECT t.*,
        (SELECT count(q.bid) FROM quotes q WHERE {inside}) AS n,
        (SELECT max(q.bid) FROM quotes q WHERE {inside}) AS hi,
        (SELECT sum(q.bidsiz) FROM quotes q WHERE {inside}) AS qsize,
        (SELECT avg(q.ofr) FROM quotes q WHERE {inside}) AS mean_ofr,
        (SELECT first(q.ofr ORDER BY q.time) FROM quotes q WHERE {inside}) AS first_ofr
        FROM trades t WHERE t.symbol IN ('IBM', 'GE', 'AA')""").pl()


@pytest.mark.parametrize("kind", ["wj", "wj1"])
def test_window_join_equals_duckdb(db, duck, kind):
    q = db["trades"].query(symbols=["IBM", "GE", "AA"]).window_join(
        db["quotes"].query(), on="time", by=["symbol", "date"],
        window=(dt.timedelta(seconds=-60), dt.timedelta(0)), kind=kind,
        aggs={"n": ("count", "bid"), "hi": ("max", "bid"), "qsize": ("sum", "bidsiz"),
              "mean_ofr": ("mean", "ofr"), "first_ofr": ("first", "ofr")})
    got = q.collect()
    want = _wj_oracle(duck, prevailing=kind == "wj")
    assert_same(got, want, what=kind)
    assert "window join" in q.explain().split("driver stage")[0]   # on the nodes


def test_wj_counts_the_prevailing_quote_wj1_does_not(db):
    q = db["trades"].query(symbols="IBM")
    args = dict(on="time", by=["symbol", "date"], aggs={"n": ("count", "bid")},
                window=(dt.timedelta(seconds=-1), dt.timedelta(0)))
    wj = q.window_join(db["quotes"].query(), kind="wj", **args).collect()["n"]
    wj1 = q.window_join(db["quotes"].query(), kind="wj1", **args).collect()["n"]
    assert (wj >= wj1).all() and (wj > wj1).any()


# -- asof joins -------------------------------------------------------------------------------
def test_asof_tolerance_and_nearest_equal_duckdb(db, duck):
    quotes = db["quotes"].query().select("symbol", "date", "bid", qt=col("time"))
    got = db["trades"].query().join_asof(quotes, left_on="time", right_on="qt",
                                         by=["symbol", "date"],
                                         tolerance=dt.timedelta(seconds=30)).collect()
    want = duck.sql("""SELECT t.*, CASE WHEN q.time >= t.time - INTERVAL 30 SECOND
                       THEN q.bid END AS bid, CASE WHEN q.time >= t.time - INTERVAL 30 SECOND
                       THEN q.time END AS qt FROM trades t ASOF LEFT JOIN quotes q
                       ON t.symbol = q.symbol AND t.date = q.date AND t.time >= q.time""").pl()
    assert_same(got, want, what="tolerance")
    near = db["trades"].query(symbols="GE").join_asof(
        quotes, left_on="time", right_on="qt", by=["symbol", "date"], strategy="nearest"
    ).collect()
    t = near["time"].to_physical().to_numpy()
    q = near["qt"].to_physical().to_numpy()
    quotes_ge = duck.sql("SELECT date, time FROM quotes WHERE symbol = 'GE'").pl()
    for date, tt, qq in zip(near["date"].to_list(), t, q):
        times = quotes_ge.filter(col("date") == date)["time"].to_physical().to_numpy()
        assert abs(qq - tt) == np.abs(times - tt).min()


# -- pivot, unpivot, fills, sampling ----------------------------------------------------------
def test_pivot_vwap_per_hour(db, duck):
    got = db["trades"].query().with_columns(hour=hfq.bucket("time", "1h"),
                                            pv=col("price") * col("size")) \
        .group_by("hour", "symbol").agg(vwap=col("pv").sum() / col("size").sum()) \
        .pivot("symbol", index="hour", values="vwap", columns=["IBM", "MSFT", "GE"]).collect()
    want = duck.sql("""SELECT * FROM (SELECT time_bucket(INTERVAL 1 HOUR, time) AS hour,
                       symbol, sum(price * size) / sum(size) AS v FROM trades GROUP BY 1, 2)
                       PIVOT (first(v) FOR symbol IN ('IBM', 'MSFT', 'GE') GROUP BY hour)""").pl()
    assert got.columns == ["hour", "IBM", "MSFT", "GE"]
    assert_same(got, want, what="pivot")


def test_unpivot_runs_on_nodes_and_equals_duckdb(db, duck):
    q = db["quotes"].query(symbols="IBM").unpivot(["bid", "ofr"], index=["symbol", "date",
                                                                         "time"])
    assert "unpivot" in q.explain().split("driver stage")[0]
    want = duck.sql("UNPIVOT (SELECT symbol, date, time, bid, ofr FROM quotes WHERE "
                    "symbol = 'IBM') ON bid, ofr INTO NAME variable VALUE value").pl()
    assert_same(q.collect(), want, what="unpivot")


@pytest.mark.parametrize("method", ["forward", "backward", "linear", "constant"])
def test_fill_on_a_grid(db, method):
    q = db["quotes"].query(symbols=["IBM", "MSFT"]).fill(
        "time", "1m", by=["symbol", "date"], columns=["bid"], method=method, value=-1.0)
    got = q.collect()
    assert "fill" in q.explain().split("driver stage")[0]   # per symbol-day: on the nodes
    # oracle: polars' own upsample of each group's last value per minute
    raw = db["quotes"].to_polars(symbols=["IBM", "MSFT"])
    parts = []
    for (s, d), g in raw.with_columns(
            time=pl.datetime(2000, 1, 1) + col("time").cast(pl.Duration("ns"))
    ).group_by("symbol", "date", maintain_order=True):
        last = g.with_columns(col("time").dt.truncate("1m")).group_by("time").agg(
            col("bid").last()).sort("time")
        up = last.upsample("time", every="1m")
        fill = {"forward": up["bid"].forward_fill(), "backward": up["bid"].backward_fill(),
                "linear": up["bid"].interpolate(), "constant": up["bid"].fill_null(-1.0)}
        parts.append(pl.DataFrame({"symbol": [s] * up.height, "date": [d] * up.height,
                                   "time": up["time"].dt.time(), "bid": fill[method]}))
    assert_same(got, pl.concat(parts), what=method)


def test_sample_is_seeded_and_independent_of_scheduling(db):
    a = db["quotes"].query().sample(0.1, seed=3).collect()
    b = db["quotes"].query().sample(0.1, seed=3).collect()
    c = db["quotes"].query().sample(0.1, seed=4).collect()
    n = len(db["quotes"])
    assert a.equals(b) and not a.equals(c)
    assert 0.07 * n < a.height < 0.13 * n
    # the same rows whatever partitions are asked for: a partition samples on its own
    one = db["quotes"].query(dates="2007-08-01").sample(0.1, seed=3).collect()
    assert_same(one, a.filter(col("date") == dt.date(2007, 8, 1)), what="sample")


# -- exact merges --------------------------------------------------------------------------------
def test_first_last_without_order_are_in_table_order(db):
    got = db["quotes"].query().group_by("symbol", "ex").agg(
        f=col("bid").first(), l=col("ofr").last(), n=pl.len()).collect()
    raw = db["quotes"].to_polars()   # partition order, rows as stored: the table's order
    want = raw.group_by("symbol", "ex", maintain_order=True).agg(
        f=col("bid").first(), l=col("ofr").last(), n=pl.len())
    assert_same(got, want, what="table order")


def test_covariance_and_correlation_merge_exactly_across_partitions(db):
    """polars' cov/corr through the Python API: per-partition moments merged by Chan's
    rule (the grouping keys hold no partition column) equal polars over the whole table."""
    q = db["quotes"].query()
    got = q.group_by("ex").agg(c=pl.cov("bid", "ofr"), r=pl.corr("bid", "ofr"),
                               c0=pl.cov("bid", "ofr", ddof=0), n=pl.len()).collect()
    raw = db["quotes"].to_polars()
    want = raw.group_by("ex").agg(c=pl.cov("bid", "ofr"), r=pl.corr("bid", "ofr"),
                                  c0=pl.cov("bid", "ofr", ddof=0), n=pl.len())
    assert_same(got, want, what="comoments")
    assert got["n"].sum() == raw.height and len({p for p in db["quotes"].partitions()[
        "partition"]}) > 1


def test_integer_sums_never_wrap(tmp_path):
    d = hfq.connect(str(tmp_path / "wide"))
    t = d.create_table("t", hfq.schema.Schema({"k": hfq.schema.SYMBOL,
                                               "v": hfq.schema.INT}),
                       partition_by=hfq.Hash("k", 3))
    big = np.full(3000, 2**31 - 7, dtype=np.int32)
    t.append(pl.DataFrame({"k": [f"k{i % 5}" for i in range(3000)], "v": big}))
    want = int(big.astype(np.int64).sum())
    assert t.query().select(s=col("v").sum()).collect()["s"][0] == want
    assert d.sql("SELECT sum(v) AS s, sum(v * 2) AS d FROM t").collect().row(0) == \
        (want, 2 * want)
    per_key = t.query().group_by("k").agg(s=col("v").sum()).collect()
    assert per_key["s"].sum() == want


def test_polars_sql_would_wrap_extract_we_do_not(db):
    got = db.sql("SELECT EXTRACT(HOUR FROM TIME '13:45:00') * 60 + "
                 "EXTRACT(MINUTE FROM TIME '13:45:00') AS m FROM device_info LIMIT 1").collect()
    assert got["m"][0] == 825


# -- the plan ----------------------------------------------------------------------------------
def test_explain_shows_pruning_stages_and_bytes(db):
    q = db["quotes"].query().filter((col("symbol") == "IBM") &
                                    (col("date") == dt.date(2007, 8, 2))) \
        .group_by("symbol", "date", hfq.bucket("time", "1m")).agg(n=pl.len())
    text = q.explain()
    total = len(db["quotes"].partitions())
    assert f"partitions: 1 kept, {total - 1} pruned of {total}" in text
    assert "node stage" in text and "driver stage" in text
    assert "estimated at most" in text and "bytes to the driver" in text
    assert "finish on the nodes" in text         # keys include symbol and date
    q.collect()
    assert q.last_run is not None and q.last_run.partitions == 1
    split = db["quotes"].query().group_by("ex").agg(col("bid").std()).explain()
    assert "partial aggregate" in split and "merge partial states" in split


def test_sql_filters_prune_like_the_python_api(db):
    text = db.sql("SELECT count(*) FROM quotes WHERE symbol IN ('IBM', 'GE') "
                  "AND date >= '2007-08-02'").explain()
    assert "symbols: IBM, GE" in text and "dates: 2007-08-02 .. None" in text


def test_write_a_result_as_a_table(db):
    q = db["quotes"].query().group_by("symbol", "date", hfq.bucket("time", "1h")) \
        .agg(n=pl.len(), bid=col("bid").mean())
    version = q.write("hourly")
    assert version >= 1
    back = db["hourly"].to_polars()
    assert_same(back, q.collect(), what="write")
    assert db["hourly"].snapshot().partition_by == db["quotes"].snapshot().partition_by
    with pytest.raises(hfq.errors.TableExistsError):
        q.write("hourly")
    db.drop_table("hourly")


# -- errors users see (texts pinned) -------------------------------------------------------------
ERRORS = [
    ("SELECT foo FROM quotes",
     "unknown column 'foo'; columns: symbol, date, time, bid, ofr, bidsiz, ofrsiz, mode, ex, "
     "mmid (line 1, column 8)"),
    ("SELECT * FROM nothere",
     "unknown table 'nothere'; tables: device_info, quotes, readings, trades "
     "(line 1, column 15)"),
    ("SELECT bid FROM quotes WHERE symbol > 5",
     "type mismatch in 'symbol > 5': symbol is text, 5 is a number (line 1, column 30)"),
    ("SELECT bid\nFROM quotes\nWHERE frobnicate(bid) > 1",
     "unsupported SQL: function frobnicate() (line 3, column 7)"),
    ("SELECT bid, count(*) FROM quotes",
     "column 'bid' must appear in GROUP BY or be used in an aggregate function "
     "(line 1, column 8)"),
    ("SELECT string_agg(ex) FROM quotes",
     "unsupported SQL: aggregate string_agg() / group_concat() (its order is not defined; "
     "list(x ORDER BY y) is not supported either) (line 1, column 19)"),
    ("SELECT bid FROM quotes WHERE bid > sum(ofr)",
     "aggregates are not allowed in WHERE (use HAVING) (line 1, column 30)"),
    ("SELECT t.price FROM trades t ASOF JOIN quotes q ON t.symbol = q.symbol",
     "ASOF JOIN needs one inequality such as t.time >= q.time (line 1, column 40)"),
    ("SELECT q.nope FROM quotes q",
     "unknown column 'q.nope'; columns of q: symbol, date, time, bid, ofr, bidsiz, ofrsiz, "
     "mode, ex, mmid (line 1, column 8)"),
    ("SELEC symbol FROM quotes", "SQL syntax error: 'SELEC' does not start a statement "
     "(expected SELECT, WITH, FROM or PIVOT) (line 1, column 1)"),
    ("SELECT 1 +", "SQL syntax error: Required keyword: 'expression' missing for "
     "<class 'sqlglot.expressions.core.Add'> (line 1, column 10)"),
    ("SELECT sum(bid) OVER (ORDER BY time RANGE BETWEEN 1 PRECEDING AND 1 FOLLOWING) "
     "FROM quotes",
     "unsupported SQL: RANGE frames that do not end at the CURRENT ROW (line 1, column 51)"),
    ("SELECT * FROM read_csv('x.csv')", "unsupported SQL: table function read_csv() in FROM "
     "(only tables of this database) (line 1, column 18)"),
    ("SELECT lag(bid, 1, bid) OVER (ORDER BY time) FROM quotes",
     "unsupported SQL: lag() with a default that is not a constant (line 1, column 20)"),
    ("SELECT * FROM quotes TABLESAMPLE 10%", "unsupported SQL: TABLESAMPLE (line 1, column 15)"),
    ("SELECT * FROM quotes FOR SYSTEM_TIME AS OF 'yesterday'",
     "'yesterday' is not a timestamp (ISO 8601, UTC unless it names its zone) (line 1, "
     "column 15)"),
    ("SELECT symbol FROM quotes q WHERE bid > (SELECT avg(bid) FROM trades t WHERE "
     "t.price > q.bid)", "unsupported SQL: correlated subquery: only EXISTS, IN and scalar "
     "subqueries whose WHERE compares the outer query's columns by equality (AND-ed with the "
     "rest) (line 1, column 78)"),
]


@pytest.mark.parametrize("text, message", ERRORS, ids=[m[:30] for _, m in ERRORS])
def test_sql_error_texts(db, text, message):
    with pytest.raises(SqlError) as info:
        db.sql(text).collect()
    assert str(info.value) == message
    assert info.value.line is not None


def test_python_api_errors(db):
    with pytest.raises(QueryError, match=r"unknown column 'nope'; columns: symbol, date"):
        db["quotes"].query().filter(col("nope") > 1)
    with pytest.raises(QueryError, match=r"partition date=v2007-08-01/symbol=h\d: cannot "
                                         r"compare categorical"):
        db["quotes"].query().filter(col("symbol") > 1).collect()
    with pytest.raises(QueryError, match="bucket width '7x'"):
        hfq.bucket("time", "7x")
    with pytest.raises(QueryError, match="how='outer'"):
        db["quotes"].query().join(db["trades"].query(), on="symbol", how="outer")


def test_query_job_prints_the_answer_and_stores_it(tmp_path, duck):
    import json
    import subprocess
    import sys

    from conftest import ROOT
    root = str(tmp_path / "jobdb")
    load(hfq.connect(root))
    text = "SELECT ex, count(*) AS n, avg(bid) AS a FROM quotes GROUP BY ex"
    proc = subprocess.run([sys.executable, "jobs/query.py", "--address", "local", "--root",
                           root, text, "--write", "by_ex"], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    got = json.loads(out.strip().splitlines()[-1])
    assert got["job"] == "query" and got["written"]["table"] == "by_ex"
    assert got["rows"] <= 20   # every row is in the printed head
    head = pl.DataFrame(got["head"]).with_columns(col("n").cast(pl.Int64))
    assert_same(head, duck.sql(text).pl(), what="job")
    assert_same(hfq.connect(root)["by_ex"].to_polars(), duck.sql(text).pl(), what="stored")


def test_integer_division_and_modulo_truncate_like_duckdb(db, duck):
    text = ("SELECT x, y, x // y AS q, x % y AS r FROM (SELECT bidsiz - 50 AS x, mode - 6 AS y "
            "FROM quotes WHERE symbol = 'IBM') s WHERE y <> 0")
    assert_same(db.sql(text).collect(), duck.sql(text).pl(), what="div/mod")


# -- repeated statements: the compiled plan is reused only while the tables are unchanged -------
def test_sql_cache_sees_every_commit_drop_and_recreate(tmp_path):
    d = hfq.connect(str(tmp_path))
    scheme = hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 2))
    rows = hfq.synth.taq_table(rows_per_day=400, symbols=5, seed=3)
    t = d.create_table("q", hfq.schemas.TAQ, partition_by=scheme, sort_by=("symbol", "time"))
    t.append(rows)
    text = "SELECT count(*) AS n, sum(bidsiz) AS s FROM q WHERE symbol IN " \
           "(SELECT symbol FROM q WHERE bid > 0 GROUP BY symbol)"

    def want():
        df = pl.from_arrow(d["q"].to_arrow())
        syms = df.filter(col("bid") > 0)["symbol"].unique()
        df = df.filter(col("symbol").is_in(syms))
        return df.height, df["bidsiz"].cast(pl.Int64).sum()

    first = d.sql(text).collect().row(0)
    assert first == want()
    assert d.sql(text).collect().row(0) == first          # the cached plan, same answer
    t.append(rows)                                        # a commit: compiled again
    assert d.sql(text).collect().row(0) == want() == (2 * first[0], 2 * first[1])
    d.drop_table("q")
    with pytest.raises(SqlError, match="unknown table 'q'"):
        d.sql(text)
    d.create_table("q", hfq.schemas.TAQ, partition_by=scheme,
                   sort_by=("symbol", "time")).append(rows.slice(0, 100))
    assert d.sql(text).collect().row(0) == want()          # the new table, version 1 again


def test_small_queries_run_inline_with_the_same_answer_as_the_runtime(db, duck, monkeypatch):
    from hfq.engine import execute
    text = "SELECT date, count(*) AS n, avg(bid) AS b FROM quotes WHERE symbol = 'IBM' " \
           "GROUP BY date"
    inline = db.sql(text).collect()
    monkeypatch.setattr(execute, "INLINE_ROWS", -1)       # force the thread pool
    pooled = db.sql(text + " ").collect()
    want = duck.sql(text).pl()
    assert_same(inline, want, what="inline")
    assert_same(pooled, want, what="pooled")


# -- co-partitioned joins: partition by partition on the node, nothing broadcast ----------------
def _node_stage(q) -> str:
    return q.explain().split("driver stage")[0]


def test_asof_join_of_co_partitioned_tables_runs_per_partition(db, duck):
    text = ("SELECT t.symbol, t.date, t.time, t.price, q.bid, q.ofr, q.time AS qt FROM trades t "
            "ASOF JOIN (SELECT * FROM quotes WHERE bid > 20) q ON t.symbol = q.symbol AND "
            "t.date = q.date AND t.time >= q.time")
    q = db.sql(text)
    assert "co-partitioned" in _node_stage(q) and "broadcast" not in q.explain()
    assert_same(q.collect(), duck.sql(text).pl(), what="asof co-partitioned")


@pytest.mark.parametrize("how", ["inner", "left", "semi", "anti"])
def test_equi_join_of_co_partitioned_tables_equals_duckdb(db, duck, how):
    # the right side keeps three symbols: most left partitions have no right partition
    right = db["quotes"].query(symbols=["IBM", "GE", "AA"]).filter(col("bid") > 30) \
        .group_by("symbol", "date", m=hfq.minute_of_day("time")).agg(hi=col("bid").max())
    q = db["trades"].query().with_columns(m=hfq.minute_of_day("time")) \
        .join(right, on=["symbol", "date", "m"], how=how)
    assert "co-partitioned" in _node_stage(q)
    inner = ("SELECT symbol, date, hour(time) * 60 + minute(time) AS m, max(bid) AS hi "
             "FROM quotes WHERE symbol IN ('IBM', 'GE', 'AA') AND bid > 30 GROUP BY ALL")
    cols = "t.*, hour(t.time) * 60 + minute(t.time) AS m"
    on = "t.symbol = r.symbol AND t.date = r.date AND hour(t.time) * 60 + minute(t.time) = r.m"
    want = {"inner": f"SELECT {cols}, r.hi FROM trades t JOIN ({inner}) r ON {on}",
            "left": f"SELECT {cols}, r.hi FROM trades t LEFT JOIN ({inner}) r ON {on}",
            "semi": f"SELECT {cols} FROM trades t SEMI JOIN ({inner}) r ON {on}",
            "anti": f"SELECT {cols} FROM trades t ANTI JOIN ({inner}) r ON {on}"}[how]
    assert_same(q.collect(), duck.sql(want).pl(), what=how)


def test_join_without_every_partition_key_is_broadcast(db, duck):
    q = db["trades"].query().join(db["quotes"].query().group_by("symbol")
                                  .agg(top=col("bid").max()), on="symbol")
    assert "co-partitioned" not in q.explain() and "broadcast" in _node_stage(q)
    q2 = db["trades"].query().join(db["quotes"].query().select("symbol", "date", "bid"),
                                   on="symbol", how="semi")   # date not in the keys
    assert "co-partitioned" not in q2.explain()
    want = duck.sql("SELECT t.*, r.top FROM trades t JOIN (SELECT symbol, max(bid) AS top "
                    "FROM quotes GROUP BY symbol) r ON t.symbol = r.symbol").pl()
    assert_same(q.collect(), want, what="broadcast")


def test_a_changed_partition_column_makes_later_groups_global(db, duck):
    """Once a partition column no longer holds the partition's values, a grouping by the
    other one spans partitions: it must merge on the driver, not finish on the nodes."""
    got = db["quotes"].query().with_columns(symbol=pl.lit("X")).group_by("date") \
        .agg(n=pl.len()).collect()
    assert_same(got, duck.sql("SELECT date, count(*) AS n FROM quotes GROUP BY date").pl(),
                what="changed partition column")


def test_a_grouping_without_partial_states_finishes_on_the_nodes_of_one_day(db, duck):
    """A grouped aggregate that cannot be split into partial states (``corr``, checked
    against its rounding, F134) grouped by symbol over one day finishes on the nodes, as a
    split one does: not every row sent to the driver."""
    sql = ("SELECT symbol, corr(bid, ofr) AS c, count(*) AS n FROM quotes "
           "WHERE date = DATE '2007-08-02' GROUP BY symbol")
    text = db.sql(sql).explain()
    assert "aggregates finish on the nodes" in text
    assert "cannot be split" not in text
    assert_same(db.sql(sql).collect(), duck.sql(sql).pl(), what="grouped on the nodes")
    both = db.sql(sql.replace("WHERE date = DATE '2007-08-02' ", "")).explain()
    assert "cannot be split exactly: rows go to the driver" in both   # two days: merged


def test_a_joins_checked_sum_of_doubles_still_splits_into_partial_states(db, duck):
    """The check that the order of a join's additions cannot move a sum of DOUBLEs (F137)
    is made of sums and counts: a grouping across partitions still aggregates on the nodes
    and merges partial states (with any() it sent every joined row to the driver: the
    suite's join_hour 1.8x slower)."""
    sql = ("SELECT t.ex, avg(t.price - q.bid) AS d, sum(q.bid) AS b, count(*) AS n FROM "
           "trades t ASOF JOIN quotes q ON t.symbol = q.symbol AND t.date = q.date AND "
           "t.time >= q.time GROUP BY t.ex")
    text = db.sql(sql).explain()
    assert "partial aggregate" in text and "cannot be split" not in text, text
    assert_same(db.sql(sql).collect(), duck.sql(sql).pl(), what="split join sums")


def test_asof_join_of_rows_out_of_time_order(db, duck):
    """The asof join sorts what is not in time order within its groups (here the left side
    sorted by price, the right broadcast in descending time) and skips the sort otherwise."""
    right = db["quotes"].query(symbols=["IBM", "GE"]).select(
        "symbol", "date", "bid", qt=col("time")).sort("qt", descending=True)
    q = db["trades"].query(symbols=["IBM", "GE", "AA"]).sort("price") \
        .join_asof(right, left_on="time", right_on="qt", by=["symbol", "date"])
    want = duck.sql("SELECT t.*, q.bid, q.time AS qt FROM trades t ASOF LEFT JOIN quotes q "
                    "ON t.symbol = q.symbol AND t.date = q.date AND t.time >= q.time "
                    "AND q.symbol IN ('IBM', 'GE') WHERE t.symbol IN ('IBM', 'GE', 'AA')").pl()
    assert_same(q.collect(), want, what="asof out of order")


def test_the_demo_queries_answer_alike_in_sql_and_python(db):
    from hfq.demo import _queries
    lines: list[str] = []
    out = _queries(db, "2007-08-02", ["2007-08-01", "2007-08-02"], lines.append)
    assert out["query_same"] is True
    text = "\n".join(lines)
    assert "same answer: True" in text and "2007-08-01" in text
    assert "aggregates finish on the nodes" in text   # one day: groups by symbol are local


def test_a_small_query_on_a_damaged_file_names_it_never_answers(tmp_path):
    """The inline path (one symbol-day, read in this thread) verifies what it decodes like
    every read: a flipped byte in the record batch raises CorruptPartitionError naming the
    file -- not a wrong answer, and nothing damaged is cached."""
    from hfq.errors import CorruptPartitionError
    d = hfq.connect(str(tmp_path))
    t = d.create_table("q", hfq.schemas.TAQ, partition_by=hfq.Value("date"),
                       sort_by=("symbol", "time"))
    t.append(hfq.synth.taq_table(rows_per_day=3000, symbols=10, seed=5))
    fragment = next(iter(t.snapshot().partitions.values())).fragments[0]
    path = tmp_path / fragment.file
    original = path.read_bytes()
    off, n = fragment.batches[0].span
    damaged = bytearray(original)
    damaged[off + n // 2] ^= 0x10
    path.write_bytes(bytes(damaged))
    text = "SELECT count(*) AS n, sum(bid) AS s FROM q WHERE symbol = 'IBM'"
    with pytest.raises(CorruptPartitionError) as info:
        d.sql(text).collect()
    assert fragment.file in str(info.value)
    path.write_bytes(original)
    want = pl.from_arrow(t.to_arrow()).filter(col("symbol") == "IBM")
    got = d.sql(text).collect()
    assert got["n"][0] == want.height and got["s"][0] == pytest.approx(want["bid"].sum())


def test_partitions_the_driver_reads_stay_decoded(db, duck, monkeypatch):
    """Partitions this process's node holds are read here (not on a server); their decoded
    rows stay in this process's cache, as a node server keeps its own: a repeated query
    decodes nothing, and answers the same."""
    from hfq.engine import execute
    monkeypatch.setattr(execute, "INLINE_ROWS", -1)   # the thread pool, not the inline path
    cache = execute.process_cache(db.session.nodes.store, db.settings.cache_bytes)
    text = "SELECT ex, count(*) AS n, max(ofrsiz) AS m FROM quotes GROUP BY ex"
    first = db.sql(text).collect()
    before = cache.stats()
    again = db.sql(text + " ").collect()   # another statement: staged and run afresh
    after = cache.stats()
    parts = len(db["quotes"].snapshot().partitions)
    assert after["hits"] - before["hits"] == parts and after["misses"] == before["misses"]
    assert_same(again, duck.sql(text).pl(), what="cached")
    assert_same(first, again, what="first run")


@pytest.mark.parametrize("order", ["x DESC, id", "x, id", "x DESC NULLS FIRST, id",
                                   "x NULLS FIRST, id DESC", "n DESC, id", "n, id"])
def test_top_n_per_partition_keeps_every_tie_null_and_nan(tmp_path, order):
    """Each partition drops the rows whose first key cannot reach the first n before its
    sort: ties at the boundary, NaN and nulls must all survive where they could count."""
    import duckdb
    d = hfq.connect(str(tmp_path))
    t = d.create_table("t", hfq.schema.Schema({"k": hfq.schema.SYMBOL, "id": hfq.schema.INT,
                                               "x": hfq.schema.DOUBLE, "n": hfq.schema.INT}),
                       partition_by=hfq.Hash("k", 3))
    rng = np.random.default_rng(3)
    m = 600
    x = rng.integers(0, 6, m).astype(float)          # heavy ties
    x[rng.random(m) < 0.05] = np.nan
    frame = pl.DataFrame({"k": [f"k{i % 7}" for i in range(m)], "id": np.arange(m, dtype=np.int32),
                          "x": x, "n": rng.integers(0, 4, m).astype(np.int32)}).with_columns(
        x=pl.when(pl.Series(rng.random(m) < 0.05)).then(None).otherwise(col("x")),
        n=pl.when(pl.Series(rng.random(m) < 0.05)).then(None).otherwise(col("n")))
    t.append(frame)
    con = duckdb.connect()
    con.register("t", t.to_arrow())
    for limit in (1, 7, 40):
        text = f"SELECT k, id, x, n FROM t ORDER BY {order} LIMIT {limit}"
        q = d.sql(text)
        assert "top " in q.explain().split("driver stage")[0]
        assert_same(q.collect(), con.sql(text).pl(), ordered=True, what=text)


def test_one_day_groups_by_symbol_finish_on_the_nodes(db, duck):
    """With every kept partition on one date, groups by symbol never span two partitions:
    no merge on the driver.  Over two dates the same grouping must merge."""
    one = db.sql("SELECT symbol, count(*) AS n, avg(bid) AS b FROM quotes "
                 "WHERE date = '2007-08-02' GROUP BY symbol")
    both = db.sql("SELECT symbol, count(*) AS n, avg(bid) AS b FROM quotes GROUP BY symbol")
    assert "merge partial" not in one.explain() and "one date" in one.explain()
    assert "merge partial" in both.explain()
    assert_same(one.collect(), duck.sql("SELECT symbol, count(*) AS n, avg(bid) AS b FROM "
                                        "quotes WHERE date = '2007-08-02' GROUP BY symbol").pl(),
                what="one day")
    assert_same(both.collect(), duck.sql("SELECT symbol, count(*) AS n, avg(bid) AS b FROM "
                                         "quotes GROUP BY symbol").pl(), what="two days")


# -- partitions run in batches: one polars plan over several partitions' rows ---------------------
def test_partitions_held_alike_run_in_batches_in_partition_order(db, duck):
    """The partitions one node holds run as a few batches (rows concatenated in partition
    order, the node stage run once); a step that depends on the partition (a seeded
    sample) keeps them apart.  Same answers either way."""
    from hfq.engine.execute import batched
    text = "SELECT symbol, date, count(*) AS n, max(bid) AS hi FROM quotes GROUP BY 1, 2"
    staged = db.sql(text)._staged()
    units = batched(staged)
    parts = [p for u in units for p in getattr(u, "parts", (u,))]
    assert 1 <= len(units) < len(staged.units)
    assert parts == staged.units                  # each partition once, in partition order
    assert_same(db.sql(text).collect(), duck.sql(text).pl(), what="batched")
    first = db.sql("SELECT * FROM quotes LIMIT 5").collect()   # no order: partition order
    assert_same(first, db["quotes"].to_polars().head(5), ordered=True, what="limit")
    sampled = db["quotes"].query().sample(0.3, seed=2)._staged()
    assert batched(sampled) == sampled.units


def test_batches_stay_under_batch_rows(db, duck, monkeypatch):
    """A node holds a batch's rows at once: a long table runs as many bounded batches."""
    import hfq.engine.execute as execute
    text = "SELECT symbol, date, count(*) AS n, max(bid) AS hi FROM quotes GROUP BY 1, 2"
    staged = db.sql(text)._staged()
    cap = 2 * max(u.rows for u in staged.units)
    monkeypatch.setattr(execute, "BATCH_ROWS", cap)
    units = execute.batched(staged)
    assert all(u.rows <= cap for u in units)
    assert len(units) >= sum(u.rows for u in staged.units) / cap
    assert [p for u in units for p in getattr(u, "parts", (u,))] == staged.units
    assert_same(execute.run(staged)[0], duck.sql(text).pl(), what="capped batches")


# -- LIKE on a dictionary-encoded column: tested on its distinct values, same answers -----------
LIKE_VALUES = ["EDGA", "EDGX", "EDG", "ED", "xEDG", "aba", "abba", "ab", "ba", "a%b", "a_b",
               "A_B", "née", "nè", "", "a\\b", "abc\nd", None]
LIKE_PATTERNS = ["EDG%", "EDG", "%DG", "%", "", "%%", "ab%ba", "a%a", "a%", "%a", "a\\%",
                 "a\\b", "n%e", "né%", "%e", "E_G%", "_", "a%%b", "%b%", "abc%d", "ED%G"]


def test_like_on_a_symbol_column_equals_duckdb(tmp_path):
    """Patterns a%, %b, a%b and exact ones run on the dictionary's values; the rest on the
    text.  Overlapping prefix and suffix, multi-byte text, NULL, NOT LIKE, ILIKE, a value the
    filter drops before the LIKE, a backslash (no escape character in LIKE): as DuckDB."""
    import duckdb
    d = hfq.connect(str(tmp_path))
    t = d.create_table("s", hfq.schema.Schema({"id": hfq.schema.INT, "v": hfq.schema.SYMBOL}),
                       partition_by=hfq.Hash("id", 3))
    n = len(LIKE_VALUES)
    t.append(pl.DataFrame({"id": pl.Series(range(2 * n), dtype=pl.Int32),
                           "v": LIKE_VALUES + LIKE_VALUES[::-1]}))
    con = duckdb.connect()
    con.register("s", t.to_arrow())
    for pattern in LIKE_PATTERNS:
        quoted = pattern.replace("'", "''")
        for where in (f"v LIKE '{quoted}'", f"v NOT LIKE '{quoted}'", f"v ILIKE '{quoted}'",
                      f"id <> 0 AND v LIKE '{quoted}'"):
            text = f"SELECT id, v, ({where}) AS m FROM s WHERE {where} OR v IS NULL"
            assert_same(d.sql(text).collect(), con.sql(text).pl(), what=text)
            # row by row: the filter runs on the nodes, never the rows to the driver
            assert "filter" in d.sql(text).explain().split("driver stage")[0], text


@pytest.mark.parametrize("order", ["x DESC, id", "x, id DESC", "x DESC NULLS FIRST, id",
                                   "x NULLS FIRST, id", "t DESC, id", "t, id"])
def test_top_n_over_a_batch_runs_its_best_partitions_first(tmp_path, order):
    """A batch of partitions runs the top-N on the partitions whose best key can still reach
    the first n (one pass gives each partition's best): the best rows in the last partition,
    ties at the cutoff in several partitions, NaN, nulls, a filter that drops some of the
    best rows -- the same rows in the same order as DuckDB."""
    import duckdb

    from hfq.engine.execute import batched
    from hfq.query.read import read_frame
    d = hfq.connect(str(tmp_path))
    schema = hfq.schema.Schema({"k": hfq.schema.SYMBOL, "id": hfq.schema.INT,
                                "x": hfq.schema.DOUBLE, "t": hfq.schema.TIMESTAMP})
    rng = np.random.default_rng(11)
    m = 2400
    x = rng.integers(0, 50, m).astype(float)
    x[rng.random(m) < 0.01] = np.nan
    frame = pl.DataFrame({"k": [f"k{i % 40}" for i in range(m)],
                          "id": np.arange(m, dtype=np.int32), "x": x,
                          "t": pl.Series(rng.integers(0, 40, m) * 10**9).cast(pl.Datetime("ns"))})
    frame = frame.with_columns(
        x=pl.when(pl.Series(rng.random(m) < 0.01)).then(None).otherwise(col("x")))
    probe = d.create_table("probe", schema, partition_by=hfq.Hash("k", 12))
    probe.append(frame)
    staged = d.sql("SELECT * FROM probe")._staged()
    last = read_frame(d.session.nodes.context(), staged.spec, staged.units[-1])["k"].unique()
    extreme = col("k").is_in(last.implode()) & (col("id") % 5 == 0)   # the best, and ties
    odd = col("id") % 2 == 1   # best of all both ways: ties at +-100, at 1990 and 2030
    frame = frame.with_columns(
        x=pl.when(extreme).then(pl.when(odd).then(100.0).otherwise(-100.0)).otherwise(col("x")),
        t=pl.when(extreme).then(pl.when(odd).then(pl.lit(dt.datetime(2030, 1, 1)))
                                .otherwise(pl.lit(dt.datetime(1990, 1, 1))))
        .otherwise(col("t")).cast(pl.Datetime("ns")))
    t = d.create_table("t", schema, partition_by=hfq.Hash("k", 12))
    t.append(frame)
    con = duckdb.connect()
    con.register("t", t.to_arrow())
    top = d.sql("SELECT * FROM t ORDER BY x LIMIT 3")._staged()
    assert max(len(getattr(u, "parts", ())) for u in batched(top)) >= 4
    for where in ("", "WHERE id % 10 <> 5", "WHERE x < 45 OR x IS NULL", "WHERE x > 1000"):
        for limit in (1, 5, 30, 3000):
            text = f"SELECT k, id, x, t FROM t {where} ORDER BY {order} LIMIT {limit}"
            assert_same(d.sql(text).collect(), con.sql(text).pl(), ordered=True, what=text)


# -- the last grouping's groups may come in any order; whatever reads the order keeps it ---------
def test_groups_keep_their_order_wherever_it_counts(tmp_path):
    """Only the last grouping, followed by row-wise steps alone, drops the order of first
    appearance (polars groups faster).  A first() over an earlier grouping, a LIMIT after
    one, and the right side of an asof join whose keys tie (which tied row matches depends
    on the order) keep it: as polars with maintain_order over the rows in table order
    (enough rows and keys that polars' unordered grouping does reorder them)."""
    from hfq.engine.ops import Aggregate, MergeAgg
    d = hfq.connect(str(tmp_path))
    rng = np.random.default_rng(5)
    m = 60_000
    frame = pl.DataFrame({"k": [f"s{i}" for i in rng.integers(0, 40, m)],
                          "j": rng.integers(0, 6, m).astype(np.int32),
                          "t": rng.integers(0, 300, m), "v": rng.random(m)})
    schema = hfq.schema.Schema({"k": hfq.schema.SYMBOL, "j": hfq.schema.INT,
                                "t": hfq.schema.LONG, "v": hfq.schema.DOUBLE})
    for name in ("a", "b"):
        d.create_table(name, schema, partition_by=hfq.Hash("k", 2), sort_by=("k", "t")
                       ).append(frame)
    rows = d["a"].to_polars()
    free = d.sql("SELECT k, j, count(*) AS n FROM a GROUP BY k, j")._staged()
    last = [op for op in free.node_ops + free.driver_ops
            if isinstance(op, (Aggregate, MergeAgg))]
    assert [op.ordered for op in last] == [False]
    nested = d["a"].query().group_by("k", "j", "t").agg(n=pl.len()) \
        .group_by("k").agg(first_j=col("j").first(), first_t=col("t").first())
    want = rows.group_by("k", "j", "t", maintain_order=True).agg(n=pl.len()) \
        .group_by("k").agg(first_j=col("j").first(), first_t=col("t").first())
    assert_same(nested.collect(), want, what="first over a grouping")
    head = d["a"].query().group_by("j", "t").agg(n=pl.len()).head(30).collect()
    assert_same(head, rows.group_by("j", "t", maintain_order=True).agg(n=pl.len()).head(30),
                ordered=True, what="limit after a grouping")
    for by, copart in ((["k"], True), (["kk"], False)):   # co-partitioned, broadcast
        right = d["b"].query().group_by("k", "t", "j").agg(hi=col("v").max()) \
            .rename({"t": "qt", "k": by[0]} if not copart else {"t": "qt"})
        got = d["a"].query().select("k", "t", kk="k").join_asof(
            right, left_on="t", right_on="qt", by_left=by, by_right=by)
        assert ("co-partitioned" in got.explain()) == copart
        r = rows.group_by("k", "t", "j", maintain_order=True).agg(hi=col("v").max()) \
            .rename({"t": "qt", "k": by[0]} if not copart else {"t": "qt"})
        left = rows.select("k", "t", kk="k")
        want = left.sort("t", maintain_order=True).join_asof(
            r.sort("qt", maintain_order=True), left_on="t", right_on="qt", by=by)
        assert_same(got.collect(), want, what=f"asof by {by}")
