"""The cheaper plans of issue 24's query-speed work, each exact against DuckDB on the nasty
tables (``w``: 2,400 rows over 12 partitions; ``m``/``m1``: NULL, int extremes): a window
over the partition columns runs on the nodes (its 2^32-row guard inside the window), the
running RANGE count/sum/avg of integers over a TIME, DATE or narrow integer key is one
rolling window with the NULL keys placed last, and a grouped variance of integers skips
the checks that cannot hold."""

from __future__ import annotations

import pytest
from nasty import load, oracle
from oracle import assert_same

import hfq


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    d = hfq.connect(str(tmp_path_factory.mktemp("windowplans")))
    load(d)
    return d


@pytest.fixture(scope="module")
def duck(db):
    return oracle(db)


def test_a_narrow_window_sum_over_the_partition_columns_runs_on_the_nodes(db, duck):
    sql = ("SELECT symbol, date, max(c) AS c FROM (SELECT symbol, date, sum(bidsiz) OVER "
           "(PARTITION BY symbol, date ORDER BY tod) AS c FROM w) s GROUP BY 1, 2")
    plan = db.sql(sql).explain()
    assert "rows go to the driver" not in plan, plan
    node = plan.split("driver stage:")[0]
    assert "rolling_sum_by" in node and "2^32 rows" in node, plan
    assert_same(db.sql(sql).collect(), duck.sql(sql).pl(), what=sql)


# NULL keys (k1, k2, k3), a partition whose keys are all NULL (symbol G's k2, F and G's k3)
_SUB = ("(SELECT *, CASE WHEN bid > 110 THEN NULL ELSE tod END AS k1, "
        "CASE WHEN symbol = 'G' OR bid > 110 THEN NULL ELSE small END AS k2, "
        "CASE WHEN symbol IN ('G', 'F') THEN NULL ELSE date END AS k3, "
        "CASE WHEN bid < 90 THEN NULL ELSE bidsiz END AS v FROM w) s")
_RUNNING = [(f, v, k, part)
            for f in ("sum", "count", "avg")
            for v in ("bidsiz", "big", "v")
            for k in ("small", "tod", "k1", "k2", "k3")
            for part in ("", "PARTITION BY symbol, date ")]


@pytest.mark.parametrize("case", _RUNNING, ids=lambda c: "-".join(x.strip() for x in c if x))
def test_running_range_frames_over_short_keys_are_duckdbs(db, duck, case):
    f, v, k, part = case
    sql = f"SELECT ts, {f}({v}) OVER ({part}ORDER BY {k}) AS x FROM {_SUB} ORDER BY ts"
    assert_same(db.sql(sql).collect(), duck.sql(sql).pl(), ordered=True, what=sql)


@pytest.mark.parametrize("table", ["m", "m1"])
def test_running_range_frames_over_null_keys_of_extremes(db, duck, table):
    sql = (f"SELECT ts, sum(bidsiz) OVER (ORDER BY small) AS a, count(big) OVER (ORDER BY "
           f"small) AS b, avg(big) OVER (ORDER BY small) AS c, sum(big) OVER (PARTITION BY "
           f"symbol ORDER BY date) AS d, count(*) OVER (ORDER BY tod) AS e, sum(bidsiz) OVER "
           f"(PARTITION BY symbol ORDER BY small) AS f FROM {table} "
           "ORDER BY ts")
    assert_same(db.sql(sql).collect(), duck.sql(sql).pl(), ordered=True, what=sql)


def test_grouped_variance_of_integers_and_floats_is_duckdbs(db, duck):
    sql = ("SELECT symbol, var_pop(bidsiz) AS a, stddev_samp(small) AS b, var_samp(big) AS c, "
           "stddev_pop(CAST(bidsiz AS DECIMAL(10, 2))) AS d, var_samp(f) AS e, "
           "stddev_samp(bid) AS g, var_pop(bidsiz * 1.0) AS h, avg(bidsiz) AS i, avg(small) AS j, "
           "avg(big) AS k, avg(bidsiz + 0) AS l, sum(bidsiz + small) AS m, sum(-bidsiz - 7) AS n, "
           "avg(bidsiz - small + 3) AS o, sum((small) + 1000000) AS p, "
           "sum(big - bidsiz) AS q FROM w GROUP BY symbol")
    assert_same(db.sql(sql).collect(), duck.sql(sql).pl(), what=sql)
    for t in ("m", "m1"):
        q = sql.replace("FROM w", f"FROM {t}")
        assert_same(db.sql(q).collect(), duck.sql(q).pl(), what=q)


# huge values on one day only: the batch of partitions holding it computes the variance of the
# scaled-down values, the others derive it from their unscaled states (AggPlan.light); 1e153
# makes values past LIGHT (2^480) whose squares overflow, 1e140 values below it whose squares
# do not, 1e300 values whose squares overflow, 1e306 values whose sums (so their means)
# overflow: there the unscaled states merge to NaN and the scaled ones answer (inf, as DuckDB;
# NaN if that day's batch took the light form)
_HUGE = ("SELECT {by}var_pop(CASE WHEN date = DATE '2016-11-15' THEN bid * 1e300 ELSE bid END)"
         " AS a, stddev_samp(CASE WHEN date = DATE '2016-11-15' THEN bid * 1e153 ELSE bid END) "
         "AS b, var_samp(CASE WHEN date = DATE '2016-11-13' THEN bid * -1e153 ELSE bid * 1e140 "
         "END) AS c, var_pop(bid) AS d, stddev_pop(CASE WHEN symbol = 'A' THEN bid * 1e200 ELSE"
         " bid END) AS e, var_pop(CASE WHEN date = DATE '2016-11-15' THEN bid * 1e306 ELSE bid "
         "END) AS g FROM w WHERE bid < 1000{group}")


@pytest.mark.parametrize("by", ["symbol", "date", ""])
def test_grouped_variance_of_huge_doubles_in_some_partitions_is_duckdbs(db, duck, by):
    sql = _HUGE.format(by=f"{by}, " if by else "", group=f" GROUP BY {by}" if by else "")
    assert "partial aggregate" in db.sql(sql).explain()
    assert_same(db.sql(sql).collect(), duck.sql(sql).pl(), what=sql)
