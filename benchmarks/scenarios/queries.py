"""Queries: about thirty questions over TAQ quotes, trades and device readings -- hfq's query
engine (``db.sql`` and the Python API) against DuckDB (in-memory tables, 2 threads), polars
(in-memory frames) and Daft (on Ray, reading the same data as Parquet).  hfq's tables live on a
1-node x 2-CPU local cluster; the driver runs on that node, so the engine runs the partitions
in the driver's threads with their decoded rows cached (warm, as the peers' in-memory tables),
and Daft runs on the same Ray cluster.  Every contender's whole answer is checked against
DuckDB's before any time counts (groups and counts exactly, floats to 1e-9 relative): a query
where hfq differs fails the scenario; a peer that differs, or cannot express the query, is
left out of that query's timing and the reason is reported.

Data: the quotes of the other scenarios (``--rows`` a day), trades (a quarter as many, priced
inside the quotes' spread, :func:`hfq.synth.trades_table`), ``nbbo`` -- the quote in effect at
the end of each (symbol, second), what the trades were generated from and what the asof joins
match against (quotes are stamped to the second, so several share a time and "the" prevailing
one would otherwise be ambiguous) -- and device readings with their device_info.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import re
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

import hfq
from harness import (
    DAY,
    POINT_SYMBOL,
    Answer,
    Bench,
    Result,
    as_polars,
    cluster_data,
    measure,
    session,
)
from hfq import synth

# Daft's progress bars (printed by its Ray workers, which inherit this environment when the
# benchmark's clusters start) would bury the benchmark's own progress lines
os.environ.setdefault("DAFT_PROGRESS_BAR", "0")

col = pl.col
Frames = Callable[[str], Any]
"""name -> a polars LazyFrame, or an hfq query: the shared Python form runs on both."""

TABLES = ("quotes", "trades", "nbbo", "readings", "device_info")


@dataclass(frozen=True)
class Spec:
    """One question: SQL for hfq and DuckDB (and Daft unless ``daft`` says otherwise), the
    polars form, and optionally hfq's Python API form (``python``; ``shared``: the polars form
    runs on an hfq query as it is)."""

    id: str
    what: str
    sql: str
    polars: Callable[[Frames, dict], Any]
    daft: str | Callable[[dict, dict], Any] | None = ""   # "": the SQL; None: not expressible
    no_daft: str = ""                                      # why not, when None
    python: Callable[[Frames, dict], Any] | None = None
    shared: bool = False


def minute_of_day(c: str = "time") -> pl.Expr:
    return col(c).dt.hour().cast(pl.Int64) * 60 + col(c).dt.minute().cast(pl.Int64)


def i64(c: str) -> pl.Expr:
    return col(c).cast(pl.Int64)


def spread() -> pl.Expr:
    return (col("ofr") - col("bid")) / (col("ofr") + col("bid"))


SPECS = [
    # -- filters -------------------------------------------------------------------------------
    Spec("point", "one symbol, one day",
         "SELECT count(*) AS n, avg(ofr - bid) AS s, max(bid) AS hi FROM quotes "
         "WHERE symbol = '{sym}' AND date = DATE '{day}'",
         lambda t, p: t("quotes").filter((col("symbol") == p["sym"]) & (col("date") == p["date"]))
         .select(n=pl.len(), s=(col("ofr") - col("bid")).mean(), hi=col("bid").max()),
         daft="SELECT count(*) AS n, avg(ofr - bid) AS s, max(bid) AS hi FROM quotes "
              "WHERE symbol = '{sym}' AND date = CAST('{day}' AS DATE)", shared=True),
    Spec("range_time", "a five-minute range, every symbol",
         "SELECT symbol, count(*) AS n, avg(ofr - bid) AS s FROM quotes "
         "WHERE time BETWEEN TIME '10:00:00' AND TIME '10:04:59' GROUP BY symbol",
         lambda t, p: t("quotes").filter(col("time").is_between(dt.time(10), dt.time(10, 4, 59)))
         .group_by("symbol").agg(n=pl.len(), s=(col("ofr") - col("bid")).mean()),
         daft="SELECT symbol, count(*) AS n, avg(ofr - bid) AS s FROM quotes "
              "WHERE hour(time) = 10 AND minute(time) < 5 GROUP BY symbol"),
    Spec("range_price", "price and size ranges",
         "SELECT count(*) AS n, avg(ofr) AS a, sum(ofrsiz) AS s FROM quotes "
         "WHERE bid BETWEEN 20 AND 40 AND ofrsiz >= 10",
         lambda t, p: t("quotes").filter(col("bid").is_between(20, 40) & (col("ofrsiz") >= 10))
         .select(n=pl.len(), a=col("ofr").mean(), s=i64("ofrsiz").sum())),
    Spec("in_list", "IN list of symbols",
         "SELECT symbol, count(*) AS n, sum(bidsiz) AS s, max(ofr) AS hi FROM quotes "
         "WHERE symbol IN ({syms}) GROUP BY symbol",
         lambda t, p: t("quotes").filter(col("symbol").is_in(p["syms"])).group_by("symbol")
         .agg(n=pl.len(), s=i64("bidsiz").sum(), hi=col("ofr").max()), shared=True),
    Spec("strings", "string prefix filter",
         "SELECT ex, count(*) AS n, avg(bid) AS b FROM quotes WHERE mmid LIKE 'EDG%' GROUP BY ex",
         lambda t, p: t("quotes").filter(col("mmid").cast(pl.String).str.starts_with("EDG"))
         .group_by("ex").agg(n=pl.len(), b=col("bid").mean())),
    # -- top-N ---------------------------------------------------------------------------------
    Spec("top_n", "the 10 highest bids",
         "SELECT symbol, date, time, bid FROM quotes ORDER BY bid DESC, symbol, date, time "
         "LIMIT 10",
         lambda t, p: t("quotes").select("date", "time", "bid", symbol=col("symbol")
                                         .cast(pl.String))
         .sort("bid", "symbol", "date", "time", descending=[True, False, False, False])
         .head(10)),
    Spec("top_groups", "the 10 busiest symbols",
         "SELECT symbol, count(*) AS n FROM quotes GROUP BY symbol ORDER BY n DESC, symbol "
         "LIMIT 10",
         lambda t, p: t("quotes").group_by(symbol=col("symbol").cast(pl.String))
         .agg(n=pl.len()).sort("n", "symbol", descending=[True, False]).head(10)),
    # -- group-by per minute / hour per symbol -------------------------------------------------
    Spec("minute_symbol", "spread per minute per symbol",
         "SELECT symbol, hour(time) * 60 + minute(time) AS m, count(*) AS n, "
         "avg((ofr - bid) / (ofr + bid)) * 2 AS spread FROM quotes "
         "WHERE ofr > bid AND bid > 0 GROUP BY 1, 2",
         lambda t, p: t("quotes").filter((col("ofr") > col("bid")) & (col("bid") > 0))
         .group_by("symbol", m=minute_of_day()).agg(n=pl.len(), spread=spread().mean() * 2),
         daft="SELECT symbol, hour(time) * 60 + minute(time) AS m, count(*) AS n, "
              "avg((ofr - bid) / (ofr + bid)) * 2 AS spread FROM quotes "
              "WHERE ofr > bid AND bid > 0 GROUP BY symbol, hour(time) * 60 + minute(time)",
         shared=True),
    Spec("hour_symbol", "high, low and count per hour per symbol",
         "SELECT symbol, hour(time) AS h, min(bid) AS lo, max(ofr) AS hi, count(*) AS n "
         "FROM quotes GROUP BY 1, 2",
         lambda t, p: t("quotes").group_by("symbol", h=col("time").dt.hour().cast(pl.Int64))
         .agg(lo=col("bid").min(), hi=col("ofr").max(), n=pl.len()),
         daft="SELECT symbol, hour(time) AS h, min(bid) AS lo, max(ofr) AS hi, count(*) AS n "
              "FROM quotes GROUP BY symbol, hour(time)", shared=True),
    Spec("bucket_5m", "5-minute buckets (time_bucket)",
         "SELECT time_bucket(INTERVAL '5 minutes', time) AS b, count(*) AS n, "
         "sum(bidsiz + ofrsiz) AS size FROM quotes GROUP BY b",
         lambda t, p: t("quotes").group_by(b=(i64("time") // 300_000_000_000
                                              * 300_000_000_000).cast(pl.Time))
         .agg(n=pl.len(), size=(i64("bidsiz") + i64("ofrsiz")).sum()),
         daft=None, no_daft="no time_bucket on TIME columns in Daft SQL",
         python=lambda t, p: t("quotes").group_by(hfq.bucket("time", "5m").alias("b"))
         .agg(n=pl.len(), size=(i64("bidsiz") + i64("ofrsiz")).sum())),
    # -- aggregates ----------------------------------------------------------------------------
    Spec("moments", "std, var, min, max, avg per exchange",
         "SELECT ex, stddev_samp(bid) AS s, var_pop(ofr) AS v, min(bid) AS lo, max(ofr) AS hi, "
         "avg(bidsiz) AS a FROM quotes GROUP BY ex",
         lambda t, p: t("quotes").group_by("ex").agg(
             s=col("bid").std(), v=col("ofr").var(ddof=0), lo=col("bid").min(),
             hi=col("ofr").max(), a=col("bidsiz").mean()),
         daft=lambda d, p: d["quotes"].groupby("ex").agg(
             _daft().col("bid").stddev(ddof=1).alias("s"),
             _daft().col("ofr").var(ddof=0).alias("v"), _daft().col("bid").min().alias("lo"),
             _daft().col("ofr").max().alias("hi"), _daft().col("bidsiz").mean().alias("a"))),
    Spec("count_distinct", "symbols per exchange (count distinct)",
         "SELECT ex, count(DISTINCT symbol) AS s FROM quotes GROUP BY ex",
         lambda t, p: t("quotes").group_by("ex").agg(s=col("symbol").n_unique())),
    Spec("median", "exact median and 90% quantile per exchange",
         "SELECT ex, median(bid) AS m, quantile_cont(ofr, 0.9) AS q FROM quotes GROUP BY ex",
         lambda t, p: t("quotes").group_by("ex").agg(m=col("bid").median(),
                                                     q=col("ofr").quantile(0.9, "linear")),
         daft=None, no_daft="Daft has approximate percentiles only"),
    Spec("open_close", "first bid and last offer per symbol-day (by time)",
         "SELECT symbol, date, arg_min(bid, time) AS open_bid, arg_max(ofr, time) AS close_ofr, "
         "count(*) AS n FROM nbbo GROUP BY 1, 2",
         lambda t, p: t("nbbo").group_by("symbol", "date").agg(
             open_bid=col("bid").sort_by("time").first(),
             close_ofr=col("ofr").sort_by("time").last(), n=pl.len()),
         daft=None, no_daft="no arg_min/arg_max (min_by) in Daft SQL", shared=True),
    Spec("vwap", "VWAP per symbol-day",
         "SELECT symbol, date, sum(price * size) / sum(size) AS vwap, sum(size) AS volume, "
         "count(*) AS n FROM trades GROUP BY symbol, date",
         lambda t, p: t("trades").group_by("symbol", "date").agg(
             vwap=(col("price") * col("size")).sum() / col("size").sum(),
             volume=i64("size").sum(), n=pl.len()), shared=True),
    Spec("having", "busy symbols (HAVING)",
         "SELECT symbol, count(*) AS n, avg(bid) AS b FROM quotes GROUP BY symbol "
         "HAVING count(*) > {busy}",
         lambda t, p: t("quotes").group_by("symbol").agg(n=pl.len(), b=col("bid").mean())
         .filter(col("n") > p["busy"])),
    Spec("distinct", "distinct (symbol, exchange) pairs",
         "SELECT DISTINCT symbol, ex FROM quotes",
         lambda t, p: t("quotes").select("symbol", "ex").unique()),
    # -- reshaping -----------------------------------------------------------------------------
    Spec("pivot_vwap", "per-minute VWAP, one column per symbol (PIVOT)",
         "WITH v AS (SELECT hour(time) * 60 + minute(time) AS m, symbol, "
         "sum(price * size) / sum(size) AS vwap FROM trades WHERE symbol IN ({syms}) "
         "GROUP BY 1, 2) SELECT * FROM v PIVOT (first(vwap) FOR symbol IN ({syms}) GROUP BY m)",
         lambda t, p: t("trades").filter(col("symbol").is_in(p["syms"]))
         .group_by("symbol", m=minute_of_day())
         .agg(vwap=(col("price") * col("size")).sum() / col("size").sum())
         .collect().with_columns(col("symbol").cast(pl.String))
         .pivot(on="symbol", index="m", values="vwap").select("m", *p["syms"]).lazy(),
         daft=None, no_daft="no PIVOT in Daft SQL"),
    # -- joins with a small table --------------------------------------------------------------
    Spec("join_model", "readings joined with device_info, per model",
         "SELECT i.model, avg(r.battery_level) AS l, count(*) AS n FROM readings r "
         "JOIN device_info i ON r.device_id = i.device_id GROUP BY i.model",
         lambda t, p: t("readings").join(t("device_info"), on="device_id").group_by("model")
         .agg(l=col("battery_level").mean(), n=pl.len()), shared=True),
    Spec("join_hour", "readings x device_info, per os and hour, one status",
         "SELECT i.os_name, hour(r.time) AS h, avg(r.cpu_avg_1min) AS c, count(*) AS n "
         "FROM readings r JOIN device_info i ON r.device_id = i.device_id "
         "WHERE r.battery_status = 'discharging' GROUP BY 1, 2",
         lambda t, p: t("readings").filter(col("battery_status") == "discharging")
         .join(t("device_info"), on="device_id")
         .group_by("os_name", h=col("time").dt.hour().cast(pl.Int64))
         .agg(c=col("cpu_avg_1min").mean(), n=pl.len()),
         daft="SELECT i.os_name, hour(r.time) AS h, avg(r.cpu_avg_1min) AS c, count(*) AS n "
              "FROM readings r JOIN device_info i ON r.device_id = i.device_id "
              "WHERE r.battery_status = 'discharging' GROUP BY i.os_name, hour(r.time)"),
    Spec("device_hour", "per device per hour (date_trunc)",
         "SELECT device_id, date_trunc('hour', time) AS h, avg(battery_temperature) AS t, "
         "min(battery_level) AS b FROM readings GROUP BY 1, 2",
         lambda t, p: t("readings").group_by("device_id", h=col("time").dt.truncate("1h"))
         .agg(t=col("battery_temperature").mean(), b=col("battery_level").min()),
         daft=None, no_daft="date_trunc is not in Daft SQL", shared=True),
    Spec("semi_join", "readings of one model (IN subquery)",
         "SELECT count(*) AS n, avg(rssi) AS r FROM readings WHERE device_id IN "
         "(SELECT device_id FROM device_info WHERE model = 'pinto')",
         lambda t, p: t("readings").join(t("device_info").filter(col("model") == "pinto"),
                                         on="device_id", how="semi")
         .select(n=pl.len(), r=col("rssi").mean()), shared=True),
    # -- asof joins ----------------------------------------------------------------------------
    Spec("asof", "every trade with its prevailing quote (ASOF JOIN)",
         "SELECT t.symbol, t.date, t.time, t.price, t.size, n.bid, n.ofr FROM trades t "
         "ASOF JOIN nbbo n ON t.symbol = n.symbol AND t.date = n.date AND t.time >= n.time",
         lambda t, p: t("trades").join_asof(
             t("nbbo").select("symbol", "date", "bid", "ofr", qt=col("time")),
             left_on="time", right_on="qt", by=["symbol", "date"], strategy="backward",
             check_sortedness=False).filter(col("bid").is_not_null())
         .select("symbol", "date", "time", "price", "size", "bid", "ofr"),
         daft=lambda d, p: d["trades"].join_asof(
             d["nbbo"].select("symbol", "date", "bid", "ofr",
                              _daft().col("time").alias("qt")),
             left_on="time", right_on="qt", by=["symbol", "date"])
         .where(_daft().col("bid").not_null())
         .select("symbol", "date", "time", "price", "size", "bid", "ofr"),
         python=lambda t, p: t("trades").join_asof(
             t("nbbo").select("symbol", "date", "bid", "ofr", qt=col("time")),
             left_on="time", right_on="qt", by=["symbol", "date"], keep_unmatched=False)
         .select("symbol", "date", "time", "price", "size", "bid", "ofr")),
    Spec("effective_spread", "effective spread per symbol (asof join, aggregated)",
         "SELECT t.symbol, avg(abs(t.price - (n.bid + n.ofr) / 2) / (n.bid + n.ofr)) * 4 AS e, "
         "count(*) AS n FROM trades t ASOF JOIN nbbo n ON t.symbol = n.symbol AND "
         "t.date = n.date AND t.time >= n.time GROUP BY t.symbol",
         lambda t, p: t("trades").join_asof(
             t("nbbo").select("symbol", "date", "bid", "ofr", qt=col("time")),
             left_on="time", right_on="qt", by=["symbol", "date"], strategy="backward",
             check_sortedness=False).filter(col("bid").is_not_null())
         .group_by("symbol").agg(
             e=((col("price") - (col("bid") + col("ofr")) / 2).abs()
                / (col("bid") + col("ofr"))).mean() * 4, n=pl.len()),
         daft=lambda d, p: d["trades"].join_asof(
             d["nbbo"].select("symbol", "date", "bid", "ofr", _daft().col("time").alias("qt")),
             left_on="time", right_on="qt", by=["symbol", "date"])
         .where(_daft().col("bid").not_null()).groupby("symbol").agg(
             (((_daft().col("price") - (_daft().col("bid") + _daft().col("ofr")) / 2).abs()
               / (_daft().col("bid") + _daft().col("ofr"))).mean() * 4).alias("e"),
             _daft().col("price").count().alias("n"))),
    # -- context by: windows that keep every row -----------------------------------------------
    Spec("moving_5m", "5-minute moving average of the bid (RANGE window), summed per symbol",
         "SELECT symbol, sum(ma) AS s, count(*) AS n FROM (SELECT symbol, avg(bid) OVER "
         "(PARTITION BY symbol, date ORDER BY time RANGE BETWEEN INTERVAL 5 MINUTE PRECEDING "
         "AND CURRENT ROW) AS ma FROM quotes) w GROUP BY symbol",
         lambda t, p: t("quotes").select(
             "symbol", ma=col("bid").rolling_mean_by(i64("time"), "300000000001i",
                                                     closed="right").over("symbol", "date"))
         .group_by("symbol").agg(s=col("ma").sum(), n=pl.len()),
         daft=None, no_daft="Daft SQL has no RANGE frames with an INTERVAL"),
    Spec("volatility", "minute returns with lag(), their std per symbol",
         "WITH m AS (SELECT symbol, date, hour(time) * 60 + minute(time) AS mi, "
         "avg((bid + ofr) / 2) AS mid FROM quotes WHERE bid > 0 AND ofr > bid GROUP BY 1, 2, 3) "
         "SELECT symbol, stddev_samp(r) AS vol, count(r) AS n FROM (SELECT symbol, mid / lag(mid) "
         "OVER (PARTITION BY symbol, date ORDER BY mi) - 1 AS r FROM m) s GROUP BY symbol",
         lambda t, p: t("quotes").filter((col("bid") > 0) & (col("ofr") > col("bid")))
         .group_by("symbol", "date", mi=minute_of_day())
         .agg(mid=((col("bid") + col("ofr")) / 2).mean())
         .select("symbol", r=(col("mid") / col("mid").shift(1) - 1)
                 .over("symbol", "date", order_by="mi"))
         .group_by("symbol").agg(vol=col("r").std(), n=col("r").count()),
         daft="WITH m AS (SELECT symbol, date, hour(time) * 60 + minute(time) AS mi, "
              "avg((bid + ofr) / 2) AS mid FROM quotes WHERE bid > 0 AND ofr > bid "
              "GROUP BY symbol, date, hour(time) * 60 + minute(time)) "
              "SELECT symbol, stddev(r) AS vol, count(r) AS n FROM (SELECT symbol, mid / "
              "lag(mid, 1) OVER (PARTITION BY symbol, date ORDER BY mi) - 1 AS r FROM m) s "
              "GROUP BY symbol"),
    Spec("rank_top3", "top 3 bids per symbol-day (rank)",
         "SELECT symbol, date, count(*) AS n, sum(bid) AS s FROM (SELECT symbol, date, bid, "
         "rank() OVER (PARTITION BY symbol, date ORDER BY bid DESC) AS r FROM quotes) w "
         "WHERE r <= 3 GROUP BY 1, 2",
         lambda t, p: t("quotes").filter(
             col("bid").rank("min", descending=True).over("symbol", "date") <= 3)
         .group_by("symbol", "date").agg(n=pl.len(), s=col("bid").sum()),
         daft="SELECT symbol, date, count(*) AS n, sum(bid) AS s FROM (SELECT symbol, date, "
              "bid, rank() OVER (PARTITION BY symbol, date ORDER BY bid DESC) AS r FROM quotes) "
              "w WHERE r <= 3 GROUP BY symbol, date"),
    Spec("cumulative", "running volume per symbol-day (default RANGE frame), its maximum",
         "SELECT symbol, date, max(c) AS c FROM (SELECT symbol, date, sum(bidsiz) OVER "
         "(PARTITION BY symbol, date ORDER BY time) AS c FROM quotes WHERE time < TIME "
         "'12:00:00') w GROUP BY 1, 2",
         lambda t, p: t("quotes").filter(col("time") < dt.time(12))
         .select("symbol", "date", c=i64("bidsiz").cum_sum().over("symbol", "date",
                                                                  order_by="time"))
         .group_by("symbol", "date").agg(c=col("c").max()),
         daft="SELECT symbol, date, max(c) AS c FROM (SELECT symbol, date, sum(bidsiz) OVER "
              "(PARTITION BY symbol, date ORDER BY time) AS c FROM quotes WHERE hour(time) < 12) "
              "w GROUP BY symbol, date"),
]
"""The questions (the issue's operations: filters, top-N, group-by per minute/hour per
symbol, VWAP per symbol-day, joins of readings with device_info, asof joins, windows, pivot).
Every window orders on keys without ties or uses a frame that includes peers, so each query has
one right answer."""

QUICK = ("point", "minute_symbol", "vwap", "pivot_vwap", "join_model", "asof", "moving_5m")
"""The queries of a ``--quick`` smoke test (one of each kind; the whole list at any --rows)."""

_PER_PARTITION = ("the partitions run in a few batches (one polars plan per batch over the "
                  "partitions' cached rows), whose results are concatenated or merged on the "
                  "driver, against one vectorised pass over one in-memory table")
REASONS: dict[str, str] = {
    "point": "fixed costs of a query (checking the statement's tables, the plan's steps, "
             "two polars collects) against DuckDB's sub-millisecond point lookup",
    "median": "an exact median is not decomposable: every value of every group travels to "
              "the driver, which computes it there",
    "count_distinct": "each partition's distinct (exchange, symbol) pairs travel to the "
                      "driver, which counts them; " + _PER_PARTITION,
    "pivot_vwap": "the pivot runs on the driver after the per-minute VWAPs are merged; "
                  + _PER_PARTITION,
    "join_model": "the device table is run once on the driver and shipped with the node "
                  "stage, then joined per partition; " + _PER_PARTITION,
    "join_hour": "the device table is run once on the driver and shipped with the node "
                 "stage, then joined per partition; " + _PER_PARTITION,
    "semi_join": "the IN subquery is run first (a separate query), then the filter per "
                 "partition; " + _PER_PARTITION,
    "minute_symbol": "every symbol-minute (one row each) is concatenated on the driver "
                     "from the partitions' results; " + _PER_PARTITION,
    "bucket_5m": "partial states per partition merged on the driver (the keys hold no "
                 "partition column); " + _PER_PARTITION,
    "top_n": "each batch reads every partition's bids once for its best bid (the catalog "
             "keeps min/max for the sort and partition columns only), then sorts the "
             "partitions that can reach the top 10; DuckDB's top-N pushes its running bound "
             "into the scan of its in-memory table, which skips row groups by their min/max "
             "(EXPLAIN ANALYZE: 2 of 33 row groups scanned at 4 M rows)",
    "asof": "co-partitioned (no shuffle, no sort of rows already in time order; each "
            "batch of partitions checks that order in one pass per side), but each batch's "
            "joined rows are concatenated on the driver into one answer",
    "effective_spread": "co-partitioned per symbol-day; " + _PER_PARTITION,
}
"""Why hfq is slower than a peer on a query, where the plan alone does not say it; the other
queries are slower for the reason of :data:`_PER_PARTITION` (with the plan's facts)."""


def _daft():
    import daft
    return daft


# -- data ----------------------------------------------------------------------------------------
@dataclass
class QueryData:
    frames: dict[str, pl.DataFrame]
    params: dict[str, Any]
    parquet: dict[str, str]


def query_data(bench: Bench) -> QueryData:
    if "queries" in bench.cache:
        return bench.cache["queries"]
    import pyarrow as pa
    import pyarrow.parquet as pq

    from hfq.demo import trading_days
    taq = cluster_data(bench)
    dates = trading_days(DAY, bench.days)
    rows = bench.rows
    bench.log(f"  generating {rows // 4:,} trades a day, nbbo and device readings ...")
    trades = synth.trades_table(dates=dates, rows_per_day=max(100, rows // 4),
                                quotes_per_day=rows, symbols=bench.symbols)
    quotes = pl.from_arrow(taq.table)
    assert isinstance(quotes, pl.DataFrame)
    nbbo = quotes.group_by("symbol", "date", "time", maintain_order=True).last()
    devices = max(20, min(1000, rows // 20_000))
    interval = max(1, 86400 * devices * 4 // max(rows, 1))
    readings = pa.Table.from_batches(synth.readings_batches(
        start="2016-11-15", days=1, devices=devices, interval_s=interval))
    frames = {"quotes": quotes, "trades": pl.from_arrow(trades), "nbbo": nbbo,
              "readings": pl.from_arrow(readings),
              "device_info": pl.from_arrow(synth.device_info_table(devices=devices))}
    busiest = (quotes.group_by(col("symbol").cast(pl.String)).len()
               .sort("len", "symbol", descending=[True, False])["symbol"].head(5).to_list())
    syms = busiest if POINT_SYMBOL in busiest else [POINT_SYMBOL, *busiest[:4]]
    params = {"sym": POINT_SYMBOL, "day": dates[0], "date": dt.date.fromisoformat(dates[0]),
              "syms": syms, "busy": max(1, quotes.height // max(1, bench.symbols)) * 2}
    # Daft reads Parquet: text as strings, times of day as time64 (Daft rejects time32),
    # sorted by (symbol, time) in 64Ki-row groups as the other Parquet peers
    folder = os.path.join(bench.work, "queries_parquet")
    os.makedirs(folder, exist_ok=True)
    parquet = {}
    for name, df in frames.items():
        path = os.path.join(folder, f"{name}.parquet")
        pq.write_table(peer_arrow(df), path, row_group_size=1 << 16)
        parquet[name] = path
    data = QueryData(frames, params, parquet)
    bench.cache["queries"] = data
    return data


def peer_arrow(df: pl.DataFrame):
    """The rows as the peers get them: text as plain strings, times of day as time64[us]."""
    import pyarrow as pa
    table = df.with_columns(col(c).cast(pl.String) for c, t in df.schema.items()
                            if isinstance(t, (pl.Categorical, pl.Enum))).to_arrow()
    return table.cast(pa.schema([pa.field(f.name, pa.time64("us")) if pa.types.is_time(f.type)
                                 else f for f in table.schema]))


def load_hfq(bench: Bench, data: QueryData) -> hfq.Database:
    """The five tables in a 1-node x 2-CPU cluster: quotes, trades and nbbo share one partition
    scheme (date x symbol hash), readings are partitioned by day x device."""
    sess = session(bench)
    db = sess.connect(1, cpus=2)
    buckets = max(8, min(100, bench.rows // 200_000))
    taq = hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", buckets))
    layout = {"quotes": (hfq.schemas.TAQ, taq, ("symbol", "time")),
              "trades": (hfq.schemas.TRADES, taq, ("symbol", "time")),
              "nbbo": (hfq.schemas.TAQ, taq, ("symbol", "time")),
              "readings": (hfq.schemas.READINGS, hfq.Compo(hfq.Value("time", by="day"),
                                                           hfq.Hash("device_id", 8)),
                           ("device_id", "time")),
              "device_info": (hfq.schemas.DEVICE_INFO, hfq.Hash("device_id", 2),
                              ("device_id",))}
    for name, (schema, scheme, sort_by) in layout.items():
        key = f"queries:{name}"
        if key in sess.tables:
            continue
        start = time.perf_counter()
        table = db.create_table(name, schema, partition_by=scheme, sort_by=sort_by,
                                replicas=1)
        table.append(schema.conform(data.frames[name].to_arrow()))
        sess.tables[key] = table
        bench.log(f"  loaded {data.frames[name].height:,} rows into {name!r} in "
                  f"{time.perf_counter() - start:.1f} s")
    return db


def duck_connection(data: QueryData):
    import duckdb
    con = duckdb.connect()
    con.execute("SET threads = 2")
    con.execute("SET TimeZone = 'UTC'")
    for name, df in data.frames.items():
        con.register("src", peer_arrow(df))
        order = " ORDER BY symbol, time" if "symbol" in df.columns else \
            " ORDER BY device_id" if name == "device_info" else " ORDER BY device_id, time"
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM src{order}")
        con.unregister("src")
    return con


# -- checking ------------------------------------------------------------------------------------
def normal(frame: Any) -> pl.DataFrame:
    """Any answer as polars with one representation per kind of value, columns by name:
    text as strings, integers as Int64, floats as Float64, times of day and timestamps as
    integer nanoseconds / microseconds (UTC)."""
    df = as_polars(frame)
    assert isinstance(df, pl.DataFrame)
    out = []
    for name, dtype in df.schema.items():
        c = col(name)
        if dtype in (pl.Categorical, pl.String) or isinstance(dtype, pl.Enum):
            c = c.cast(pl.String)
        elif dtype == pl.Time:
            c = c.cast(pl.Int64)
        elif isinstance(dtype, pl.Datetime):
            c = (c.dt.replace_time_zone(None) if dtype.time_zone else c) \
                .dt.cast_time_unit("us").cast(pl.Int64)
        elif dtype.is_integer() or dtype == pl.Decimal:
            c = c.cast(pl.Int64)
        elif dtype.is_float():
            c = c.cast(pl.Float64)
        out.append(c.alias(name))
    return df.select(sorted(out, key=lambda e: e.meta.output_name()))


def differs(got: pl.DataFrame, want: pl.DataFrame) -> str | None:
    """None when equal as multisets of rows (floats to 1e-9 relative), else what differs."""
    if got.columns != want.columns:
        return f"columns {got.columns} != {want.columns}"
    if got.height != want.height:
        return f"{got.height:,} rows != {want.height:,}"
    if not got.height:
        return None
    exact = [c for c, t in got.schema.items() if not t.is_float()]
    floats = [c for c, t in got.schema.items() if t.is_float()]
    keys = exact + [col(c).round_sig_figs(6) for c in floats]
    a = got.sort(keys, nulls_last=True, maintain_order=True)
    b = want.sort(keys, nulls_last=True, maintain_order=True)
    for c in exact:
        if not a[c].equals(b[c]):
            return f"column {c} differs"
    for c in floats:
        x, y = a[c].to_numpy(), b[c].to_numpy()
        if not np.array_equal(np.isnan(x), np.isnan(y)) or not np.allclose(
                x, y, rtol=1e-9, atol=1e-12, equal_nan=True):
            return f"column {c} differs beyond 1e-9 relative"
    return None


# -- the scenario --------------------------------------------------------------------------------
def scenario_queries(bench: Bench) -> None:
    """Every query of :data:`SPECS` through hfq (``db.sql``; the Python API where given) and
    each peer, whole answers checked against DuckDB's; then the point query embedded."""
    data = query_data(bench)
    db = load_hfq(bench, data)
    con = duck_connection(data)
    lazy = {n: f.lazy() for n, f in data.frames.items()}
    daft_ok = _start_daft(bench)
    p = data.params
    fmt = {"sym": p["sym"], "day": p["day"], "busy": p["busy"],
           "syms": ", ".join(f"'{s}'" for s in p["syms"])}
    rows_out: list[dict] = []
    for spec in SPECS:
        if bench.quick and spec.id not in QUICK:
            continue
        rows_out.append(_one(bench, spec, db, con, lazy, data, fmt, daft_ok))
    point = embedded_point(bench, data, fmt)
    con.close()
    bench.summary[bench.name(f"queries: {SPECS[0].id}")] = summary(rows_out, point)
    for line in bench.summary[bench.name(f"queries: {SPECS[0].id}")]:
        bench.log(line)


def _start_daft(bench: Bench) -> bool:
    try:
        import daft
    except ImportError:
        bench.log("  daft is not installed: Daft left out (pip install -e '.[bench]')")
        return False
    import ray
    daft.set_runner_ray(address=None if ray.is_initialized() else "auto",
                        noop_if_initialized=True)
    return True


def _one(bench: Bench, spec: Spec, db, con, lazy, data: QueryData, fmt: dict,
         daft_ok: bool) -> dict:
    p = data.params
    text = spec.sql.format(**fmt)
    answers: dict[str, pl.DataFrame] = {}
    stats: dict[str, Any] = {}

    def checked(name: str, run: Callable[[], Any]) -> Answer:
        def go(full: bool) -> tuple[int, Any]:
            out = run()
            n = out.num_rows if hasattr(out, "num_rows") else len(out)
            if full and name not in answers:
                answers[name] = normal(out)
            return n, None
        return Answer(go)

    def hfq_sql():
        q = db.sql(text)
        out = q.collect()
        stats["sql"] = q.last_run
        return out

    contenders: dict[str, Answer] = {"hfq db.sql": checked("hfq db.sql", hfq_sql)}
    python = spec.python or (spec.polars if spec.shared else None)
    if python is not None:
        def hfq_python():
            q = python(lambda n: db[n].query(), p)
            out = q.collect()
            stats["python"] = q.last_run
            return out
        contenders["hfq query API"] = checked("hfq query API", hfq_python)
    duck_text = text
    contenders["DuckDB (in memory, 2 threads)"] = checked(
        "DuckDB (in memory, 2 threads)", lambda: con.sql(duck_text).pl())
    contenders["polars (in memory)"] = checked(
        "polars (in memory)", lambda: spec.polars(lambda n: lazy[n], p).collect())
    skipped: dict[str, str] = {}
    if not daft_ok:
        skipped["Daft"] = "not installed"
    elif spec.daft is None:
        skipped["Daft"] = spec.no_daft
    else:
        contenders["Daft (Ray, Parquet)"] = checked("Daft (Ray, Parquet)",
                                                    _daft_run(spec, data, fmt))
    # every answer checked against DuckDB's before timing: run each once first
    oracle = "DuckDB (in memory, 2 threads)"
    for name in [oracle, *[n for n in contenders if n != oracle]]:
        try:
            contenders[name].run(True)
        except Exception as exc:   # noqa: BLE001 -- a peer that cannot run it is left out
            if name.startswith("hfq") or name == oracle:
                raise
            skipped[name] = f"fails: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
            del contenders[name]
            continue
        if name != oracle:
            problem = differs(answers[name], answers[oracle])
            if problem is not None:
                if name.startswith("hfq"):
                    raise AssertionError(f"queries: {spec.id}: {name} differs from DuckDB: "
                                         f"{problem}\n{text}")
                skipped[name] = f"answer differs from DuckDB's ({problem})"
                del contenders[name]
    results = measure(bench, f"queries: {spec.id}", contenders, same_answer=False)
    by = {r.contender: r for r in results}
    ours = by["hfq db.sql"]
    run = stats["sql"]
    ours.bytes = run.bytes_to_driver
    ours.extra.update(rows_to_driver=run.rows_to_driver, bytes_to_driver=run.bytes_to_driver,
                      partitions=run.partitions)
    ours.notes = f"{run.rows_to_driver:,} rows / {run.bytes_to_driver:,} bytes to the driver"
    for name, why in skipped.items():
        bench.log(f"    {spec.id}: {name} left out: {why}")
    return {"spec": spec, "results": by, "skipped": skipped, "text": text,
            "rows": answers["hfq db.sql"].height, "run": run,
            "explain": db.sql(text).explain()}


def _daft_run(spec: Spec, data: QueryData, fmt: dict) -> Callable[[], Any]:
    def run():
        daft = _daft()
        frames = {n: daft.read_parquet(path) for n, path in data.parquet.items()}
        if callable(spec.daft):
            return spec.daft(frames, data.params).to_arrow()
        text = (spec.daft or spec.sql).format(**fmt)
        return daft.sql(text, **frames).to_arrow()
    return run


# -- the point query, embedded -------------------------------------------------------------------
def embedded_point(bench: Bench, data: QueryData, fmt: dict) -> dict:
    """One symbol of one day through ``db.sql`` in this process (an embedded database holding
    the quotes): the same statement repeated (parsed and planned once), and a different symbol
    each time (parsed, planned and read each time); DuckDB the same way."""
    root = os.path.join(bench.work, "queries_embedded")
    if "queries:embedded" not in bench.cache:
        import shutil
        shutil.rmtree(root, ignore_errors=True)
        edb = hfq.connect(root)
        buckets = max(8, min(100, bench.rows // 200_000))
        edb.create_table("quotes", hfq.schemas.TAQ, sort_by=("symbol", "time"),
                         partition_by=hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", buckets))
                         ).append(data.frames["quotes"].to_arrow())
        bench.cache["queries:embedded"] = edb
    edb = bench.cache["queries:embedded"]
    import duckdb
    con = duckdb.connect()
    con.execute("SET threads = 2")
    con.register("src", peer_arrow(data.frames["quotes"]))
    con.execute("CREATE TABLE quotes AS SELECT * FROM src ORDER BY symbol, time")
    text = SPECS[0].sql
    symbols = (data.frames["quotes"]["symbol"].cast(pl.String).unique().sort().to_list())
    reps = 20 if bench.quick else 200
    chosen = [symbols[i * len(symbols) // reps] for i in range(reps)]

    def timing(run: Callable[[str], Any], vary: bool) -> float:
        run(fmt["sym"])
        took = []
        for s in (chosen if vary else [fmt["sym"]] * reps):
            start = time.perf_counter()
            run(s)
            took.append(time.perf_counter() - start)
        return statistics.median(took) * 1000

    def hfq_run(sym: str):
        return edb.sql(text.format(**{**fmt, "sym": sym})).collect()

    def duck_run(sym: str):
        return con.execute(text.format(**{**fmt, "sym": sym})).fetchall()

    want = normal(con.sql(text.format(**fmt)).pl())
    problem = differs(normal(hfq_run(fmt["sym"])), want)
    if problem:
        raise AssertionError(f"queries: embedded point query differs from DuckDB: {problem}")
    out = {"hfq_same_ms": timing(hfq_run, False), "hfq_vary_ms": timing(hfq_run, True),
           "duck_same_ms": timing(duck_run, False), "duck_vary_ms": timing(duck_run, True)}
    con.close()
    bench.log(f"  point query embedded: db.sql {out['hfq_same_ms']:.2f} ms (same statement), "
              f"{out['hfq_vary_ms']:.2f} ms (a different symbol each time); DuckDB "
              f"{out['duck_same_ms']:.2f} / {out['duck_vary_ms']:.2f} ms")
    return out


# -- the report ----------------------------------------------------------------------------------
def _geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def summary(rows: list[dict], point: dict) -> list[str]:
    """The per-query table, geometric means, the asof and point targets, and every query on
    which a peer is faster, with the reason."""
    duck, daft_, pol = "DuckDB (in memory, 2 threads)", "Daft (Ray, Parquet)", \
        "polars (in memory)"
    lines = ["", "### All queries (seconds, median; ratio = peer / hfq db.sql, above 1 hfq "
             "is faster)", "",
             "| query | what | hfq db.sql | hfq API | DuckDB | polars | Daft | vs DuckDB | "
             "vs polars | vs Daft | rows out | rows / bytes to driver |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    vs: dict[str, list[float]] = {duck: [], pol: [], daft_: []}
    slower: list[str] = []
    for r in rows:
        res: dict[str, Result] = r["results"]
        ours = res["hfq db.sql"]

        def cell(name: str, res: dict = res) -> str:
            return f"{res[name].median:.4f}" if name in res else "--"

        ratios = {}
        for peer in vs:
            if peer in res:
                ratios[peer] = res[peer].median / ours.median
                vs[peer].append(ratios[peer])
        run = r["run"]
        lines.append(
            f"| {r['spec'].id} | {r['spec'].what} | {ours.median:.4f} | {cell('hfq query API')}"
            f" | {cell(duck)} | {cell(pol)} | {cell(daft_)} | "
            + " | ".join(f"{ratios[p]:.2f}x" if p in ratios else "--" for p in vs)
            + f" | {r['rows']:,} | {run.rows_to_driver:,} / {run.bytes_to_driver:,} |")
        for peer, ratio in ratios.items():
            if ratio < 1:
                why = f"{REASONS.get(r['spec'].id, _PER_PARTITION)} ({_plan_reason(r)})"
                slower.append(f"- **{r['spec'].id}** slower than {peer} ({ratio:.2f}x): {why}")
    gm_duck, gm_daft = _geomean(vs[duck]), _geomean(vs[daft_])
    lines += ["", f"- Geometric mean over {len(vs[duck])} queries: **{gm_duck:.2f}x DuckDB** "
              f"(target >= 1.5x: {'met' if gm_duck >= 1.5 else 'not met'}), "
              f"{_geomean(vs[pol]):.2f}x polars; over the {len(vs[daft_])} queries Daft runs: "
              f"**{gm_daft:.2f}x Daft** (target >= 2x: "
              f"{'met' if gm_daft >= 2 else 'not met'})."]
    asof = next(r for r in rows if r["spec"].id == "asof")["results"]
    if duck in asof and pol in asof:
        a_duck = asof[duck].median / asof["hfq db.sql"].median
        a_pol = asof[pol].median / asof["hfq db.sql"].median
        lines.append(f"- Asof join of every trade to its prevailing quote: **{a_duck:.2f}x "
                     f"DuckDB's ASOF JOIN** (target >= 3x: {'met' if a_duck >= 3 else 'not met'})"
                     f", **{a_pol:.2f}x polars' join_asof** (target >= 1x: "
                     f"{'met' if a_pol >= 1 else 'not met'}).")
    lines.append(f"- One symbol, one day through `db.sql`, embedded: **{point['hfq_same_ms']:.2f}"
                 f" ms** for a repeated statement (target <= 3 ms: "
                 f"{'met' if point['hfq_same_ms'] <= 3 else 'not met'}), "
                 f"{point['hfq_vary_ms']:.2f} ms with a different symbol each time (parsed, "
                 f"planned and read afresh); DuckDB {point['duck_same_ms']:.2f} / "
                 f"{point['duck_vary_ms']:.2f} ms. In the scenario's timing (1-node "
                 f"cluster, the driver on the node): "
                 f"{rows[0]['results']['hfq db.sql'].median * 1000:.1f} ms.")
    skipped = [f"{r['spec'].id}: {n} -- {why}" for r in rows for n, why in r["skipped"].items()]
    if skipped:
        lines += ["", "Left out (cannot express the query, or a different answer):", ""]
        lines += [f"- {s}" for s in skipped]
    if slower:
        lines += ["", "Queries where a peer is faster, and why:", "", *slower]
    return lines


def _plan_reason(r: dict) -> str:
    """A reason read off the plan when none was written down: what the driver does."""
    driver = r["explain"].split("driver stage:")[1].strip().splitlines()
    steps = [s.strip() for s in driver[1:] if not s.startswith("note")]
    notes = [s[len("note: "):] for s in driver if s.startswith("note: ")]
    moved = r["run"].rows_to_driver
    parts = [f"{moved:,} rows to the driver"]
    if steps:   # each step's kind, without its expressions
        parts.append("driver: " + ", ".join(re.split(r":| by | col|\[", s)[0].strip()
                                            for s in steps))
    parts += notes[:1]
    return "; ".join(parts)
