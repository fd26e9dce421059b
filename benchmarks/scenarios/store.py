"""Scenarios without a cluster: CSV import and footprint, reading a day into Python."""

from __future__ import annotations

import gc
import os
import pickle
import shutil

from harness import (
    DAY,
    POINT_SYMBOL,
    Bench,
    Result,
    dir_bytes,
    duck_arrow,
    load_pickle,
    make_csv,
    measure,
    price_check,
    taq_table,
)


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


