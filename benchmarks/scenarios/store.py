"""Scenarios without a cluster: CSV import and footprint, reading a day into Python (warm and
cold page cache, peak memory), a fresh process reading one symbol-day."""

from __future__ import annotations

import gc
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
from typing import Any

from harness import (
    DAY,
    POINT_SYMBOL,
    Answer,
    Bench,
    Result,
    digest,
    dir_bytes,
    duck_arrow,
    evict,
    make_csv,
    measure,
    mrows,
    taq_table,
    target_line,
)

TEXT = ("symbol", "ex", "mmid")


def normalized(frame: Any) -> Any:
    """A stored or parsed TAQ table as polars with the CSV's fields in their stored kinds
    (``YYYYMMDD`` integers as dates, ``H:MM:SS`` text as times, missing text as ""): what the
    ingest contenders' answers are compared by."""
    import polars as pl

    from harness import canonical
    df = canonical(frame)
    fix = []
    if df.schema["date"].is_integer():
        fix.append(pl.col("date").cast(pl.String).str.strptime(pl.Date, "%Y%m%d"))
    if df.schema["time"] == pl.String:
        fix.append(pl.col("time").str.strptime(pl.Time, "%H:%M:%S").cast(pl.Int64))
    fix += [pl.col(c).fill_null("") for c in TEXT if df.schema[c] == pl.String]
    return df.with_columns(fix)


# -- scenario: ingest ----------------------------------------------------------------------------
def scenario_ingest(bench: Bench) -> None:
    import duckdb
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq
    files = make_csv(bench)
    csv_bytes = sum(os.path.getsize(f) for f in files)
    total_rows = sum(1 for f in files for _ in open(f)) - len(files)   # from the files
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

    def checked(load, answer):
        """A load (returns rows) whose stored rows are read back and checked in full on
        the checked run (outside the timing)."""
        def run(full: bool):
            rows = load()
            return rows, (digest(normalized(answer())) if full else None)
        return Answer(run)

    def hfq_load(compression: str):
        root = os.path.join(stores, f"hfq_{compression}")

        def load():
            fresh(f"hfq_{compression}")
            table = taq_table(bench, root, compression)
            return table.db.load_csv("quotes", files, progress=False).rows
        return checked(load, lambda: __import__("hfq").connect(root)["quotes"].to_arrow())

    parsed: list = []

    def pyarrow_parse():
        parsed[:] = [pacsv.read_csv(f, convert_options=pacsv.ConvertOptions(
            column_types={"symbol": "string", "time": "string", "ex": "string",
                          "mmid": "string"}, strings_can_be_null=False)) for f in files]
        return sum(t.num_rows for t in parsed)

    def duck_load():
        con = duckdb.connect(fresh("duck.db"))
        cols = "{" + ", ".join(f"'{k}': '{v}'" for k, v in types.items()) + "}"
        con.execute(f"CREATE TABLE q AS SELECT * FROM read_csv({files!r}, header=true, "
                    f"columns={cols}, dateformat='%Y%m%d')")
        rows = con.execute("SELECT count(*) FROM q").fetchone()[0]
        con.close()
        return rows

    def duck_answer():
        con = duckdb.connect(os.path.join(stores, "duck.db"), read_only=True)
        try:
            return duck_arrow(con.sql("SELECT * FROM q"))
        finally:
            con.close()

    def parquet_write():
        path = fresh("parquet")
        os.makedirs(path)
        rows = 0
        for f in files:
            t = pacsv.read_csv(f, convert_options=pacsv.ConvertOptions(
                column_types={"symbol": "string", "time": "string", "ex": "string",
                              "mmid": "string"}, strings_can_be_null=False))
            pq.write_table(t, os.path.join(path, os.path.basename(f) + ".parquet"),
                           compression="zstd")
            rows += t.num_rows
        return rows

    def arctic_write():
        import pandas as pd
        from arcticdb import Arctic
        path = fresh("arctic")
        lib = Arctic(f"lmdb://{path}").get_library("bench", create_if_missing=True)
        rows = 0
        for f in files:
            df = pd.read_csv(f, dtype={"mmid": str, "ex": str}, keep_default_na=False)
            lib.write(os.path.basename(f).split(".")[0], df)
            rows += len(df)
        return rows

    def arctic_answer():
        import pandas as pd
        from arcticdb import Arctic
        lib = Arctic(f"lmdb://{os.path.join(stores, 'arctic')}").get_library("bench")
        return pd.concat([lib.read(s).data for s in sorted(lib.list_symbols())])

    import pyarrow as pa
    contenders = {"hfq load_csv (zstd)": hfq_load("zstd"), "hfq load_csv (lz4)": hfq_load("lz4"),
                  "hfq load_csv (no codec)": hfq_load("none"),
                  "pyarrow read_csv only (no store)": checked(
                      pyarrow_parse, lambda: pa.concat_tables(parsed)),
                  "DuckDB read_csv -> table": checked(duck_load, duck_answer),
                  "Parquet (pyarrow csv + zstd)": checked(
                      parquet_write, lambda: pq.read_table(os.path.join(stores, "parquet"))),
                  "ArcticDB (pandas read_csv + write)": checked(arctic_write, arctic_answer)}
    results = measure(bench, "ingest", contenders)
    sizes = {"hfq load_csv (zstd)": "hfq_zstd", "hfq load_csv (lz4)": "hfq_lz4",
             "hfq load_csv (no codec)": "hfq_none",
             "DuckDB read_csv -> table": "duck.db", "Parquet (pyarrow csv + zstd)": "parquet",
             "ArcticDB (pandas read_csv + write)": "arctic"}
    for res in results:
        if res.rows != total_rows:
            raise AssertionError(f"ingest: {res.contender} stored {res.rows} rows of "
                                 f"{total_rows}")
        if res.contender in sizes:
            res.bytes = dir_bytes(os.path.join(stores, sizes[res.contender]))
            res.notes = f"disk 1/{csv_bytes / res.bytes:.2f} of the CSV"
    bench.results.append(Result(bench.name("ingest"), "CSV (reference)", [float("nan")],
                                total_rows, csv_bytes, notes="raw CSV size"))
    bench.summary[bench.name("ingest")] = ingest_targets(results)


def ingest_targets(results: list[Result]) -> list[str]:
    """The issue's ingest target (>= 3 M rows/s with the default codec): the median of the
    timed runs (each after the warm-up), rows as the store reported them (checked against the
    CSV's lines, and the stored rows read back and compared in full on the warm-up run)."""
    from hfq.config import Settings
    codec = Settings().compression
    by = {r.contender: r for r in results}
    ours = by[f"hfq load_csv ({'no codec' if codec == 'none' else codec})"]
    parse = by["pyarrow read_csv only (no store)"]
    rate = mrows(ours.rows, ours.median)
    return [f"- ingest, default codec ({codec}): **{rate:.2f} M rows/s** (median of "
            f"{len(ours.seconds)} timed runs after a warm-up; runs "
            f"{mrows(ours.rows, ours.high):.2f}-{mrows(ours.rows, ours.low):.2f}; "
            f"{ours.rows:,} rows) (target >= 3 M rows/s: {'met' if rate >= 3 else 'not met'}).",
            f"- pyarrow's parse alone (no store): {mrows(parse.rows, parse.median):.2f} M rows/s; "
            f"hfq's default-codec ingest takes {ours.median / parse.median:.2f}x its time."]


# -- scenario: read ------------------------------------------------------------------------------
def day_layouts(bench: Bench, base: str) -> dict[str, Any]:
    """One day from the CSV in hfq (zstd, lz4, no codec) and in each peer's best layout for
    reading a whole day: a pickle of the pandas frame (text as str objects, and as
    categoricals), Parquet sorted by (symbol, time) with 64Ki-row groups, a DuckDB table
    sorted the same way, ArcticDB with the day as one library symbol."""
    import duckdb
    import pyarrow.parquet as pq
    from arcticdb import Arctic
    files = make_csv(bench)[:1]
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    out: dict[str, Any] = {"base": base}
    for codec in ("zstd", "lz4", "none"):
        t = taq_table(bench, os.path.join(base, f"hfq_{codec}"), codec)
        t.db.load_csv("quotes", files, progress=False)
        out[f"hfq_{codec}"] = os.path.join(base, f"hfq_{codec}")
    table = __import__("hfq").connect(out["hfq_zstd"])["quotes"]
    categorical = table.scan(dates=DAY).to_pandas()
    plain = categorical.astype({c: object for c in TEXT})   # as a pandas user holds it
    for name, frame in (("pickle", plain), ("pickle_cat", categorical)):
        out[name] = os.path.join(base, f"day_{name}.pkl")
        with open(out[name], "wb") as fh:
            pickle.dump(frame, fh, protocol=pickle.HIGHEST_PROTOCOL)
    symbols = categorical["symbol"].cat.categories
    symbol = POINT_SYMBOL if POINT_SYMBOL in set(categorical["symbol"]) else str(
        categorical["symbol"].iloc[0])
    out["symbol"] = symbol
    out["symbol_pickle"] = os.path.join(base, "symbol_day.pkl")
    with open(out["symbol_pickle"], "wb") as fh:
        pickle.dump(plain[plain["symbol"] == symbol].reset_index(drop=True), fh,
                    protocol=pickle.HIGHEST_PROTOCOL)
    del symbols
    out["duck"] = os.path.join(base, "duck.db")
    duck = duckdb.connect(out["duck"])
    day_arrow = table.scan(dates=DAY).to_arrow()
    duck.register("day_arrow", day_arrow)
    duck.execute("CREATE TABLE q AS SELECT * REPLACE (CAST(symbol AS VARCHAR) AS symbol, "
                 "CAST(ex AS VARCHAR) AS ex, CAST(mmid AS VARCHAR) AS mmid) FROM day_arrow "
                 "ORDER BY symbol, time")
    duck.unregister("day_arrow")
    out["parquet"] = os.path.join(base, "day.parquet")
    pq.write_table(duck_arrow(duck.sql("SELECT * FROM q")), out["parquet"],
                   compression="zstd", row_group_size=65536)
    duck.close()
    out["arctic"] = os.path.join(base, "arctic")
    lib = Arctic(f"lmdb://{out['arctic']}").get_library("bench", create_if_missing=True)
    # ArcticDB stores neither timedelta nor datetime64[ms]: seconds as int32, dates in ns
    lib.write("day", plain.assign(time=(plain["time"].dt.total_seconds()).astype("int32"),
                                  date=plain["date"].astype("datetime64[ns]")))
    del plain, categorical, day_arrow
    gc.collect()
    return out


def day_reader(kind: str, paths: dict[str, Any]) -> Any:
    """A function reading the whole day from ``paths`` (of :func:`day_layouts`) as ``kind``
    says: ``hfq_<codec>:<arrow|polars|pandas>``, ``pickle``, ``pickle_cat``,
    ``parquet:<arrow|pandas>``, ``duck:<arrow|pandas>``, ``arctic``."""
    store, _, fmt = kind.partition(":")
    if store.startswith("hfq_"):
        import hfq
        table = hfq.connect(paths[store])["quotes"]
        return lambda: getattr(table.scan(dates=DAY), f"to_{fmt}")()
    if store in ("pickle", "pickle_cat"):
        def load():
            with open(paths[store], "rb") as fh:
                return pickle.load(fh)
        return load
    if store == "parquet":
        import pyarrow.parquet as pq
        return lambda: pq.read_table(paths["parquet"]) if fmt == "arrow" else \
            pq.read_table(paths["parquet"]).to_pandas()
    if store == "duck":
        import duckdb
        con = duckdb.connect(paths["duck"], read_only=True)
        return lambda: duck_arrow(con.sql("SELECT * FROM q")) if fmt == "arrow" else \
            con.sql("SELECT * FROM q").df()
    if store == "arctic":
        from arcticdb import Arctic
        lib = Arctic(f"lmdb://{paths['arctic']}").get_library("bench")
        return lambda: lib.read("day").data
    raise ValueError(f"no day reader {kind!r}")


def day_check(kind: str):
    """What checks a day reader's answer: ArcticDB's day has time as int32 seconds."""
    if not kind.startswith("arctic"):
        return digest

    def check(df):
        import pandas as pd
        return digest(df.assign(time=pd.to_timedelta(df["time"].to_numpy(), unit="s")))
    return check


WARM_DAY = {
    "hfq -> pyarrow (zstd)": "hfq_zstd:arrow", "hfq -> polars (zstd)": "hfq_zstd:polars",
    "hfq -> pandas (zstd)": "hfq_zstd:pandas", "hfq -> pyarrow (lz4)": "hfq_lz4:arrow",
    "hfq -> pandas (lz4)": "hfq_lz4:pandas", "hfq -> pyarrow (no codec)": "hfq_none:arrow",
    "hfq -> pandas (no codec)": "hfq_none:pandas",
    "pickle.load (pandas, str objects)": "pickle",
    "pickle.load (pandas, categoricals)": "pickle_cat",
    "ArcticDB LMDB read (the day as one symbol) -> pandas": "arctic",
    "DuckDB select * (sorted table) -> arrow": "duck:arrow",
    "Parquet (zstd, sorted, 64Ki-row groups) -> pyarrow": "parquet:arrow",
}
COLD_DAY = {
    "hfq -> pandas (zstd)": "hfq_zstd:pandas", "hfq -> pyarrow (zstd)": "hfq_zstd:arrow",
    "hfq -> pandas (lz4)": "hfq_lz4:pandas",
    "pickle.load (pandas, str objects)": "pickle",
    "pickle.load (pandas, categoricals)": "pickle_cat",
    "ArcticDB LMDB read (the day as one symbol) -> pandas": "arctic",
    "DuckDB select * (sorted table) -> pandas": "duck:pandas",
    "Parquet (zstd, sorted, 64Ki-row groups) -> pandas": "parquet:pandas",
}
PEAK_DAY = {k: v for k, v in COLD_DAY.items()}


def scenario_read(bench: Bench) -> None:
    """A whole day into Python: warm page cache, cold page cache (every file of every store
    evicted before each run, each store opened afresh), and each reader's peak memory in a
    fresh process; then a fresh process reading one symbol-day."""
    paths = day_layouts(bench, os.path.join(bench.work, "read"))
    readers: dict[str, Any] = {}

    def contender(kind: str) -> Answer:
        return Answer.of(lambda: readers[kind](), check=day_check(kind))

    readers.update({k: day_reader(k, paths) for k in WARM_DAY.values()})
    warm = measure(bench, "read day", {n: contender(k) for n, k in WARM_DAY.items()})

    def cold() -> None:
        readers.clear()
        gc.collect()
        evict(paths["base"])
        readers.update({k: day_reader(k, paths) for k in COLD_DAY.values()})

    cold_r = measure(bench, "read day (cold)", {n: contender(k) for n, k in COLD_DAY.items()},
                     prepare=cold, cache="cold")
    readers.clear()
    peaks = peak_memory(bench, paths)
    for res in warm + cold_r:
        if res.contender in peaks:
            peak, size = peaks[res.contender]
            res.extra.update(peak_rss_bytes=peak, result_bytes=size)
            if res.scenario == bench.name("read day"):
                continue
            res.notes = f"peak RSS +{peak / 2**20:,.0f} MiB for a {size / 2**20:,.0f} MiB result"
    lines = read_targets(warm, cold_r, peaks)
    bench.summary[bench.name("read day")] = lines[0]
    bench.summary[bench.name("read day (cold)")] = lines[1]
    fresh_process(bench, paths)


def read_targets(warm: list[Result], cold: list[Result], peaks: dict) -> tuple[list, list]:
    """The issue's targets for day reads, each against the peer in the same run."""
    w = {r.contender: r for r in warm}
    c = {r.contender: r for r in cold}
    cat, plain = "pickle.load (pandas, categoricals)", "pickle.load (pandas, str objects)"
    pandas_z, arrow_z = w["hfq -> pandas (zstd)"], w["hfq -> pyarrow (zstd)"]
    fastest = min((w[k] for k in w if k.startswith("hfq -> pandas")), key=lambda r: r.median)

    line = target_line
    warm_lines = [
        line("day -> pandas (zstd)", pandas_z, w[cat], 1.0),
        line("day -> pandas (zstd)", pandas_z, w[plain], 3.0),
        line(f"day -> pandas, fastest codec ({fastest.contender})", fastest, w[cat], 2.0),
        line("day -> arrow (zstd)", arrow_z, w[cat], 2.0),
        line("day -> polars (zstd)", w["hfq -> polars (zstd)"], w[cat], 2.0)]
    cold_lines = [
        line("cold day -> pandas (zstd)", c["hfq -> pandas (zstd)"], c[cat], 2.0),
        line("cold day -> pandas (zstd)", c["hfq -> pandas (zstd)"],
             c["Parquet (zstd, sorted, 64Ki-row groups) -> pandas"], 1.5)]
    if "hfq -> pandas (zstd)" in peaks:
        peak, size = peaks["hfq -> pandas (zstd)"]
        cold_lines.append(f"- peak memory, day -> pandas (zstd): {peak / size:.2f}x the result's "
                          f"{size / 2**20:,.0f} MiB (target <= 1.3x: "
                          f"{'met' if peak <= 1.3 * size else 'not met'}).")
    return warm_lines, cold_lines


def peak_rss() -> int:
    """This process's peak resident set in bytes (``VmHWM``).  Not ``getrusage``'s
    ``ru_maxrss``: Linux carries that across ``fork`` + ``exec``, so a child spawned by this
    (large) benchmark process would start at the parent's peak and show no growth at all."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def rss_child(conn, kind: str, paths: dict[str, Any]) -> None:
    """In a fresh process: open the store, then read the day once; sends (the growth of the
    peak resident set over the read, bytes of the result)."""
    try:
        read = day_reader(kind, paths)
        before = peak_rss()
        out = read()
        after = peak_rss()
        size = int(out.memory_usage(deep=True).sum()) if hasattr(out, "memory_usage") else \
            int(out.nbytes)
        conn.send((after - before, size))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        conn.send(exc)


def peak_memory(bench: Bench, paths: dict[str, Any]) -> dict[str, tuple[int, int]]:
    """Per day reader: (peak RSS growth, result bytes), each measured in its own process."""
    import multiprocessing as mp
    ctx = mp.get_context("spawn")
    out = {}
    for name, kind in PEAK_DAY.items():
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=rss_child, args=(child, kind, paths))
        proc.start()
        got = parent.recv()
        proc.join()
        if isinstance(got, BaseException):
            raise got
        out[name] = got
        bench.log(f"  peak RSS {name:52s} +{got[0] / 2**20:8.1f} MiB for "
                  f"{got[1] / 2**20:8.1f} MiB")
    return out


def fresh_process(bench: Bench, paths: dict[str, Any]) -> None:
    """A new Python process: import, open, read one symbol-day into pandas -- vs the same
    process importing pyarrow and polars only, and vs ``pickle.load`` of a file holding
    just that symbol-day.  Answers travel back as pickles on the checked run."""
    symbol = paths["symbol"]
    codes = {
        "hfq: import, connect, one symbol-day -> pandas":
            f"import hfq\nout = hfq.connect({paths['hfq_zstd']!r})['quotes'].scan("
            f"dates={DAY!r}, symbols=[{symbol!r}]).to_pandas()",
        "pickle: import pandas, pickle.load of that symbol-day's file":
            f"import pickle, pandas\nout = pickle.load(open({paths['symbol_pickle']!r}, 'rb'))",
        "import pyarrow, polars (no data)": "import pyarrow, polars\nout = None",
    }

    def contender(code: str) -> Answer:
        def run(full: bool):
            with tempfile.TemporaryDirectory() as tmp:
                dump = os.path.join(tmp, "out.pkl")
                tail = f"\nimport pickle as _p\n_p.dump(out, open({dump!r}, 'wb'))" if full \
                    else ""
                subprocess.run([sys.executable, "-c", code + tail], check=True,
                               env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
                if not full:
                    return 0, None
                with open(dump, "rb") as fh:
                    out = pickle.load(fh)
            return 0, (None if out is None else digest(out))
        return Answer(run)

    results = measure(bench, "fresh process", {n: contender(c) for n, c in codes.items()},
                      same_answer=False)
    ours, pick, bare = results
    if ours.check != pick.check:
        raise AssertionError(f"fresh process: hfq read {ours.check}, the pickle holds "
                             f"{pick.check}")
    for res in results:
        res.rows = ours.check[0]
    ratio = ours.median / bare.median
    bench.summary[bench.name("fresh process")] = [
        f"- one symbol-day ({symbol}, {ours.check[0]:,} rows) in a new process: hfq "
        f"{ours.median:.2f} s = **{ratio:.2f}x** `import pyarrow, polars` alone "
        f"(target <= 1.3x: {'met' if ratio <= 1.3 else 'not met'}); `pickle.load` of a "
        f"file holding just that slice {pick.median:.2f} s."]
