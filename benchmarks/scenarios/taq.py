"""taq: a quant's questions over one NYSE Daily TAQ day in the 2026 format -- the categories of
KX's public NYSE TAQ benchmark (point and range filters, 50- and 1,000-symbol lists,
per-symbol aggregates, 10-minute buckets, pivots by exchange and by symbol, moving windows,
running sums and VWAPs, runs of equal prices, medians, asof joins of trades to quotes for 1, 50
and all symbols) -- through hfq (``db.sql``) against DuckDB (in memory, tables sorted by
(symbol, time), 2 threads) and polars (in memory, its best formulation).

Data: :func:`hfq.ingest.taq_synth.nyse_files` -- ``--rows`` quotes and 15% as many trades,
heavy-tailed activity (the busiest symbol ~5% of the rows, the median symbol ~100) -- written
as the daily pipe-separated files and loaded into hfq by :func:`hfq.ingest.taq.load_taq` (its
speed is reported); the peers get the same rows in memory.  DuckDB keeps times as BIGINT
nanoseconds (its TIME_NS type has no arithmetic, buckets or RANGE frames yet), so each query's
SQL is a template whose time literals, buckets and frames are written per engine.

Every answer is checked against DuckDB's before timing (whole answers as multisets of rows,
floats to 1e-9 relative); a peer that differs or fails is left out of that query, with the
reason.  A query hfq refuses (its SQL dialect is being extended) is kept: DuckDB and polars
are still timed, and the refusal is listed.
"""

from __future__ import annotations

import math
import os
import shutil
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

import hfq
from harness import Answer, Bench, measure
from hfq.ingest.taq import load_taq
from hfq.ingest.taq_synth import nyse_files
from scenarios.queries import differs, normal

col = pl.col
NS = 1_000_000_000
MIN = 60 * NS


@dataclass(frozen=True)
class Q:
    """One question: a SQL template (``{...}``: symbols and the per-engine time forms of
    :func:`forms`) and its polars formulation ``polars(frames, params)``; ``selective``: it
    reads a few symbols (the issue's >= 5x polars target)."""

    id: str
    category: str
    sql: str
    polars: Callable[[Callable[[str], pl.LazyFrame], dict], Any]
    selective: bool = False


def forms(engine: str) -> dict[str, str]:
    """Time literals, buckets, hours and frames in ``engine``'s SQL."""
    def lit(h: int, m: int = 0) -> str:
        return f"TIME '{h:02d}:{m:02d}:00'" if engine == "hfq" else str((h * 60 + m) * MIN)
    out = {f"t{h:02d}{m:02d}": lit(h, m) for h in range(4, 21) for m in (0, 5, 10, 30)}
    if engine == "hfq":
        out.update(b10="time_bucket(INTERVAL '10 minutes', time)", hour="hour(time)",
                   r5m="INTERVAL 5 MINUTE")
    else:
        out.update(b10=f"(time // {10 * MIN} * {10 * MIN})", hour=f"(time // {60 * MIN})",
                   r5m=str(5 * MIN))
    return out


def tns(h: int, m: int = 0) -> pl.Expr:
    return pl.lit((h * 60 + m) * MIN).cast(pl.Time)


def i64(c: str) -> pl.Expr:
    return col(c).cast(pl.Int64)


def b10() -> pl.Expr:
    return (i64("time") // (10 * MIN) * (10 * MIN)).cast(pl.Time)


def hour() -> pl.Expr:
    return (i64("time") // (60 * MIN))


def spread() -> pl.Expr:
    return col("ofr") - col("bid")


def vwap() -> pl.Expr:
    return (col("price") * col("size")).sum() / col("size").sum()


def one(p: dict, key: str = "sym") -> pl.Expr:
    return col("symbol") == p[key]


def among(p: dict, key: str) -> pl.Expr:
    return col("symbol").is_in(p[key])


EXES = ("N", "P", "Q", "Z", "D")


def _pivot_sql(value: str, agg: str, key: str = "ex", keys: tuple[str, ...] = EXES) -> str:
    return ", ".join(f"{agg}(CASE WHEN {key} = '{k}' THEN {value} END) AS {key}_{k}"
                     for k in keys)


def _pivot_pl(value: pl.Expr, agg: str, key: str = "ex", keys: tuple[str, ...] = EXES
              ) -> list[pl.Expr]:
    """SQL's CASE pivot: an aggregate of no rows is null (polars' sum of none is 0)."""
    return [pl.when((col(key) == k).any()).then(getattr(value.filter(col(key) == k), agg)())
            .alias(f"{key}_{k}") for k in keys]


def _asof(f: Callable[[str], pl.LazyFrame], trades: pl.LazyFrame) -> pl.LazyFrame:
    quotes = f("quotes").select("symbol", qt=col("time"), qbid=col("bid"), qofr=col("ofr"))
    return trades.join_asof(quotes, left_on="time", right_on="qt", by="symbol",
                            strategy="backward", check_sortedness=False)


_RUNS = ("SELECT symbol, count(*) AS runs FROM (SELECT symbol, price, lag(price) OVER "
         "(PARTITION BY symbol ORDER BY time, seq) AS prev FROM trades WHERE {where}) r "
         "WHERE prev IS NULL OR prev <> price GROUP BY symbol")
_ASOF = ("SELECT t.symbol, t.time, t.price, t.size, q.bid, q.ofr FROM trades t ASOF JOIN "
         "quotes q ON t.symbol = q.symbol AND t.time >= q.time WHERE {where}")


def _runs_pl(f: Callable[[str], pl.LazyFrame], where: pl.Expr) -> pl.LazyFrame:
    t = f("trades").filter(where).sort("symbol", "time", "seq")
    prev = col("price").shift(1).over("symbol")
    return t.filter(prev.is_null() | (prev != col("price"))).group_by("symbol").agg(
        runs=pl.len())


QUERIES: list[Q] = [
    # -- point and range filters ------------------------------------------------------------
    Q("q_sym_stats", "point", "SELECT count(*) AS n, avg(ofr - bid) AS s, max(bid) AS hi "
      "FROM quotes WHERE symbol = '{sym}'",
      lambda f, p: f("quotes").filter(one(p)).select(n=pl.len(), s=spread().mean(),
                                                     hi=col("bid").max()), True),
    Q("q_top_stats", "point", "SELECT count(*) AS n, avg(ofr - bid) AS s, max(bid) AS hi "
      "FROM quotes WHERE symbol = '{top}'",
      lambda f, p: f("quotes").filter(one(p, "top")).select(n=pl.len(), s=spread().mean(),
                                                            hi=col("bid").max()), True),
    Q("q_sym_rows", "point", "SELECT time, bid, ofr, bidsiz, ofrsiz FROM quotes "
      "WHERE symbol = '{sym}'",
      lambda f, p: f("quotes").filter(one(p)).select("time", "bid", "ofr", "bidsiz",
                                                     "ofrsiz"), True),
    Q("q_top_window", "range", "SELECT time, bid, ofr FROM quotes WHERE symbol = '{top}' "
      "AND time >= {t1000} AND time < {t1005}",
      lambda f, p: f("quotes").filter(one(p, "top") & (col("time") >= tns(10))
                                      & (col("time") < tns(10, 5))).select("time", "bid",
                                                                           "ofr"), True),
    Q("q_minute_by_ex", "range", "SELECT ex, count(*) AS n, avg(bidsiz) AS b FROM quotes "
      "WHERE time >= {t1000} AND time < {t1005} GROUP BY ex",
      lambda f, p: f("quotes").filter((col("time") >= tns(10)) & (col("time") < tns(10, 5)))
      .group_by("ex").agg(n=pl.len(), b=col("bidsiz").mean())),
    Q("t_sym_vwap", "point", "SELECT sum(price * size) / sum(size) AS vwap, sum(size) AS v, "
      "count(*) AS n FROM trades WHERE symbol = '{sym}'",
      lambda f, p: f("trades").filter(one(p)).select(vwap=vwap(), v=i64("size").sum(),
                                                     n=pl.len()), True),
    Q("t_top_rows", "point", "SELECT time, price, size, ex FROM trades WHERE symbol = '{top}'",
      lambda f, p: f("trades").filter(one(p, "top")).select("time", "price", "size", "ex"),
      True),
    Q("q_bid_range", "range", "SELECT count(*) AS n, avg(ofr) AS a FROM quotes "
      "WHERE bid BETWEEN 20 AND 25 AND bidsiz >= 500",
      lambda f, p: f("quotes").filter(col("bid").is_between(20, 25) & (col("bidsiz") >= 500))
      .select(n=pl.len(), a=col("ofr").mean())),
    Q("t_block_trades", "range", "SELECT count(*) AS n, sum(size) AS v FROM trades "
      "WHERE size >= 2000",
      lambda f, p: f("trades").filter(col("size") >= 2000).select(
          n=pl.len(), v=pl.when(pl.len() > 0).then(i64("size").sum()))),
    Q("q_last_quote", "point", "SELECT time, bid, ofr FROM quotes WHERE symbol = '{sym}' "
      "ORDER BY time DESC, seq DESC LIMIT 1",
      lambda f, p: f("quotes").filter(one(p)).sort("time", "seq", descending=True).head(1)
      .select("time", "bid", "ofr"), True),
    Q("t_open_close", "point", "SELECT arg_min(price, time) AS open, arg_max(price, time) AS "
      "close, min(price) AS lo, max(price) AS hi FROM trades WHERE symbol = '{top}'",
      lambda f, p: f("trades").filter(one(p, "top")).select(
          open=col("price").sort_by("time").first(), close=col("price").sort_by("time").last(),
          lo=col("price").min(), hi=col("price").max()), True),
    Q("t_trf_top10", "range", "SELECT symbol, count(*) AS n FROM trades WHERE ex = 'D' "
      "GROUP BY symbol ORDER BY n DESC, symbol LIMIT 10",
      lambda f, p: f("trades").filter(col("ex") == "D").group_by(
          symbol=col("symbol").cast(pl.String)).agg(n=pl.len())
      .sort("n", "symbol", descending=[True, False]).head(10)),
    Q("q_sym_afternoon", "range", "SELECT count(*) AS n, min(bid) AS lo, max(ofr) AS hi FROM "
      "quotes WHERE symbol = '{sym}' AND time >= {t1200} AND time < {t1600}",
      lambda f, p: f("quotes").filter(one(p) & (col("time") >= tns(12))
                                      & (col("time") < tns(16)))
      .select(n=pl.len(), lo=col("bid").min(), hi=col("ofr").max()), True),
    # -- 50- and 1,000-symbol lists ------------------------------------------------------------
    Q("q_50_stats", "list50", "SELECT symbol, count(*) AS n, avg(ofr - bid) AS s FROM quotes "
      "WHERE symbol IN ({syms50}) GROUP BY symbol",
      lambda f, p: f("quotes").filter(among(p, "syms50")).group_by("symbol")
      .agg(n=pl.len(), s=spread().mean()), True),
    Q("t_50_vwap", "list50", "SELECT symbol, sum(price * size) / sum(size) AS vwap FROM "
      "trades WHERE symbol IN ({syms50}) GROUP BY symbol",
      lambda f, p: f("trades").filter(among(p, "syms50")).group_by("symbol")
      .agg(vwap=vwap()), True),
    Q("t_50_hour_rows", "list50", "SELECT symbol, time, price, size FROM trades WHERE symbol "
      "IN ({syms50}) AND time >= {t1000} AND time < {t1100}",
      lambda f, p: f("trades").filter(among(p, "syms50") & (col("time") >= tns(10))
                                      & (col("time") < tns(11)))
      .select("symbol", "time", "price", "size"), True),
    Q("q_50_max_spread", "list50", "SELECT symbol, max(ofr - bid) AS s FROM quotes WHERE "
      "symbol IN ({syms50}) AND bid > 0 GROUP BY symbol",
      lambda f, p: f("quotes").filter(among(p, "syms50") & (col("bid") > 0))
      .group_by("symbol").agg(s=spread().max()), True),
    Q("t_50_volume_ex", "list50", "SELECT symbol, ex, sum(size) AS v FROM trades WHERE "
      "symbol IN ({syms50}) GROUP BY symbol, ex",
      lambda f, p: f("trades").filter(among(p, "syms50")).group_by("symbol", "ex")
      .agg(v=i64("size").sum()), True),
    Q("q_1000_stats", "list1000", "SELECT symbol, count(*) AS n, avg(bidsiz) AS b FROM quotes "
      "WHERE symbol IN ({syms1000}) GROUP BY symbol",
      lambda f, p: f("quotes").filter(among(p, "syms1000")).group_by("symbol")
      .agg(n=pl.len(), b=col("bidsiz").mean()), True),
    Q("t_1000_vwap", "list1000", "SELECT symbol, sum(price * size) / sum(size) AS vwap FROM "
      "trades WHERE symbol IN ({syms1000}) GROUP BY symbol",
      lambda f, p: f("trades").filter(among(p, "syms1000")).group_by("symbol")
      .agg(vwap=vwap()), True),
    Q("t_1000_hilo", "list1000", "SELECT symbol, min(price) AS lo, max(price) AS hi FROM "
      "trades WHERE symbol IN ({syms1000}) GROUP BY symbol",
      lambda f, p: f("trades").filter(among(p, "syms1000")).group_by("symbol")
      .agg(lo=col("price").min(), hi=col("price").max()), True),
    # -- per-symbol aggregates -------------------------------------------------------------------
    Q("t_vwap_all", "aggregate", "SELECT symbol, sum(price * size) / sum(size) AS vwap, "
      "sum(size) AS v FROM trades GROUP BY symbol",
      lambda f, p: f("trades").group_by("symbol").agg(vwap=vwap(), v=i64("size").sum())),
    Q("q_spread_all", "aggregate", "SELECT symbol, avg(ofr - bid) AS s, count(*) AS n FROM "
      "quotes WHERE bid > 0 AND ofr > bid GROUP BY symbol",
      lambda f, p: f("quotes").filter((col("bid") > 0) & (col("ofr") > col("bid")))
      .group_by("symbol").agg(s=spread().mean(), n=pl.len())),
    Q("t_ohlc_all", "aggregate", "SELECT symbol, arg_min(price, time) AS o, max(price) AS h, "
      "min(price) AS l, arg_max(price, time) AS c FROM trades GROUP BY symbol",
      lambda f, p: f("trades").group_by("symbol").agg(
          o=col("price").sort_by("time").first(), h=col("price").max(),
          l=col("price").min(), c=col("price").sort_by("time").last())),
    Q("q_count_top20", "aggregate", "SELECT symbol, count(*) AS n FROM quotes GROUP BY symbol "
      "ORDER BY n DESC, symbol LIMIT 20",
      lambda f, p: f("quotes").group_by(symbol=col("symbol").cast(pl.String)).agg(n=pl.len())
      .sort("n", "symbol", descending=[True, False]).head(20)),
    Q("t_volume_top10", "aggregate", "SELECT symbol, sum(size) AS v FROM trades GROUP BY "
      "symbol ORDER BY v DESC, symbol LIMIT 10",
      lambda f, p: f("trades").group_by(symbol=col("symbol").cast(pl.String))
      .agg(v=i64("size").sum()).sort("v", "symbol", descending=[True, False]).head(10)),
    Q("q_size_stats", "aggregate", "SELECT symbol, avg(bidsiz) AS a, min(bidsiz) AS lo, "
      "max(ofrsiz) AS hi FROM quotes GROUP BY symbol",
      lambda f, p: f("quotes").group_by("symbol").agg(a=col("bidsiz").mean(),
                                                      lo=col("bidsiz").min(),
                                                      hi=col("ofrsiz").max())),
    Q("t_by_cond", "aggregate", "SELECT cond, count(*) AS n, avg(size) AS s FROM trades "
      "GROUP BY cond",
      lambda f, p: f("trades").group_by("cond").agg(n=pl.len(), s=col("size").mean())),
    Q("q_crossed_top10", "aggregate", "SELECT symbol, count(*) AS n FROM quotes WHERE "
      "ofr < bid GROUP BY symbol ORDER BY n DESC, symbol LIMIT 10",
      lambda f, p: f("quotes").filter(col("ofr") < col("bid"))
      .group_by(symbol=col("symbol").cast(pl.String)).agg(n=pl.len())
      .sort("n", "symbol", descending=[True, False]).head(10)),
    Q("t_notional_top10", "aggregate", "SELECT symbol, time, price * size AS notional FROM "
      "trades ORDER BY notional DESC, symbol, time LIMIT 10",
      lambda f, p: f("trades").select(symbol=col("symbol").cast(pl.String), time=col("time"),
                                      notional=col("price") * col("size"))
      .sort("notional", "symbol", "time", descending=[True, False, False]).head(10)),
    Q("q_50_distinct_ex", "list50", "SELECT symbol, count(DISTINCT ex) AS e FROM quotes "
      "WHERE symbol IN ({syms50}) GROUP BY symbol",
      lambda f, p: f("quotes").filter(among(p, "syms50")).group_by("symbol")
      .agg(e=col("ex").n_unique()), True),
    # -- 10-minute buckets ---------------------------------------------------------------------
    Q("t_top_bucket_vwap", "bucket", "SELECT {b10} AS b, sum(price * size) / sum(size) AS "
      "vwap, count(*) AS n FROM trades WHERE symbol = '{top}' GROUP BY b",
      lambda f, p: f("trades").filter(one(p, "top")).group_by(b=b10())
      .agg(vwap=vwap(), n=pl.len()), True),
    Q("t_bucket_volume", "bucket", "SELECT {b10} AS b, sum(size) AS v FROM trades GROUP BY b",
      lambda f, p: f("trades").group_by(b=b10()).agg(v=i64("size").sum())),
    Q("q_50_bucket_spread", "bucket", "SELECT symbol, {b10} AS b, avg(ofr - bid) AS s FROM "
      "quotes WHERE symbol IN ({syms50}) GROUP BY symbol, b",
      lambda f, p: f("quotes").filter(among(p, "syms50")).group_by("symbol", b=b10())
      .agg(s=spread().mean()), True),
    Q("q_bucket_count", "bucket", "SELECT {b10} AS b, count(*) AS n, avg(ofr - bid) AS s "
      "FROM quotes WHERE bid > 0 GROUP BY b",
      lambda f, p: f("quotes").filter(col("bid") > 0).group_by(b=b10())
      .agg(n=pl.len(), s=spread().mean())),
    Q("t_top_bucket_ohlc", "bucket", "SELECT {b10} AS b, arg_min(price, time) AS o, "
      "max(price) AS h, min(price) AS l, arg_max(price, time) AS c FROM trades "
      "WHERE symbol = '{top}' GROUP BY b",
      lambda f, p: f("trades").filter(one(p, "top")).group_by(b=b10()).agg(
          o=col("price").sort_by("time").first(), h=col("price").max(), l=col("price").min(),
          c=col("price").sort_by("time").last()), True),
    # -- pivots ----------------------------------------------------------------------------------
    Q("t_50_pivot_ex_volume", "pivot", "SELECT symbol, " + _pivot_sql("size", "sum") +
      " FROM trades WHERE symbol IN ({syms50}) GROUP BY symbol",
      lambda f, p: f("trades").filter(among(p, "syms50")).group_by("symbol")
      .agg(_pivot_pl(i64("size"), "sum")), True),
    Q("q_50_pivot_ex_count", "pivot", "SELECT symbol, " + _pivot_sql("1", "count") +
      " FROM quotes WHERE symbol IN ({syms50}) GROUP BY symbol",
      lambda f, p: f("quotes").filter(among(p, "syms50")).group_by("symbol")
      .agg([(col("ex") == k).sum().cast(pl.Int64).alias(f"ex_{k}") for k in EXES]), True),
    Q("t_pivot_ex_hour", "pivot", "SELECT {hour} AS h, " + _pivot_sql("1", "count") +
      " FROM trades GROUP BY h",
      lambda f, p: f("trades").group_by(h=hour())
      .agg([(col("ex") == k).sum().cast(pl.Int64).alias(f"ex_{k}") for k in EXES])),
    Q("t_pivot_sym_hour_vwap", "pivot", "SELECT {hour} AS h, {pivot10} FROM trades WHERE "
      "symbol IN ({syms10}) GROUP BY h",
      lambda f, p: f("trades").filter(among(p, "syms10")).group_by(h=hour()).agg(
          [((col("price") * col("size")).filter(one(p, f"s{i}")).sum()
            / col("size").filter(one(p, f"s{i}")).sum()).alias(f"v{i}")
           for i in range(10)]), True),
    # -- moving windows --------------------------------------------------------------------------
    Q("t_top_mavg20", "window", "SELECT time, seq, avg(price) OVER (ORDER BY time, seq ROWS "
      "BETWEEN 19 PRECEDING AND CURRENT ROW) AS ma FROM trades WHERE symbol = '{top}'",
      lambda f, p: f("trades").filter(one(p, "top")).sort("time", "seq")
      .select("time", "seq", ma=col("price").rolling_mean(20, min_samples=1)), True),
    Q("q_sym_mavg_mid", "window", "SELECT max(ma) AS hi, min(ma) AS lo FROM (SELECT "
      "avg((bid + ofr) / 2) OVER (ORDER BY time, seq ROWS BETWEEN 99 PRECEDING AND CURRENT "
      "ROW) AS ma FROM quotes WHERE symbol = '{top}') w",
      lambda f, p: f("quotes").filter(one(p, "top")).sort("time", "seq")
      .select(ma=((col("bid") + col("ofr")) / 2).rolling_mean(100, min_samples=1))
      .select(hi=col("ma").max(), lo=col("ma").min()), True),
    Q("t_50_mavg10", "window", "SELECT symbol, avg(ma) AS a FROM (SELECT symbol, avg(price) "
      "OVER (PARTITION BY symbol ORDER BY time, seq ROWS BETWEEN 9 PRECEDING AND CURRENT ROW)"
      " AS ma FROM trades WHERE symbol IN ({syms50})) w GROUP BY symbol",
      lambda f, p: f("trades").filter(among(p, "syms50")).sort("symbol", "time", "seq")
      .select("symbol", ma=col("price").rolling_mean(10, min_samples=1).over("symbol"))
      .group_by("symbol").agg(a=col("ma").mean()), True),
    Q("t_top_mmax5m", "window", "SELECT avg(mx) AS a, count(*) AS n FROM (SELECT max(price) "
      "OVER (ORDER BY time RANGE BETWEEN {r5m} PRECEDING AND CURRENT ROW) AS mx FROM trades "
      "WHERE symbol = '{top}') w",
      lambda f, p: f("trades").filter(one(p, "top")).sort("time")
      .select(mx=col("price").rolling_max_by(i64("time"), f"{5 * MIN + 1}i", closed="right"))
      .select(a=col("mx").mean(), n=pl.len()), True),
    Q("q_top_msum10", "window", "SELECT max(s) AS hi, sum(s) AS t FROM (SELECT sum(bidsiz) "
      "OVER (ORDER BY time, seq ROWS BETWEEN 9 PRECEDING AND CURRENT ROW) AS s FROM quotes "
      "WHERE symbol = '{top}') w",
      lambda f, p: f("quotes").filter(one(p, "top")).sort("time", "seq")
      .select(s=i64("bidsiz").rolling_sum(10, min_samples=1))
      .select(hi=col("s").max(), t=col("s").sum()), True),
    Q("t_all_mavg5", "window", "SELECT symbol, max(ma) AS m FROM (SELECT symbol, avg(price) "
      "OVER (PARTITION BY symbol ORDER BY time, seq ROWS BETWEEN 4 PRECEDING AND CURRENT ROW)"
      " AS ma FROM trades) w GROUP BY symbol",
      lambda f, p: f("trades").sort("symbol", "time", "seq")
      .select("symbol", ma=col("price").rolling_mean(5, min_samples=1).over("symbol"))
      .group_by("symbol").agg(m=col("ma").max())),
    # -- running sums and VWAPs ------------------------------------------------------------------
    Q("t_top_cumvol", "running", "SELECT time, seq, sum(size) OVER (ORDER BY time, seq ROWS "
      "UNBOUNDED PRECEDING) AS v FROM trades WHERE symbol = '{top}'",
      lambda f, p: f("trades").filter(one(p, "top")).sort("time", "seq")
      .select("time", "seq", v=i64("size").cum_sum()), True),
    Q("t_top_runvwap", "running", "SELECT time, seq, sum(price * size) OVER w / sum(size) "
      "OVER w AS vwap FROM trades WHERE symbol = '{top}' WINDOW w AS (ORDER BY time, seq ROWS "
      "UNBOUNDED PRECEDING)",
      lambda f, p: f("trades").filter(one(p, "top")).sort("time", "seq")
      .select("time", "seq", vwap=(col("price") * col("size")).cum_sum()
              / i64("size").cum_sum()), True),
    Q("t_50_runvwap_max", "running", "SELECT symbol, max(vwap) AS hi, min(vwap) AS lo FROM "
      "(SELECT symbol, sum(price * size) OVER w / sum(size) OVER w AS vwap FROM trades WHERE "
      "symbol IN ({syms50}) WINDOW w AS (PARTITION BY symbol ORDER BY time, seq ROWS "
      "UNBOUNDED PRECEDING)) r GROUP BY symbol",
      lambda f, p: f("trades").filter(among(p, "syms50")).sort("symbol", "time", "seq")
      .select("symbol", vwap=((col("price") * col("size")).cum_sum()
                              / i64("size").cum_sum()).over("symbol"))
      .group_by("symbol").agg(hi=col("vwap").max(), lo=col("vwap").min()), True),
    Q("t_all_cumvol_half", "running", "SELECT symbol, min(time) AS t FROM (SELECT symbol, "
      "time, sum(size) OVER (PARTITION BY symbol ORDER BY time, seq ROWS UNBOUNDED PRECEDING)"
      " AS c, sum(size) OVER (PARTITION BY symbol) AS total FROM trades) r WHERE 2 * c >= "
      "total GROUP BY symbol",
      lambda f, p: f("trades").sort("symbol", "time", "seq").select(
          "symbol", "time", c=i64("size").cum_sum().over("symbol"),
          total=i64("size").sum().over("symbol"))
      .filter(2 * col("c") >= col("total")).group_by("symbol").agg(t=col("time").min())),
    Q("q_top_cumcount_hour", "running", "SELECT {hour} AS h, max(c) AS c FROM (SELECT time, "
      "count(*) OVER (ORDER BY time, seq ROWS UNBOUNDED PRECEDING) AS c FROM quotes WHERE "
      "symbol = '{top}') r GROUP BY h",
      lambda f, p: f("quotes").filter(one(p, "top")).sort("time", "seq")
      .select("time", c=pl.int_range(1, pl.len() + 1)).group_by(h=hour())
      .agg(c=col("c").max()), True),
    # -- runs of equal prices --------------------------------------------------------------------
    Q("t_top_runs", "runs", _RUNS.replace("{where}", "symbol = '{top}'"),
      lambda f, p: _runs_pl(f, one(p, "top")), True),
    Q("t_50_runs", "runs", _RUNS.replace("{where}", "symbol IN ({syms50})"),
      lambda f, p: _runs_pl(f, among(p, "syms50")), True),
    Q("t_all_runs", "runs", _RUNS.replace("{where}", "size > 0"),
      lambda f, p: _runs_pl(f, col("size") > 0)),
    Q("q_top_bid_runs", "runs", "SELECT count(*) AS runs FROM (SELECT bid, lag(bid) OVER "
      "(ORDER BY time, seq) AS prev FROM quotes WHERE symbol = '{top}') r WHERE prev IS NULL "
      "OR prev <> bid",
      lambda f, p: f("quotes").filter(one(p, "top")).sort("time", "seq")
      .filter(col("bid").shift(1).is_null() | (col("bid").shift(1) != col("bid")))
      .select(runs=pl.len()), True),
    # -- medians ---------------------------------------------------------------------------------
    Q("t_50_median_price", "median", "SELECT symbol, median(price) AS m FROM trades WHERE "
      "symbol IN ({syms50}) GROUP BY symbol",
      lambda f, p: f("trades").filter(among(p, "syms50")).group_by("symbol")
      .agg(m=col("price").median()), True),
    Q("q_median_spread_all", "median", "SELECT symbol, median(ofr - bid) AS m FROM quotes "
      "WHERE bid > 0 GROUP BY symbol",
      lambda f, p: f("quotes").filter(col("bid") > 0).group_by("symbol")
      .agg(m=spread().median())),
    Q("t_median_size_ex", "median", "SELECT ex, median(size) AS m FROM trades GROUP BY ex",
      lambda f, p: f("trades").group_by("ex").agg(m=col("size").median())),
    Q("q_top_median_bidsiz", "median", "SELECT median(bidsiz) AS m, quantile_cont(ofrsiz, "
      "0.9) AS q FROM quotes WHERE symbol = '{top}'",
      lambda f, p: f("quotes").filter(one(p, "top")).select(
          m=col("bidsiz").median(), q=col("ofrsiz").quantile(0.9, "linear")), True),
    # -- asof joins of trades to quotes ----------------------------------------------------------
    Q("asof_1", "asof", _ASOF.replace("{where}", "t.symbol = '{top}'"),
      lambda f, p: _asof(f, f("trades").filter(one(p, "top")))
      .select("symbol", "time", "price", "size", bid=col("qbid"), ofr=col("qofr")), True),
    Q("asof_50", "asof", _ASOF.replace("{where}", "t.symbol IN ({syms50})"),
      lambda f, p: _asof(f, f("trades").filter(among(p, "syms50")))
      .select("symbol", "time", "price", "size", bid=col("qbid"), ofr=col("qofr")), True),
    Q("asof_all", "asof", _ASOF.replace("{where}", "t.size > 0"),
      lambda f, p: _asof(f, f("trades").filter(col("size") > 0))
      .select("symbol", "time", "price", "size", bid=col("qbid"), ofr=col("qofr"))),
    Q("asof_50_effective", "asof", "SELECT t.symbol, avg(abs(t.price - (q.bid + q.ofr) / 2))"
      " AS e, count(*) AS n FROM trades t ASOF JOIN quotes q ON t.symbol = q.symbol AND "
      "t.time >= q.time WHERE t.symbol IN ({syms50}) AND q.bid > 0 GROUP BY t.symbol",
      lambda f, p: _asof(f, f("trades").filter(among(p, "syms50"))).filter(col("qbid") > 0)
      .group_by("symbol").agg(e=(col("price") - (col("qbid") + col("qofr")) / 2).abs().mean(),
                              n=pl.len()), True),
    Q("asof_all_effective", "asof", "SELECT t.symbol, avg(abs(t.price - (q.bid + q.ofr) / 2))"
      " AS e FROM trades t ASOF JOIN quotes q ON t.symbol = q.symbol AND t.time >= q.time "
      "WHERE q.bid > 0 GROUP BY t.symbol",
      lambda f, p: _asof(f, f("trades")).filter(col("qbid") > 0).group_by("symbol")
      .agg(e=(col("price") - (col("qbid") + col("qofr")) / 2).abs().mean())),
    Q("t_top_max_gap", "window", "SELECT max(gap) AS g FROM (SELECT time - lag(time) OVER "
      "(ORDER BY time, seq) AS gap FROM trades WHERE symbol = '{top}') r",
      lambda f, p: f("trades").filter(one(p, "top")).sort("time", "seq")
      .select(g=(i64("time") - i64("time").shift(1)).max()), True),
]
"""The questions: >= 60, every category of KX's NYSE TAQ benchmark."""


# -- data --------------------------------------------------------------------------------------
def taq_data(bench: Bench) -> dict[str, Any]:
    """The day's files (generated once), the peers' in-memory tables, hfq's database loaded
    from the files, and the query parameters."""
    if "taq" in bench.cache:
        return bench.cache["taq"]
    root = os.path.join(bench.work, "taq")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    quotes = bench.rows
    start = time.perf_counter()
    bbo, trade, chunks = nyse_files(root, "2026-04-01", quotes=quotes,
                                    trades=int(quotes * 0.15), seed=29, keep=True)
    bench.log(f"  taq: {quotes:,} quotes written as {os.path.getsize(bbo) / 1e6:,.0f} MB of "
              f"EQY_US_ALL_BBO in {time.perf_counter() - start:.0f} s")
    q = pa.concat_tables([c[0] for c in chunks])
    t = pa.concat_tables([c[1] for c in chunks])
    del chunks
    db = hfq.connect(os.path.join(root, "db"))
    buckets = max(4, min(64, quotes // 300_000))
    loaded = {}
    for name, schema, path in (("quotes", hfq.schemas.NYSE_QUOTES, bbo),
                               ("trades", hfq.schemas.NYSE_TRADES, trade)):
        table = db.create_table(name, schema, sort_by=("symbol", "time"),
                                partition_by=hfq.Hash("symbol", buckets))
        loaded[name] = load_taq(table, path)
        bench.log(f"  taq: load_taq {name}: {loaded[name].rows:,} rows in "
                  f"{loaded[name].seconds:.1f} s ({loaded[name].rows_per_s / 1e6:.2f} M rows/s)")
    params, _ = symbol_params(q)
    data = {"root": root, "files": (bbo, trade), "quotes": q, "trades": t, "db": db,
            "params": params, "loaded": loaded}
    bench.cache["taq"] = data
    return data


def duck_connection(data: dict[str, Any]):
    """DuckDB in memory, 2 threads, tables sorted by (symbol, time), times as BIGINT ns, its
    ASOF JOIN always its ASOF operator: it estimates a one-symbol filter at ~58 rows and, under
    ``asof_loop_join_threshold`` (64), plans a nested-loop join instead, which took 10 s where
    the operator takes 0.02 s (asof_1 at 1 M quotes)."""
    import duckdb
    con = duckdb.connect()
    con.execute("SET threads = 2")
    con.execute("SET asof_loop_join_threshold = 0")
    for name in ("quotes", "trades"):
        table = data[name]
        fields = [f for f in table.schema]
        arrays = [c.cast(pa.int64()) if pa.types.is_time(f.type) else c
                  for f, c in zip(fields, table.columns)]
        con.register(f"src_{name}", pa.Table.from_arrays(arrays, names=table.column_names))
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM src_{name} ORDER BY symbol, time")
        con.unregister(f"src_{name}")
    return con


def symbol_params(quotes: pa.Table) -> tuple[dict[str, Any], pl.DataFrame]:
    """The symbols the questions name, from the day's quotes ranked by activity (most quotes
    first, ties by name): the median symbol, the busiest, 10, 50 and 1,000 spread evenly over
    the ranking (``s0``..``s9`` the 10 one by one); and the ranking itself (symbol, len)."""
    counts = pl.from_arrow(quotes.select(["symbol"])).group_by("symbol").len().sort(
        "len", "symbol", descending=[True, False]).with_columns(pl.col("symbol")
                                                                .cast(pl.String))
    ranked = counts["symbol"].to_list()
    n = len(ranked)
    pick = lambda k: [ranked[int(i)] for i in np.linspace(0, n - 1, min(k, n))]  # noqa: E731
    params: dict[str, Any] = {"sym": ranked[n // 2], "top": ranked[0], "syms50": pick(50),
                              "syms1000": pick(1000), "syms10": pick(10)}
    params.update({f"s{i}": s for i, s in enumerate(params["syms10"])})
    return params, counts


def texts(spec: Q, params: dict) -> dict[str, str]:
    """The query's SQL for hfq and for DuckDB."""
    syms = lambda k: ", ".join(f"'{s}'" for s in params[k])  # noqa: E731
    pivot10 = ", ".join(f"sum(CASE WHEN symbol = '{s}' THEN price * size END) / "
                        f"sum(CASE WHEN symbol = '{s}' THEN size END) AS v{i}"
                        for i, s in enumerate(params["syms10"]))
    out = {}
    for engine in ("hfq", "duck"):
        values = {**forms(engine), "sym": params["sym"], "top": params["top"],
                  "syms50": syms("syms50"), "syms1000": syms("syms1000"),
                  "syms10": syms("syms10"), "pivot10": pivot10}
        out[engine] = spec.sql.format(**values)
    return out


# -- the scenario ------------------------------------------------------------------------------
HFQ, DUCK, POLARS = "hfq db.sql", "DuckDB (in memory, sorted, 2 threads)", "polars (in memory)"


def scenario_taq(bench: Bench) -> None:
    """Every query of :data:`QUERIES` through hfq, DuckDB and polars, answers checked against
    DuckDB's, then timed; the report lists per-query ratios, geometric means, the targets of
    issue 29 and every refusal."""
    data = taq_data(bench)
    con = duck_connection(data)
    lazy = {"quotes": pl.from_arrow(data["quotes"]).lazy(),
            "trades": pl.from_arrow(data["trades"]).lazy()}
    rows = []
    for spec in QUERIES:
        if bench.quick and spec.category in ("median",) and spec.id != "t_median_size_ex":
            continue
        rows.append(_one(bench, spec, data, con, lazy))
    con.close()
    bench.summary[bench.name("taq")] = summary(rows, data)
    for line in bench.summary[bench.name("taq")]:
        bench.log(line)


def _one(bench: Bench, spec: Q, data: dict, con, lazy: dict) -> dict:
    sql = texts(spec, data["params"])
    db = data["db"]
    answers: dict[str, pl.DataFrame] = {}

    def checked(name: str, run: Callable[[], Any]) -> Answer:
        def go(full: bool) -> tuple[int, Any]:
            out = run()
            if full:
                answers[name] = normal(out)
            return (out.num_rows if hasattr(out, "num_rows") else len(out)), None
        return Answer(go)

    contenders = {HFQ: checked(HFQ, lambda: db.sql(sql["hfq"]).collect()),
                  DUCK: checked(DUCK, lambda: con.sql(sql["duck"]).pl()),
                  POLARS: checked(POLARS, lambda: spec.polars(lambda n: lazy[n],
                                                              data["params"]).collect())}
    left_out: dict[str, str] = {}
    for name in [DUCK, HFQ, POLARS]:
        try:
            contenders[name].run(True)
        except Exception as exc:   # noqa: BLE001 -- a refusal or failure is reported
            if name == DUCK:
                raise
            first = (str(exc).splitlines() or [""])[0][:160]
            left_out[name] = f"{'refused' if name == HFQ else 'fails'}: " \
                f"{type(exc).__name__}: {first}"
            if name == HFQ and not isinstance(exc, hfq.errors.HfqError):
                left_out[name] += " (not an HfqError: " + \
                    traceback.format_exc().splitlines()[-1][:80] + ")"
            del contenders[name]
            continue
        if name != DUCK:
            problem = differs(_aligned(answers[name], answers[DUCK]), answers[DUCK])
            if problem is not None:
                left_out[name] = f"WRONG ANSWER: {problem}"
                del contenders[name]
    results = measure(bench, f"taq: {spec.id}", contenders, same_answer=False)
    for name, why in left_out.items():
        bench.log(f"    taq {spec.id}: {name} left out: {why}")
    return {"spec": spec, "results": {r.contender: r for r in results}, "left_out": left_out,
            "rows": answers[DUCK].height}


def _aligned(got: pl.DataFrame, want: pl.DataFrame) -> pl.DataFrame:
    """``got`` with its columns named as ``want``'s when only the names differ (polars and
    the engines may name an expression differently)."""
    if got.width == want.width and set(got.columns) != set(want.columns):
        return got.rename(dict(zip(got.columns, want.columns)))
    return got


def _geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def summary(rows: list[dict], data: dict) -> list[str]:
    loaded = data["loaded"]
    lines = ["", f"### taq: {len(rows)} queries over {data['quotes'].num_rows:,} quotes and "
             f"{data['trades'].num_rows:,} trades (provisional; seconds, median; ratio = peer "
             "/ hfq, above 1 hfq is faster)", "",
             f"load_taq: quotes {loaded['quotes'].rows_per_s / 1e6:.2f} M rows/s, trades "
             f"{loaded['trades'].rows_per_s / 1e6:.2f} M rows/s (files to committed table).", "",
             "| query | category | selective | rows | hfq | DuckDB | polars | vs DuckDB | "
             "vs polars | hfq left out |", "|---|---|---|---|---|---|---|---|---|---|"]
    vs_duck, vs_pol, sel_pol, below = [], [], [], []
    for r in rows:
        res = r["results"]
        cell = lambda n, res=res: f"{res[n].median:.4f}" if n in res else "--"  # noqa: E731
        rd = rp = None
        if HFQ in res:
            if DUCK in res:
                rd = res[DUCK].median / res[HFQ].median
                vs_duck.append(rd)
                if rd < 0.8:
                    below.append(f"{r['spec'].id} ({rd:.2f}x)")
            if POLARS in res:
                rp = res[POLARS].median / res[HFQ].median
                vs_pol.append(rp)
                if r["spec"].selective:
                    sel_pol.append((r["spec"].id, rp))
        lines.append(f"| {r['spec'].id} | {r['spec'].category} | "
                     f"{'yes' if r['spec'].selective else ''} | {r['rows']:,} | {cell(HFQ)} | "
                     f"{cell(DUCK)} | {cell(POLARS)} | "
                     f"{f'{rd:.2f}x' if rd else '--'} | {f'{rp:.2f}x' if rp else '--'} | "
                     f"{r['left_out'].get(HFQ, '')[:70]} |")
    ran = sum(1 for r in rows if HFQ in r["results"])
    lowest = ", ".join(f"{i} {x:.2f}x" for i, x in sorted(sel_pol, key=lambda z: z[1])[:5])
    lines += ["", f"- hfq answered {ran} of {len(rows)} queries (the rest refused or wrong: "
              "listed below).",
              f"- Geometric mean over those: **{_geomean(vs_duck):.2f}x DuckDB** (target >= 3x)"
              f", **{_geomean(vs_pol):.2f}x polars** (target >= 2x).",
              f"- Symbol-selective queries >= 5x polars: "
              f"{sum(1 for _, x in sel_pol if x >= 5)} of {len(sel_pol)} answered "
              f"(lowest: {lowest}).",
              f"- Below 0.8x DuckDB: {', '.join(below) or 'none'}."]
    asof = next((r for r in rows if r["spec"].id == "asof_50"), None)
    if asof is not None:
        res = asof["results"]
        if HFQ in res:
            lines.append(f"- asof of 50 symbols' trades: {res[DUCK].median / res[HFQ].median:.2f}"
                         f"x DuckDB (target >= 30x), "
                         f"{res[POLARS].median / res[HFQ].median if POLARS in res else 0:.2f}x "
                         "polars (target >= 5x; KDB-X's published 17x polars is the moonshot).")
        else:
            lines.append(f"- asof of 50 symbols' trades: hfq {asof['left_out'].get(HFQ)}; "
                         f"DuckDB {res[DUCK].median:.3f} s, polars "
                         f"{res[POLARS].median if POLARS in res else float('nan'):.3f} s.")
    lines += ["", "Left out (refused by hfq's SQL today, a peer failing, or a wrong answer):", ""]
    lines += [f"- {r['spec'].id}: {n} -- {why}" for r in rows for n, why in
              r["left_out"].items()]
    return lines
