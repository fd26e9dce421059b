"""The query suite: each case is SQL for hfq and DuckDB (the oracle; its own text only where
the dialects differ) and, for most, the same question through the Python API."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass

import polars as pl

import hfq

col = pl.col


@dataclass(frozen=True)
class Case:
    id: str
    sql: str
    python: Callable[[hfq.Database], hfq.engine.Query] | None = None
    oracle: str | None = None
    ordered: bool = False


def Q(db):
    return db["quotes"].query()


def T(db):
    return db["trades"].query()


def R(db):
    return db["readings"].query()


def D(db):
    return db["device_info"].query()


CASES = [
    # -- filters and projections ---------------------------------------------------------------
    Case("count_all", "SELECT count(*) AS n FROM quotes", lambda db: Q(db).select(n=pl.len())),
    Case("point", "SELECT count(*) AS n, sum(bidsiz) AS s FROM quotes "
                  "WHERE symbol = 'IBM' AND date = '2007-08-02'",
         lambda db: db["quotes"].query(dates="2007-08-02", symbols="IBM")
         .select(n=pl.len(), s=col("bidsiz").sum())),
    Case("range", "SELECT count(*) AS n, avg(ofr) AS a FROM quotes WHERE bid BETWEEN 20 AND 40",
         lambda db: Q(db).filter(col("bid").is_between(20, 40))
         .select(n=pl.len(), a=col("ofr").mean())),
    Case("in_list", "SELECT symbol, count(*) AS n, sum(bidsiz) AS s FROM quotes "
                    "WHERE symbol IN ('IBM', 'MSFT', 'GE') GROUP BY symbol ORDER BY symbol",
         lambda db: Q(db).filter(col("symbol").is_in(["IBM", "MSFT", "GE"]))
         .group_by("symbol").agg(n=pl.len(), s=col("bidsiz").sum()).sort("symbol"),
         ordered=True),
    Case("strings", "SELECT mmid, count(*) AS n FROM quotes WHERE mmid <> '' GROUP BY mmid",
         lambda db: Q(db).filter(col("mmid") != "").group_by("mmid").agg(n=pl.len())),
    Case("like", "SELECT symbol, count(*) AS n FROM quotes WHERE symbol LIKE 'A%' "
                 "GROUP BY symbol",
         lambda db: Q(db).filter(col("symbol").cast(pl.String).str.starts_with("A"))
         .group_by("symbol").agg(n=pl.len())),
    Case("null_tests", "SELECT count(*) AS n FROM quotes WHERE ex IS NOT NULL AND mmid IS NULL",
         lambda db: Q(db).filter(col("ex").is_not_null() & col("mmid").is_null())
         .select(n=pl.len())),
    Case("computed", "SELECT symbol, date, time, (ofr - bid) / (ofr + bid) * 2 AS spread "
                     "FROM quotes WHERE symbol = 'MSFT' AND ofr > bid AND bid > 0",
         lambda db: Q(db).filter((col("symbol") == "MSFT") & (col("ofr") > col("bid")) &
                                 (col("bid") > 0))
         .select("symbol", "date", "time",
                 spread=(col("ofr") - col("bid")) / (col("ofr") + col("bid")) * 2)),
    Case("crossed", "SELECT date, count(*) AS n FROM quotes WHERE ofr < bid AND ofr > 0 "
                    "GROUP BY date ORDER BY date",
         lambda db: Q(db).filter((col("ofr") < col("bid")) & (col("ofr") > 0))
         .group_by("date").agg(n=pl.len()).sort("date"), ordered=True),
    # -- top-N ---------------------------------------------------------------------------------
    Case("top_n", "SELECT symbol, date, time, bid FROM quotes "
                  "ORDER BY bid DESC, symbol, date, time LIMIT 10",
         lambda db: Q(db).select("symbol", "date", "time", "bid")
         .sort("bid", "symbol", "date", "time", descending=[True, False, False, False])
         .head(10), ordered=True),
    Case("top_n_offset", "SELECT symbol, date, time, ofrsiz FROM quotes "
                         "ORDER BY ofrsiz DESC, symbol, date, time LIMIT 5 OFFSET 7",
         lambda db: Q(db).select("symbol", "date", "time", "ofrsiz")
         .sort("ofrsiz", "symbol", "date", "time", descending=[True, False, False, False])
         .slice(7, 5), ordered=True),
    Case("top_groups", "SELECT symbol, count(*) AS n FROM quotes GROUP BY symbol "
                       "ORDER BY n DESC, symbol LIMIT 5",
         lambda db: Q(db).group_by("symbol").agg(n=pl.len())
         .sort("n", "symbol", descending=[True, False]).head(5), ordered=True),
    # -- aggregates ----------------------------------------------------------------------------
    Case("per_date", "SELECT date, count(*) AS n, sum(bidsiz) AS s, avg(bid) AS a FROM quotes "
                     "GROUP BY date",
         lambda db: Q(db).group_by("date").agg(n=pl.len(), s=col("bidsiz").sum(),
                                               a=col("bid").mean())),
    Case("moments", "SELECT ex, min(bid) AS lo, max(bid) AS hi, stddev_samp(bid) AS s, "
                    "stddev_pop(bid) AS sp, var_samp(ofr) AS v, var_pop(ofr) AS vp "
                    "FROM quotes GROUP BY ex",
         lambda db: Q(db).group_by("ex").agg(lo=col("bid").min(), hi=col("bid").max(),
                                             s=col("bid").std(), sp=col("bid").std(ddof=0),
                                             v=col("ofr").var(), vp=col("ofr").var(ddof=0))),
    Case("first_last", "SELECT symbol, first(bid ORDER BY date, time) AS f, "
                       "last(ofr ORDER BY date, time) AS l FROM quotes GROUP BY symbol",
         lambda db: Q(db).group_by("symbol").agg(
             f=col("bid").sort_by("date", "time").first(),
             l=col("ofr").sort_by("date", "time").last())),
    Case("first_in_minute", "SELECT time_bucket(INTERVAL '1 hour', time) AS h, "
                            "first(symbol ORDER BY time, symbol, date) AS s FROM quotes "
                            "GROUP BY h",
         lambda db: Q(db).group_by(hfq.bucket("time", "1h").alias("h"))
         .agg(s=col("symbol").sort_by("time", "symbol", "date").first())),
    Case("count_distinct", "SELECT date, count(DISTINCT symbol) AS s, count(DISTINCT ex) AS e "
                           "FROM quotes GROUP BY date",
         lambda db: Q(db).group_by("date").agg(s=col("symbol").n_unique(),
                                               e=col("ex").n_unique())),
    Case("count_distinct_global", "SELECT count(DISTINCT mode) AS m, count(DISTINCT symbol) "
                                  "AS s FROM quotes",
         lambda db: Q(db).select(m=col("mode").n_unique(), s=col("symbol").n_unique())),
    Case("median_quantile", "SELECT ex, median(bid) AS m, quantile_cont(ofr, 0.9) AS q "
                            "FROM quotes GROUP BY ex",
         lambda db: Q(db).group_by("ex").agg(m=col("bid").median(),
                                             q=col("ofr").quantile(0.9, "linear"))),
    Case("arg_max", "SELECT symbol, date, arg_max(bid, time) AS at_last, "
                    "arg_min(time, ofr) AS t FROM quotes WHERE ofr > 0 GROUP BY symbol, date",
         lambda db: Q(db).filter(col("ofr") > 0).group_by("symbol", "date").agg(
             at_last=col("bid").max_by("time"), t=col("time").min_by("ofr"))),
    Case("max_by_global", "SELECT ex, arg_max(symbol, bidsiz * 100000 + hour(time) * 100 "
                          "+ minute(time)) AS s FROM quotes WHERE bidsiz > 150 GROUP BY ex",
         None),
    Case("vwap", "SELECT symbol, date, sum(price * size) / sum(size) AS vwap, "
                 "sum(size) AS volume FROM trades GROUP BY symbol, date",
         lambda db: T(db).group_by("symbol", "date").agg(
             vwap=(col("price") * col("size")).sum() / col("size").sum(),
             volume=col("size").sum())),
    Case("wavg", "SELECT cond, sum(price * size) / sum(size) AS w FROM trades GROUP BY cond",
         lambda db: T(db).group_by("cond").agg(
             w=(col("price") * col("size")).sum() / col("size").sum())),
    Case("having", "SELECT symbol, count(*) AS n FROM quotes GROUP BY symbol "
                   "HAVING count(*) > 400 AND avg(bid) > 20",
         lambda db: Q(db).group_by("symbol").agg(n=pl.len(), a=col("bid").mean())
         .filter((col("n") > 400) & (col("a") > 20)).select("symbol", "n")),
    Case("sum_empty_is_null", "SELECT sum(bid) AS s, count(*) AS n, avg(bid) AS a, "
                              "min(bid) AS m FROM quotes WHERE bid < 0", None),
    Case("group_expr", "SELECT mode % 3 AS k, count(*) AS n, sum(ofrsiz) AS s FROM quotes "
                       "GROUP BY mode % 3",
         lambda db: Q(db).group_by(k=col("mode") % 3).agg(n=pl.len(), s=col("ofrsiz").sum())),
    Case("group_all", "SELECT ex, mode, count(*) AS n FROM quotes GROUP BY ALL",
         lambda db: Q(db).group_by("ex", "mode").agg(n=pl.len())),
    Case("case_when", "SELECT CASE WHEN bid >= 40 THEN 'high' WHEN bid > 0 THEN 'low' "
                      "ELSE 'none' END AS k, count(*) AS n FROM quotes GROUP BY 1",
         lambda db: Q(db).group_by(k=pl.when(col("bid") >= 40).then(pl.lit("high"))
                                   .when(col("bid") > 0).then(pl.lit("low"))
                                   .otherwise(pl.lit("none"))).agg(n=pl.len())),
    Case("cast", "SELECT CAST(mode AS VARCHAR) AS m, avg(CAST(bidsiz AS DOUBLE)) AS a "
                 "FROM quotes GROUP BY 1",
         lambda db: Q(db).group_by(m=col("mode").cast(pl.String))
         .agg(a=col("bidsiz").cast(pl.Float64).mean())),
    Case("min_max_time", "SELECT symbol, min(time) AS a, max(time) AS b, max(date) AS d "
                         "FROM quotes GROUP BY symbol",
         lambda db: Q(db).group_by("symbol").agg(a=col("time").min(), b=col("time").max(),
                                                 d=col("date").max())),
    Case("distinct", "SELECT DISTINCT ex FROM quotes ORDER BY ex",
         lambda db: Q(db).select("ex").unique().sort("ex"), ordered=True),
    Case("distinct_pairs", "SELECT DISTINCT symbol, date FROM quotes",
         lambda db: Q(db).select("symbol", "date").unique()),
    # -- time ----------------------------------------------------------------------------------
    Case("bucket_1m_one_day", "SELECT time_bucket(INTERVAL '1 minute', time) AS m, count(*) "
                              "AS n, avg(bid) AS a FROM quotes WHERE symbol = 'IBM' AND "
                              "date = '2007-08-01' GROUP BY m ORDER BY m",
         lambda db: db["quotes"].query(dates="2007-08-01", symbols="IBM")
         .group_by(hfq.bucket("time", "1m").alias("m")).agg(n=pl.len(), a=col("bid").mean())
         .sort("m"), ordered=True),
    Case("bucket_5m_symbol", "SELECT symbol, time_bucket(INTERVAL '5 minutes', time) AS m, "
                             "max(ofr) AS hi, count(*) AS n FROM quotes GROUP BY 1, 2",
         lambda db: Q(db).group_by("symbol", hfq.bucket("time", "5m").alias("m"))
         .agg(hi=col("ofr").max(), n=pl.len())),
    Case("bucket_30s", "SELECT time_bucket(INTERVAL '30 seconds', time) AS m, count(*) AS n "
                       "FROM quotes WHERE symbol = 'GE' GROUP BY m",
         lambda db: Q(db).filter(col("symbol") == "GE")
         .group_by(hfq.bucket("time", "30s").alias("m")).agg(n=pl.len())),
    Case("bucket_session", "SELECT time_bucket(INTERVAL '45 minutes', time, "
                           "TIME '09:30:00') AS m, count(*) AS n FROM quotes GROUP BY m",
         lambda db: Q(db).group_by(hfq.bucket("time", "45m", anchor="09:30").alias("m"))
         .agg(n=pl.len())),
    Case("minute_of_day_no_wrap", "SELECT EXTRACT(HOUR FROM time) * 60 + "
                                  "EXTRACT(MINUTE FROM time) AS m, count(*) AS n FROM quotes "
                                  "WHERE time >= '13:45:00' AND time < '13:50:00' GROUP BY m",
         lambda db: Q(db).filter((col("time") >= dt.time(13, 45)) &
                                 (col("time") < dt.time(13, 50)))
         .group_by(m=hfq.minute_of_day("time")).agg(n=pl.len())),
    Case("date_parts", "SELECT year(date) AS y, month(date) AS mo, day(date) AS d, "
                       "extract(dow FROM date) AS w, count(*) AS n FROM quotes GROUP BY ALL",
         None),
    Case("date_trunc_readings", "SELECT device_id, date_trunc('hour', time) AS h, "
                                "avg(cpu_avg_1min) AS c, max(battery_temperature) AS t "
                                "FROM readings GROUP BY 1, 2",
         lambda db: R(db).group_by("device_id", h=col("time").dt.truncate("1h"))
         .agg(c=col("cpu_avg_1min").mean(), t=col("battery_temperature").max())),
    Case("readings_bucket", "SELECT time_bucket(INTERVAL '2 hours', time) AS b, "
                            "avg(battery_level) AS l FROM readings GROUP BY b",
         lambda db: R(db).group_by(hfq.bucket("time", "2h").alias("b"))
         .agg(l=col("battery_level").mean())),
    Case("readings_ts_filter", "SELECT count(*) AS n, sum(mem_free + mem_used) AS m "
                               "FROM readings WHERE time >= '2016-11-16 03:00:00+00'",
         lambda db: R(db).filter(col("time") >= dt.datetime(2016, 11, 16, 3,
                                                            tzinfo=dt.timezone.utc))
         .select(n=pl.len(), m=(col("mem_free") + col("mem_used")).sum())),
    Case("charging_by_hour", "SELECT hour(time) AS h, count(*) AS n FROM readings "
                             "WHERE battery_status = 'charging' GROUP BY 1",
         lambda db: R(db).filter(col("battery_status") == "charging")
         .group_by(h=col("time").dt.hour().cast(pl.Int64)).agg(n=pl.len())),
    # -- subqueries and CTEs -------------------------------------------------------------------
    Case("cte", "WITH a AS (SELECT symbol, avg(bid) AS ab FROM quotes GROUP BY symbol) "
                "SELECT symbol, ab FROM a WHERE ab > 30",
         lambda db: Q(db).group_by("symbol").agg(ab=col("bid").mean())
         .filter(col("ab") > 30)),
    Case("subquery_from", "SELECT avg(n) AS a, max(n) AS m FROM (SELECT symbol, count(*) AS n "
                          "FROM quotes GROUP BY symbol) s",
         lambda db: Q(db).group_by("symbol").agg(n=pl.len())
         .select(a=col("n").mean(), m=col("n").max())),
    Case("in_subquery", "SELECT symbol, count(*) AS n FROM trades WHERE symbol IN "
                        "(SELECT symbol FROM quotes GROUP BY symbol HAVING avg(bid) > 30) "
                        "GROUP BY symbol", None),
    Case("scalar_subquery", "SELECT symbol, date, time, bid FROM quotes WHERE bid > "
                            "(SELECT avg(bid) * 3 FROM quotes)", None),
    # -- context by: windows that keep every row -----------------------------------------------
    Case("row_number_top3", "SELECT symbol, date, time, bid FROM (SELECT *, row_number() "
                            "OVER (PARTITION BY symbol, date ORDER BY bid DESC, time DESC) AS rn "
                            "FROM quotes) s WHERE rn <= 3",
         lambda db: Q(db).with_columns(rn=pl.int_range(1, pl.len() + 1).over(
             "symbol", "date", order_by=[col("bid"), col("time")], descending=True))
         .filter(col("rn") <= 3).select("symbol", "date", "time", "bid")),
    Case("lag_delta", "SELECT symbol, date, time, bid - lag(bid) OVER (PARTITION BY symbol, "
                      "date ORDER BY time) AS d FROM quotes WHERE symbol IN ('IBM', 'AA')",
         lambda db: Q(db).filter(col("symbol").is_in(["IBM", "AA"])).select(
             "symbol", "date", "time",
             d=col("bid") - col("bid").shift(1).over("symbol", "date", order_by="time"))),
    Case("lead", "SELECT symbol, date, time, lead(ofr, 2) OVER (PARTITION BY symbol, date "
                 "ORDER BY time) AS n FROM quotes WHERE symbol = 'GE'",
         lambda db: Q(db).filter(col("symbol") == "GE").select(
             "symbol", "date", "time",
             n=col("ofr").shift(-2).over("symbol", "date", order_by="time"))),
    Case("moving_avg_rows", "SELECT symbol, date, time, avg(bid) OVER (PARTITION BY symbol, "
                            "date ORDER BY time ROWS BETWEEN 4 PRECEDING AND CURRENT ROW) AS m "
                            "FROM quotes",
         lambda db: Q(db).select("symbol", "date", "time", m=col("bid").rolling_mean(
             5, min_samples=1).over("symbol", "date", order_by="time"))),
    Case("cumsum", "SELECT symbol, date, time, sum(bidsiz) OVER (PARTITION BY symbol, date "
                   "ORDER BY time ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS c "
                   "FROM quotes",
         lambda db: Q(db).select("symbol", "date", "time", c=col("bidsiz").cum_sum().over(
             "symbol", "date", order_by="time"))),
    Case("moving_sum_5m", "SELECT symbol, date, time, sum(bidsiz) OVER (PARTITION BY symbol, "
                          "date ORDER BY time RANGE BETWEEN INTERVAL 5 MINUTE PRECEDING AND "
                          "CURRENT ROW) AS s, count(*) OVER (PARTITION BY symbol, date "
                          "ORDER BY time RANGE BETWEEN INTERVAL 5 MINUTE PRECEDING AND "
                          "CURRENT ROW) AS n FROM quotes", None),
    Case("running_max_default", "SELECT symbol, date, time, max(bid) OVER (PARTITION BY "
                                "symbol, date ORDER BY time) AS m FROM quotes", None),
    Case("rank", "SELECT symbol, date, time, rank() OVER (PARTITION BY date ORDER BY bid DESC) "
                 "AS r, dense_rank() OVER (PARTITION BY date ORDER BY bid DESC) AS d "
                 "FROM quotes WHERE bid > 100", None),
    Case("ratio_to_group", "SELECT symbol, date, time, bid / avg(bid) OVER (PARTITION BY "
                           "symbol, date) AS r FROM quotes WHERE bid > 0",
         lambda db: Q(db).filter(col("bid") > 0).select(
             "symbol", "date", "time", r=col("bid") / col("bid").mean().over("symbol", "date"))),
    Case("window_non_local", "SELECT symbol, date, time, bid - avg(bid) OVER (PARTITION BY ex) "
                             "AS d FROM quotes WHERE symbol = 'IBM'",
         lambda db: Q(db).filter(col("symbol") == "IBM").select(
             "symbol", "date", "time", d=col("bid") - col("bid").mean().over("ex"))),
    # -- joins ---------------------------------------------------------------------------------
    Case("asof_backward", "SELECT t.symbol, t.date, t.time, t.price, q.bid, q.ofr, q.time AS qt "
                          "FROM trades t ASOF JOIN quotes q ON t.symbol = q.symbol AND "
                          "t.date = q.date AND t.time >= q.time",
         lambda db: T(db).join_asof(Q(db).select("symbol", "date", "bid", "ofr",
                                                 qt=col("time").cast(pl.Time)),
                                    left_on="time", right_on="qt", by=["symbol", "date"],
                                    keep_unmatched=False)
         .select("symbol", "date", "time", "price", "bid", "ofr", "qt")),
    Case("asof_left_forward", "SELECT t.symbol, t.time, t.price, q.bid, q.time AS qt "
                              "FROM trades t ASOF LEFT JOIN quotes q ON t.symbol = q.symbol "
                              "AND t.date = q.date AND t.time <= q.time",
         lambda db: T(db).join_asof(Q(db).select("symbol", "date", "bid",
                                                 qt=col("time").cast(pl.Time)),
                                    left_on="time", right_on="qt", by=["symbol", "date"],
                                    strategy="forward")
         .select("symbol", "time", "price", "bid", "qt")),
    Case("asof_inside_spread", "SELECT count(*) AS n, sum(CASE WHEN t.price BETWEEN q.bid AND "
                               "q.ofr THEN 1 ELSE 0 END) AS inside FROM trades t ASOF JOIN "
                               "quotes q ON t.symbol = q.symbol AND t.date = q.date AND "
                               "t.time >= q.time WHERE q.bid > 0 AND q.ofr > q.bid", None),
    Case("join_devices", "SELECT i.model, avg(r.battery_level) AS l, count(*) AS n "
                         "FROM readings r JOIN device_info i ON r.device_id = i.device_id "
                         "GROUP BY i.model",
         lambda db: R(db).join(D(db), on="device_id").group_by("model")
         .agg(l=col("battery_level").mean(), n=pl.len())),
    Case("left_join", "SELECT r.device_id, i.os_name, max(r.rssi) AS m FROM readings r "
                      "LEFT JOIN (SELECT * FROM device_info WHERE model = 'pinto') i "
                      "ON r.device_id = i.device_id GROUP BY 1, 2",
         lambda db: R(db).join(D(db).filter(col("model") == "pinto"), on="device_id",
                               how="left").group_by("device_id", "os_name")
         .agg(m=col("rssi").max())),
    Case("semi_join", "SELECT count(*) AS n FROM readings WHERE device_id IN "
                      "(SELECT device_id FROM device_info WHERE model = 'focus')",
         lambda db: R(db).join(D(db).filter(col("model") == "focus"), on="device_id",
                               how="semi").select(n=pl.len())),
    Case("anti_join", "SELECT count(*) AS n FROM readings r ANTI JOIN (SELECT * FROM "
                      "device_info WHERE model = 'focus') i ON r.device_id = i.device_id",
         lambda db: R(db).join(D(db).filter(col("model") == "focus"), on="device_id",
                               how="anti").select(n=pl.len())),
    Case("cross_join", "SELECT count(*) AS n FROM device_info a CROSS JOIN "
                       "(SELECT DISTINCT model FROM device_info) b",
         lambda db: D(db).join(D(db).select("model").unique(), how="cross")
         .select(n=pl.len())),
    Case("full_join", "SELECT a.device_id, b.device_id AS other FROM (SELECT * FROM "
                      "device_info WHERE model = 'pinto') a FULL JOIN (SELECT * FROM "
                      "device_info WHERE os_name = '6.0.1') b ON a.device_id = b.device_id",
         None),
    Case("join_os_api", "SELECT i.os_name, i.api_version, count(*) AS n, "
                        "avg(r.cpu_avg_5min) AS c FROM readings r JOIN device_info i ON "
                        "r.device_id = i.device_id GROUP BY ALL",
         lambda db: R(db).join(D(db), on="device_id").group_by("os_name", "api_version")
         .agg(n=pl.len(), c=col("cpu_avg_5min").mean())),
    # -- pivot ---------------------------------------------------------------------------------
    Case("pivot_vwap", "SELECT * FROM (SELECT time_bucket(INTERVAL '1 hour', time) AS h, "
                       "symbol, price, size FROM trades) PIVOT (sum(price * size) FOR symbol "
                       "IN ('IBM', 'MSFT', 'GE') GROUP BY h)", None),
]
