"""Side-by-side benchmarks: hfq against the tools a quant researcher would otherwise pick.

    python benchmarks/run.py [--rows N] [--days D] [--quick] [--only NAME ...] [--out DIR]

Every scenario generates deterministic synthetic TAQ data (hfq.synth), runs each contender on
the same rows with a warm-up and several repeats in alternating order, checks that the
contenders agree on the result before any time counts, and writes ``report.md`` and
``results.json`` to ``--out``.  Page caches are warm (dropping them needs root on the host,
which this sandbox does not allow), so every read figure is a warm-cache figure.

Scenarios (more arrive with the cluster runtime and the analytics):

* ``ingest`` -- raw TAQ CSV -> each store: rows/s and bytes on disk.
* ``read``   -- one full day into Python (arrow / polars / pandas), and one symbol of one day.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import pickle
import platform
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import hfq  # noqa: E402
from hfq import synth  # noqa: E402

DAY = "2007-08-01"
POINT_SYMBOL = "IBM"


@dataclass
class Result:
    scenario: str
    contender: str
    seconds: list[float]
    rows: int
    bytes: int | None = None
    check: object = None
    notes: str = ""

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)


@dataclass
class Bench:
    out: str
    rows: int
    days: int
    repeats: int
    quick: bool
    results: list[Result] = field(default_factory=list)

    @property
    def work(self) -> str:
        return os.path.join(self.out, "work")

    def log(self, text: str) -> None:
        print(text, flush=True)


# -- helpers -------------------------------------------------------------------------------------
def dir_bytes(path: str) -> int:
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def measure(bench: Bench, scenario: str, contenders: dict[str, Callable[[], tuple]],
            *, repeats: int | None = None, warmup: bool = True) -> list[Result]:
    """Run every contender ``repeats`` times in alternating order; fn() -> (rows, check)."""
    repeats = repeats or bench.repeats
    names = list(contenders)
    times: dict[str, list[float]] = {n: [] for n in names}
    outputs: dict[str, tuple] = {}
    if warmup:
        for name in names:
            outputs[name] = contenders[name]()
    for r in range(repeats):
        order = names if r % 2 == 0 else list(reversed(names))
        for name in order:
            gc.collect()
            start = time.perf_counter()
            outputs[name] = contenders[name]()
            times[name].append(time.perf_counter() - start)
    results = [Result(scenario, n, times[n], outputs[n][0], check=outputs[n][1]) for n in names]
    agree(scenario, results)
    bench.results.extend(results)
    for res in results:
        bench.log(f"  {scenario:18s} {res.contender:34s} {res.median:8.3f} s  "
                  f"{res.rows:>12,} rows")
    return results


def agree(scenario: str, results: list[Result]) -> None:
    """Every contender must return the same rows (count, and a checksum of prices)."""
    first = results[0]
    for res in results[1:]:
        if res.rows != first.rows or not np.isclose(res.check, first.check, rtol=1e-9):
            raise AssertionError(
                f"{scenario}: {res.contender} returned {res.rows} rows / check {res.check}, "
                f"{first.contender} returned {first.rows} rows / check {first.check}")


def price_check(frame) -> float:
    """Sum of bid + ofr: a cheap checksum every contender's frame can compute."""
    import pyarrow as pa
    if isinstance(frame, pa.Table):
        import pyarrow.compute as pc
        return float(pc.sum(frame.column("bid")).as_py() + pc.sum(frame.column("ofr")).as_py())
    return float(frame["bid"].sum() + frame["ofr"].sum())   # pandas and polars alike


def duck_arrow(cursor):
    """DuckDB relation -> pyarrow Table (the method was renamed in DuckDB 2)."""
    fetch = getattr(cursor, "to_arrow_table", None) or cursor.arrow
    return fetch()


# -- data ----------------------------------------------------------------------------------------
def make_csv(bench: Bench) -> list[str]:
    from hfq.demo import trading_days
    csv_dir = os.path.join(bench.work, "csv")
    dates = trading_days(DAY, bench.days)
    files = [os.path.join(csv_dir, f"taq_{d.replace('-', '')}.csv") for d in dates]
    if all(os.path.exists(f) for f in files):
        return files
    shutil.rmtree(csv_dir, ignore_errors=True)
    bench.log(f"generating {bench.days} x {bench.rows:,} rows of TAQ CSV ...")
    return [str(p) for p in synth.taq_csv_files(csv_dir, dates=dates, rows_per_day=bench.rows,
                                                symbols=min(8000, max(50, bench.rows // 500)))]


def taq_table(bench: Bench, root: str, compression: str) -> hfq.Table:
    db = hfq.connect(root, compression=compression)
    buckets = max(1, min(100, bench.rows // 200_000))
    return db.create_table("quotes", hfq.schemas.TAQ,
                           partition_by=hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", buckets)),
                           sort_by=("symbol", "time"))


# -- scenario: ingest ----------------------------------------------------------------------------
def scenario_ingest(bench: Bench) -> None:
    import duckdb
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq
    files = make_csv(bench)
    csv_bytes = sum(os.path.getsize(f) for f in files)
    total_rows = bench.rows * bench.days
    stores = os.path.join(bench.work, "ingest")
    types = {"symbol": "VARCHAR", "date": "DATE", "time": "TIME", "bid": "DOUBLE",
             "ofr": "DOUBLE", "bidsiz": "INTEGER", "ofrsiz": "INTEGER", "mode": "INTEGER",
             "ex": "VARCHAR", "mmid": "VARCHAR"}

    def fresh(name: str) -> str:
        path = os.path.join(stores, name)
        shutil.rmtree(path, ignore_errors=True)
        if os.path.exists(path):
            os.remove(path)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return path

    def hfq_load(compression: str):
        def run():
            root = fresh(f"hfq_{compression}")
            table = taq_table(bench, root, compression)
            report = table.db.load_csv("quotes", files, progress=False)
            return report.rows, price_check(table.scan(columns=["bid", "ofr"]).to_arrow())
        return run

    def pyarrow_parse():
        rows, check = 0, 0.0
        for f in files:
            t = pacsv.read_csv(f, convert_options=pacsv.ConvertOptions(
                column_types={"symbol": "string", "time": "string", "ex": "string",
                              "mmid": "string"}, strings_can_be_null=False))
            rows += t.num_rows
            check += price_check(t)
        return rows, check

    def duck_load():
        path = fresh("duck.db")
        con = duckdb.connect(path)
        cols = "{" + ", ".join(f"'{k}': '{v}'" for k, v in types.items()) + "}"
        con.execute(f"CREATE TABLE q AS SELECT * FROM read_csv({files!r}, header=true, "
                    f"columns={cols}, dateformat='%Y%m%d')")
        rows, check = con.execute("SELECT count(*), sum(bid) + sum(ofr) FROM q").fetchone()
        con.close()
        return rows, check

    def parquet_write():
        path = fresh("parquet")
        os.makedirs(path)
        rows, check = 0, 0.0
        for f in files:
            t = pacsv.read_csv(f, convert_options=pacsv.ConvertOptions(
                column_types={"symbol": "string", "time": "string", "ex": "string",
                              "mmid": "string"}, strings_can_be_null=False))
            pq.write_table(t, os.path.join(path, os.path.basename(f) + ".parquet"),
                           compression="zstd")
            rows += t.num_rows
            check += price_check(t)
        return rows, check

    def arctic_write():
        import pandas as pd
        from arcticdb import Arctic
        path = fresh("arctic")
        lib = Arctic(f"lmdb://{path}").get_library("bench", create_if_missing=True)
        rows, check = 0, 0.0
        for f in files:
            df = pd.read_csv(f, dtype={"mmid": str, "ex": str}, keep_default_na=False)
            lib.write(os.path.basename(f).split(".")[0], df)
            rows += len(df)
            check += price_check(df)
        return rows, check

    contenders = {"hfq load_csv (zstd)": hfq_load("zstd"), "hfq load_csv (lz4)": hfq_load("lz4"),
                  "hfq load_csv (no codec)": hfq_load("none"),
                  "pyarrow read_csv only (no store)": pyarrow_parse,
                  "DuckDB read_csv -> table": duck_load,
                  "Parquet (pyarrow csv + zstd)": parquet_write,
                  "ArcticDB (pandas read_csv + write)": arctic_write}
    results = measure(bench, "ingest", contenders, repeats=1 if not bench.quick else 1,
                      warmup=False)
    sizes = {"hfq load_csv (zstd)": "hfq_zstd", "hfq load_csv (lz4)": "hfq_lz4",
             "hfq load_csv (no codec)": "hfq_none",
             "DuckDB read_csv -> table": "duck.db", "Parquet (pyarrow csv + zstd)": "parquet",
             "ArcticDB (pandas read_csv + write)": "arctic"}
    for res in results:
        if res.contender in sizes:
            res.bytes = dir_bytes(os.path.join(stores, sizes[res.contender]))
            res.notes = f"disk 1/{csv_bytes / res.bytes:.2f} of the CSV"
        res.rows = total_rows
    bench.results.append(Result("ingest", "CSV (reference)", [float("nan")], total_rows,
                                csv_bytes, notes="raw CSV size"))


# -- scenario: read ------------------------------------------------------------------------------
def scenario_read(bench: Bench) -> None:
    import duckdb
    import pyarrow.parquet as pq
    from arcticdb import Arctic, QueryBuilder
    files = make_csv(bench)[:1]          # one day
    base = os.path.join(bench.work, "read")
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    tables = {}
    for codec in ("zstd", "lz4", "none"):
        t = taq_table(bench, os.path.join(base, f"hfq_{codec}"), codec)
        t.db.load_csv("quotes", files, progress=False)
        tables[codec] = t
    day_arrow = tables["zstd"].scan(dates=DAY).to_arrow()
    # the day as a pandas user holds it: text as Python strings, times as timedeltas
    plain = tables["zstd"].scan(dates=DAY).to_pandas().astype(
        {"symbol": object, "ex": object, "mmid": object})
    pkl = os.path.join(base, "day.pkl")
    with open(pkl, "wb") as fh:
        pickle.dump(plain, fh, protocol=pickle.HIGHEST_PROTOCOL)
    pkl_cat = os.path.join(base, "day_categorical.pkl")
    with open(pkl_cat, "wb") as fh:
        pickle.dump(tables["zstd"].scan(dates=DAY).to_pandas(), fh,
                    protocol=pickle.HIGHEST_PROTOCOL)
    pq_path = os.path.join(base, "day.parquet")
    pq.write_table(day_arrow, pq_path, compression="zstd")
    duck = duckdb.connect(os.path.join(base, "duck.db"))
    duck.register("day_arrow", day_arrow)
    duck.execute("CREATE TABLE q AS SELECT * REPLACE (CAST(symbol AS VARCHAR) AS symbol, "
                 "CAST(ex AS VARCHAR) AS ex, CAST(mmid AS VARCHAR) AS mmid) FROM day_arrow "
                 "ORDER BY symbol, time")
    duck.unregister("day_arrow")
    lib = Arctic(f"lmdb://{os.path.join(base, 'arctic')}").get_library(
        "bench", create_if_missing=True)
    # ArcticDB stores neither timedelta nor datetime64[ms]: seconds as int32, dates in ns
    lib.write("day", plain.assign(time=(plain["time"].dt.total_seconds()).astype("int32"),
                                  date=plain["date"].astype("datetime64[ns]")))
    del plain, day_arrow
    gc.collect()

    def load_pickle(path):
        def run():
            with open(path, "rb") as fh:
                df = pickle.load(fh)
            return len(df), price_check(df)
        return run

    def hfq_read(codec, fmt):
        def run():
            scan = tables[codec].scan(dates=DAY)
            out = getattr(scan, f"to_{fmt}")()
            return len(out), price_check(out)
        return run

    def duck_read():
        out = duck_arrow(duck.sql("SELECT * FROM q"))
        return out.num_rows, price_check(out)

    def parquet_read():
        out = pq.read_table(pq_path)
        return out.num_rows, price_check(out)

    def arctic_read():
        df = lib.read("day").data
        return len(df), price_check(df)

    full = measure(bench, "read day", {
        "hfq -> pyarrow (zstd)": hfq_read("zstd", "arrow"),
        "hfq -> polars (zstd)": hfq_read("zstd", "polars"),
        "hfq -> pandas (zstd)": hfq_read("zstd", "pandas"),
        "hfq -> pyarrow (lz4)": hfq_read("lz4", "arrow"),
        "hfq -> pandas (lz4)": hfq_read("lz4", "pandas"),
        "hfq -> pyarrow (no codec)": hfq_read("none", "arrow"),
        "hfq -> pandas (no codec)": hfq_read("none", "pandas"),
        "pickle.load (pandas, str objects)": load_pickle(pkl),
        "pickle.load (pandas, categoricals)": load_pickle(pkl_cat),
        "ArcticDB LMDB read -> pandas": arctic_read,
        "DuckDB select * -> arrow": duck_read,
        "Parquet (zstd) -> pyarrow": parquet_read,
    })
    del full

    def hfq_point(codec):
        def run():
            out = tables[codec].scan(dates=DAY, symbols=[POINT_SYMBOL]).to_arrow()
            return out.num_rows, price_check(out)
        return run

    def duck_point():
        out = duck_arrow(duck.sql(f"SELECT * FROM q WHERE symbol = '{POINT_SYMBOL}'"))
        return out.num_rows, price_check(out)

    def parquet_point():
        out = pq.read_table(pq_path, filters=[("symbol", "=", POINT_SYMBOL)])
        return out.num_rows, price_check(out)

    def arctic_point():
        q = QueryBuilder()
        q = q[q["symbol"] == POINT_SYMBOL]
        df = lib.read("day", query_builder=q).data
        return len(df), price_check(df)

    def pickle_point():
        with open(pkl, "rb") as fh:
            df = pickle.load(fh)
        df = df[df["symbol"] == POINT_SYMBOL]
        return len(df), price_check(df)

    measure(bench, "read one symbol", {
        "hfq -> pyarrow (zstd)": hfq_point("zstd"),
        "hfq -> pyarrow (lz4)": hfq_point("lz4"),
        "pickle.load + filter": pickle_point,
        "ArcticDB LMDB read + filter": arctic_point,
        "DuckDB select where": duck_point,
        "Parquet (zstd) with filter": parquet_point,
    })
    duck.close()


SCENARIOS = {"ingest": scenario_ingest, "read": scenario_read}


# -- report --------------------------------------------------------------------------------------
def report(bench: Bench) -> str:
    lines = ["# hfq benchmarks", "",
             f"{bench.days} day(s) x {bench.rows:,} rows of synthetic TAQ; "
             f"{os.cpu_count()} cores; Python {platform.python_version()}; "
             f"median of {bench.repeats} runs after a warm-up (ingest: one run, no warm-up); "
             "warm page cache (the sandbox cannot drop caches).", ""]
    for scenario in dict.fromkeys(r.scenario for r in bench.results):
        rows = [r for r in bench.results if r.scenario == scenario]
        ours = [r for r in rows if r.contender.startswith("hfq")]
        peers = [r for r in rows if not r.contender.startswith("hfq") and r.median == r.median]
        lines += [f"## {scenario}", "", "| contender | median s | M rows/s | bytes | notes |",
                  "|---|---|---|---|---|"]
        for r in rows:
            timed = r.median == r.median
            secs = f"{r.median:.3f}" if timed else ""
            rate = f"{r.rows / r.median / 1e6:,.2f}" if timed else ""
            size = f"{r.bytes:,}" if r.bytes else ""
            lines.append(f"| {r.contender} | {secs} | {rate} | {size} | {r.notes} |")
        if ours and peers:
            lines += ["", "Speed-up of hfq over each peer (peer time / hfq time; above 1: hfq "
                      "is faster):", "",
                      "| hfq \\ peer | " + " | ".join(p.contender for p in peers) + " |",
                      "|---|" + "---|" * len(peers)]
            for r in ours:
                cells = " | ".join(f"{p.median / r.median:.2f}x" for p in peers)
                lines.append(f"| {r.contender} | {cells} |")
        lines.append("")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=20_000_000, help="rows per day")
    p.add_argument("--days", type=int, default=1)
    p.add_argument("--quick", action="store_true", help="tiny sizes: a smoke test")
    p.add_argument("--only", nargs="*", choices=sorted(SCENARIOS), default=None)
    p.add_argument("--out", default="bench_out")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--keep-data", action="store_true", help="keep the generated data in --out")
    args = p.parse_args(argv)
    if args.quick:
        args.rows, args.repeats = min(args.rows, 20_000), 1
    bench = Bench(out=args.out, rows=args.rows, days=args.days, repeats=args.repeats,
                  quick=args.quick)
    os.makedirs(bench.work, exist_ok=True)
    for name in args.only or list(SCENARIOS):
        bench.log(f"[{name}]")
        SCENARIOS[name](bench)
    text = report(bench)
    with open(os.path.join(args.out, "report.md"), "w") as fh:
        fh.write(text)
    data = {}
    for r in bench.results:
        data.setdefault(r.scenario, {})[r.contender] = {
            "median_s": r.median, "runs_s": r.seconds, "rows": r.rows, "bytes": r.bytes,
            "notes": r.notes}
    with open(os.path.join(args.out, "results.json"), "w") as fh:
        json.dump(data, fh, indent=2, default=str)
    print(text)
    if not args.keep_data:
        shutil.rmtree(bench.work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
