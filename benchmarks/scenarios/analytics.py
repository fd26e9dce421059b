"""Analytics: spread by minute, minute bars written back, OLS -- hfq vs DuckDB, polars, pandas."""

from __future__ import annotations

import os
import shutil

import numpy as np

from harness import (
    Bench,
    clear_node_caches,
    cluster_data,
    evict,
    measure,
    mrows,
    session,
    target_line,
)

SPREAD_SQL = """
    SELECT hour(time) * 60 + minute(time) AS m, count(*) AS n,
           sum((ofr - bid) / (ofr + bid) * 2) AS s
    FROM quotes
    WHERE time BETWEEN TIME '09:30:00' AND TIME '15:59:59'
      AND ofr > bid AND bid > 0 AND ofr / bid < 1.2
    GROUP BY 1"""
BARS_SQL = """
    CREATE OR REPLACE TABLE bars AS
    SELECT symbol, date, time_bucket(INTERVAL 1 MINUTE, time) AS time, avg(bid) AS bid,
           avg(ofr) AS ofr, arg_min((bid + ofr) / 2, time) AS open, max((bid + ofr) / 2) AS high,
           min((bid + ofr) / 2) AS low, arg_max((bid + ofr) / 2, time) AS close,
           count(*) AS count
    FROM quotes GROUP BY ALL"""
OLS_SQL = """
    SELECT regr_intercept(y, x), regr_slope(y, x), count(*) FROM (
        SELECT ofr / bid - 1 AS y, (bidsiz + ofrsiz) * (ofr + bid) / 2 AS x FROM quotes
        WHERE ofr > bid AND bid > 0 AND ofr / bid < 1.2)"""


def ols_exprs():
    """The issue's regression: relative spread on quote size in dollars."""
    import polars as pl
    bid, ofr = pl.col("bid"), pl.col("ofr")
    y = ofr / bid - 1
    x = (pl.col("bidsiz") + pl.col("ofrsiz")) * (ofr + bid) / 2
    where = (ofr > bid) & (bid > 0) & (ofr / bid < 1.2)
    return y, x, where


def check_bars(stored, frame) -> None:
    """Every column of every bar hfq stored against polars on the source rows in their
    stored order ((symbol, time), ties in input order: open and close taken the same way);
    counts and keys exactly, prices to 1e-9."""
    import polars as pl
    mid = (pl.col("bid") + pl.col("ofr")) / 2
    minute = (pl.col("time").cast(pl.Int64) // 60_000_000_000 * 60_000_000_000).cast(pl.Time)
    want = (frame.lazy().with_row_index("_i").sort(pl.col("symbol").cast(pl.String), "time",
                                                    "_i")
            .group_by(pl.col("symbol").cast(pl.String), "date", minute.alias("time"),
                      maintain_order=True)
            .agg(pl.col("bid").mean(), pl.col("ofr").mean(), mid.first().alias("open"),
                 mid.max().alias("high"), mid.min().alias("low"), mid.last().alias("close"),
                 pl.len().alias("count")).collect())
    got = stored.with_columns(pl.col("symbol").cast(pl.String),
                              pl.col("time").cast(pl.Time)).sort("symbol", "date", "time")
    want = want.select(got.columns).sort("symbol", "date", "time")
    if got.height != want.height:
        raise AssertionError(f"analytics: hfq stored {got.height:,} bars, polars made "
                             f"{want.height:,}")
    for name in got.columns:
        a, b = got[name], want[name]
        same = a.cast(pl.Int64).equals(b.cast(pl.Int64)) if name == "count" else (
            np.allclose(a.to_numpy(), b.to_numpy(), rtol=1e-9, atol=0, equal_nan=True)
            if a.dtype.is_float() else a.equals(b))
        if not same:
            raise AssertionError(f"analytics: bar column {name!r} differs from polars")


def duck_file(bench: Bench, data) -> str:
    """The rows as a DuckDB database file, the table sorted by (symbol, time)."""
    import duckdb
    path = os.path.join(bench.work, "analytics", "quotes.duckdb")
    shutil.rmtree(os.path.dirname(path), ignore_errors=True)
    os.makedirs(os.path.dirname(path))
    con = duckdb.connect(path)
    con.execute("SET threads = 2")
    con.register("source", data.table)
    con.execute("CREATE TABLE quotes AS SELECT * FROM source ORDER BY symbol, time")
    con.close()
    return path


class DuckFile:
    """A read-only connection to the DuckDB file for the length of one measurement: DuckDB
    shares one database (and its buffer pool) between the connections to a file in a
    process, so it must be closed before a cold row opens the file afresh."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.con = None

    def __enter__(self):
        import duckdb
        self.con = duckdb.connect(self.path, read_only=True, config={"threads": 2})
        return self

    def __exit__(self, *exc) -> None:
        self.con.close()
        self.con = None


def scenario_analytics(bench: Bench) -> None:
    """Spread by minute, 1-minute bars (written back) and OLS over every row: hfq on one node
    with both CPUs vs DuckDB (2 threads; an in-memory table, and for spread and OLS also its
    own database file sorted by (symbol, time)), polars and pandas in this process on
    in-memory frames -- the same rows and cores for every contender, warm caches (hfq's
    servers hold the decoded partitions in memory, as the peers hold theirs); then spread
    cold (:func:`spread_cold`).  Each target is judged against the faster DuckDB layout."""
    import duckdb
    import polars as pl

    from hfq import analytics as ha
    data = cluster_data(bench)
    sess = session(bench)
    db = sess.connect(1, cpus=2)
    table = sess.table("quotes_2cpu", data, replicas=1)
    cores = sum(i.cpus for i in db.session.runtime().infos())
    con = duckdb.connect()
    con.execute("SET threads = 2")
    con.register("source", data.table)
    con.execute("CREATE TABLE quotes AS SELECT * FROM source")
    con.unregister("source")
    path = duck_file(bench, data)
    on_file = DuckFile(path)
    frame = pl.from_arrow(data.table)
    pdf = frame.select("symbol", "date", "bid", "ofr", "bidsiz", "ofrsiz").to_pandas()
    pdf["tsec"] = (frame["time"].to_physical() // 10**9).to_numpy()
    rows = data.rows
    y, x, where = ols_exprs()

    # spread by minute: check = (quotes counted, sum of their spreads)
    def spread_check(n, total):
        return rows, (int(n), float(total))

    def hfq_spread(engine):
        def run():
            out = ha.spread_by_minute(table, engine=engine, progress=False)
            return spread_check(out["n"].sum(), (out["avg_spread"] * out["n"]).sum())
        return run

    def duck_spread(source=None):
        def run():
            n, total = (source.con if source else con).execute(
                f"SELECT sum(n), sum(s) FROM ({SPREAD_SQL})").fetchone()
            return spread_check(n, total)
        return run

    def polars_spread():
        b, o, t = pl.col("bid"), pl.col("ofr"), pl.col("time")
        out = (frame.lazy().filter(t.is_between(pl.time(9, 30), pl.time(15, 59, 59))
                                   & (o > b) & (b > 0) & (o / b < 1.2))
               .group_by(t.dt.hour().cast(pl.Int32) * 60 + t.dt.minute())
               .agg(n=pl.len(), s=((o - b) / (o + b) * 2).sum()).collect())
        return spread_check(out["n"].sum(), out["s"].sum())

    def pandas_spread():
        b, o, t = pdf["bid"], pdf["ofr"], pdf["tsec"]
        keep = (t >= 34200) & (t <= 57599) & (o > b) & (b > 0) & (o / b < 1.2)
        s = ((o - b) / (o + b) * 2)[keep]
        out = s.groupby(t[keep] // 60).agg(["count", "sum"])
        return spread_check(out["count"].sum(), out["sum"].sum())

    with on_file:
        spread = measure(bench, "analytics: spread", {
            "hfq spread_by_minute (numba)": hfq_spread("numba"),
            "hfq spread_by_minute (polars engine)": hfq_spread("polars"),
            "DuckDB SQL": duck_spread(), "DuckDB SQL (on-disk database file)":
            duck_spread(on_file), "polars": polars_spread, "pandas": pandas_spread})
    cold = spread_cold(bench, db, table.name, data, path)

    # minute bars, written back (hfq: next to each partition, one commit; DuckDB: a table)
    def hfq_bars():
        written = ha.minute_bars(table, "bars", bar="1m", progress=False)
        return rows, (written,)

    def duck_bars():
        con.execute(BARS_SQL)
        n = con.execute("SELECT count(*) FROM bars").fetchone()[0]
        return rows, (n,)

    def polars_bars():
        mid = (pl.col("bid") + pl.col("ofr")) / 2
        minute = pl.col("time").to_physical() // 60_000_000_000
        out = (frame.lazy().group_by("symbol", "date", minute)
               .agg(pl.col("bid").mean(), pl.col("ofr").mean(), mid.first().alias("open"),
                    mid.max().alias("high"), mid.min().alias("low"),
                    mid.last().alias("close"), pl.len().alias("count")).collect())
        return rows, (out.height,)

    def pandas_bars():
        p = pdf.assign(mid=(pdf["bid"] + pdf["ofr"]) / 2, minute=pdf["tsec"] // 60)
        out = p.groupby(["symbol", "date", "minute"], observed=True, sort=False).agg(
            bid=("bid", "mean"), ofr=("ofr", "mean"), open=("mid", "first"),
            high=("mid", "max"), low=("mid", "min"), close=("mid", "last"),
            count=("mid", "size"))
        return rows, (len(out),)

    bars = measure(bench, "analytics: minute bars", {
        "hfq minute_bars (written back, committed)": hfq_bars, "DuckDB SQL (CREATE TABLE AS)":
        duck_bars, "polars": polars_bars, "pandas": pandas_bars})
    check_bars(db["bars"].to_polars(), frame)
    db["bars"].vacuum(keep_versions=1, grace_s=0)

    # OLS (the regression); peers solve from raw sums: agree to 1e-6
    def hfq_ols():
        fit = ha.ols(table, y=y, x={"quote_size": x}, where=where, progress=False)
        return fit.n, (fit.coef["intercept"], fit.coef["quote_size"])

    def duck_ols(source=None):
        def run():
            a, b, n = (source.con if source else con).execute(OLS_SQL).fetchone()
            return n, (a, b)
        return run

    def polars_ols():
        out = (frame.lazy().filter(where).select(y=y, x=x)
               .select(n=pl.len(), mx=pl.col("x").mean(), my=pl.col("y").mean(),
                       cxy=pl.cov("x", "y"), vx=pl.col("x").var()).collect().row(0))
        n, mx, my, cxy, vx = out
        return n, (my - cxy / vx * mx, cxy / vx)

    def pandas_ols():
        b, o = pdf["bid"], pdf["ofr"]
        keep = (o > b) & (b > 0) & (o / b < 1.2)
        yy = (o / b - 1)[keep]
        xx = ((pdf["bidsiz"] + pdf["ofrsiz"]) * (o + b) / 2)[keep]
        slope = yy.cov(xx) / xx.var()
        return len(yy), (yy.mean() - slope * xx.mean(), slope)

    with on_file:
        ols = measure(bench, "analytics: ols", {
            "hfq ols (coef, stderr, t, p, R2)": hfq_ols, "DuckDB SQL (regr_slope)": duck_ols(),
            "DuckDB SQL (regr_slope, on-disk database file)": duck_ols(on_file),
            "polars": polars_ols, "pandas": pandas_ols}, rtol=1e-6)
    con.close()
    os.remove(path)

    codec = db.settings.compression
    notes = {"hfq": f"1 node x {cores} CPUs, {codec} partitions on the node's disk, decoded "
             "batches in the node server's cache (warm)",
             "DuckDB": "in-memory table, 2 threads (warm)",
             "DuckDB file": "database file sorted by (symbol, time), its buffer pool warm, "
             "2 threads",
             "polars": "in-memory frame (warm)", "pandas": "in-memory frame (warm)"}
    for results in (spread, bars, ols):
        for res in results:
            res.notes = notes[res.contender.split()[0] + (
                " file" if "on-disk" in res.contender else "")]
    bars[0].notes += f"; {bars[0].check[0]:,} bars written"
    duck = {id(results): min((r for r in results if r.contender.startswith("DuckDB")),
                             key=lambda r: r.median)   # the faster layout
            for results in (spread, bars, ols)}
    pol = next(r for r in ols if r.contender == "polars")
    for results in (spread, bars, ols):
        ours = results[0]
        ours.notes += (f"; {mrows(rows, ours.median) / cores:.0f} M rows/s per core "
                       f"(DuckDB {mrows(rows, duck[id(results)].median) / 2:.0f})")
    setting = (f"- {rows:,} rows, warm; hfq on 1 node x {cores} CPUs ({codec} partitions, "
               "decoded batches served from the node server's cache); DuckDB with 2 threads "
               "on an in-memory table (and, for spread and OLS, on its database file sorted "
               "by (symbol, time) with a warm buffer pool: the target is judged against the "
               "faster of the two); polars and pandas on in-memory frames in this process.")
    bench.summary[bench.name("analytics: spread")] = [
        setting, target_line("spread_by_minute, warm", spread[0], duck[id(spread)], 2.5)]
    bench.summary[bench.name("analytics: minute bars")] = [
        setting, target_line("minute bars written back", bars[0], duck[id(bars)], 2.0,
                             "DuckDB CREATE TABLE AS (in-memory)"),
        f"- every column of all {bars[0].check[0]:,} bars hfq wrote checked against polars "
        "on the source rows (open/close ties in input order)."]
    bench.summary[bench.name("analytics: ols")] = [
        setting, target_line("OLS with full statistics", ols[0], pol, 1.0, "polars in memory"),
        target_line("OLS with full statistics", ols[0], duck[id(ols)], 2.0)]
    bench.summary[bench.name("analytics: spread (cold)")] = cold


def spread_cold(bench: Bench, db, name: str, data, path: str) -> list[str]:
    """spread_by_minute cold: before each run every file of both contenders is evicted from
    the page cache (posix_fadvise), every hfq node server's cache of decoded partitions and
    this process's are emptied, and each store is opened afresh (the table handle; a new
    DuckDB connection, so its buffer pool starts empty) -- hfq's partitions on its node's
    disk vs DuckDB's on-disk database file sorted by (symbol, time).  Returns the report's
    lines, which say whether a node cache served any batch during the runs (then the figure
    is not cold)."""
    import duckdb

    from hfq import analytics as ha
    roots = [i.root for i in db.session.runtime().infos()]
    opened: dict = {}

    def prepare() -> None:
        if "duck" in opened:
            opened.pop("duck").close()
        opened.clear()
        clear_node_caches(db)
        evict(*roots, path)
        opened["hfq"] = db[name]
        opened["duck"] = duckdb.connect(path, read_only=True, config={"threads": 2})

    def hfq_spread():
        out = ha.spread_by_minute(opened["hfq"], progress=False)
        return data.rows, (int(out["n"].sum()), float((out["avg_spread"] * out["n"]).sum()))

    def duck_spread():
        n, total = opened["duck"].execute(f"SELECT sum(n), sum(s) FROM ({SPREAD_SQL})").fetchone()
        return data.rows, (int(n), float(total))

    before = clear_node_caches(db)
    try:
        ours, duck = measure(bench, "analytics: spread (cold)", {
            "hfq spread_by_minute (numba), node cache emptied": hfq_spread,
            "DuckDB SQL (on-disk database file)": duck_spread}, prepare=prepare, cache="cold")
    finally:
        if "duck" in opened:
            opened.pop("duck").close()
    hits = clear_node_caches(db) - before
    ours.notes = (f"{db.settings.compression} partitions on the node's disk, evicted; node "
                  f"caches emptied before each run ({hits} batches served from them during "
                  "the runs)")
    duck.notes = ("database file sorted by (symbol, time), evicted; a new connection (empty "
                  "buffer pool, 2 threads) each run")
    lines = [f"- {data.rows:,} rows, cold: before each run every file of both contenders "
             "evicted from the page cache (`posix_fadvise(DONTNEED)`), hfq's node-server and "
             "in-process caches of decoded partitions emptied, each store opened afresh "
             "(DuckDB: an on-disk database file, a new connection).",
             target_line("spread_by_minute, cold", ours, duck, 1.5)]
    if hits:
        lines.append(f"- not a cold figure: the node caches served {hits} batches during the "
                     "runs.")
    return lines
