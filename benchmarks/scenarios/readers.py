"""Concurrent readers: 1, 2, 4 client processes, each reading its own random (symbol, day)
slices, against hfq and against the same slices stored the way each peer's users store them.

Every contender gets one process per client (spawned once, before any timing, and kept for all
its runs); a run sends each client its list of slices and waits for all of them: total rows
over that wall time is the figure.  Clients read what they would hand to a user: an Arrow
table (hfq, DuckDB, Parquet) or a pandas DataFrame (ArcticDB, pickle).
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import pickle
import shutil
import traceback
from collections.abc import Callable

import numpy as np

from harness import DAY, Bench, duck_arrow, make_csv, measure, mrows, price_check, taq_table

CLIENTS = (1, 2, 4)


# -- the client processes ------------------------------------------------------------------------
def open_reader(kind: str, path: str) -> Callable[[str, str], tuple[int, float]]:
    """A function (day, symbol) -> (rows, price checksum) reading from the store at ``path``."""
    if kind == "hfq":
        import hfq
        table = hfq.connect(path)["quotes"]

        def read(day, symbol):
            out = table.scan(dates=day, symbols=[symbol]).to_arrow()
            return out.num_rows, price_check(out)
    elif kind == "duckdb":
        import duckdb
        con = duckdb.connect(path, read_only=True)

        def read(day, symbol):
            out = duck_arrow(con.sql("SELECT * FROM q WHERE date = CAST(? AS DATE) AND "
                                     "symbol = ?", params=[day, symbol]))
            return out.num_rows, price_check(out)
    elif kind == "parquet":
        import pyarrow.parquet as pq

        def read(day, symbol):
            out = pq.read_table(os.path.join(path, f"{day}.parquet"),
                                filters=[("symbol", "=", symbol)])
            return out.num_rows, price_check(out)
    elif kind == "arcticdb":
        import pandas as pd
        from arcticdb import Arctic
        lib = Arctic(f"lmdb://{path}").get_library("bench")

        def read(day, symbol):
            start = pd.Timestamp(day)
            df = lib.read(symbol, date_range=(start, start + pd.Timedelta(days=1)
                                              - pd.Timedelta(1, "ns"))).data
            return len(df), price_check(df)
    elif kind == "pickle":
        def read(day, symbol):
            with open(os.path.join(path, day, f"{symbol}.pkl"), "rb") as fh:
                df = pickle.load(fh)
            return len(df), price_check(df)
    else:
        raise ValueError(f"no reader {kind!r}")
    return read


def client_main(conn, kind: str, path: str) -> None:
    """One client process: open the store, then read the slices it is sent until told to stop."""
    try:
        read = open_reader(kind, path)
        conn.send(("ready", None))
        while (job := conn.recv()) is not None:
            rows, check = 0, 0.0
            for day, symbol in job:
                n, c = read(day, symbol)
                rows += n
                check += c
            conn.send(("done", (rows, check)))
    except BaseException:  # noqa: BLE001 - a client process reports any failure to the parent
        conn.send(("error", traceback.format_exc()))


class Clients:
    """``n`` client processes of one kind (spawned: no inherited Ray or numba threads)."""

    def __init__(self, kind: str, path: str, n: int) -> None:
        ctx = mp.get_context("spawn")
        self.kind, self.conns, self.procs = kind, [], []
        for _ in range(n):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=client_main, args=(child, kind, path), daemon=True)
            proc.start()
            child.close()
            self.conns.append(parent)
            self.procs.append(proc)
        for conn in self.conns:
            self._receive(conn)

    def _receive(self, conn):
        try:
            status, value = conn.recv()
        except EOFError:
            raise RuntimeError(f"a {self.kind} client process died") from None
        if status == "error":
            raise RuntimeError(f"a {self.kind} client failed:\n{value}")
        return value

    def run(self, jobs: list[list[tuple[str, str]]]) -> tuple[int, float]:
        """Client i reads jobs[i]; returns the total (rows, checksum) once all are done."""
        for conn, job in zip(self.conns, jobs):
            conn.send(job)
        done = [self._receive(conn) for conn in self.conns[:len(jobs)]]
        return sum(d[0] for d in done), sum(d[1] for d in done)

    def close(self) -> None:
        for conn in self.conns:
            with contextlib.suppress(OSError):
                conn.send(None)
        for proc in self.procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.terminate()


# -- the stores ----------------------------------------------------------------------------------
def build_stores(bench: Bench, base: str) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """Every day of the CSV in hfq and in each peer's natural layout; returns kind -> path and
    the (day, symbol) pairs that have rows."""
    import duckdb
    import pandas as pd
    import pyarrow.parquet as pq
    from arcticdb import Arctic
    from arcticdb.version_store.library import WritePayload

    from hfq.demo import trading_days
    files = make_csv(bench)
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    paths = {k: os.path.join(base, k) for k in ("hfq", "parquet", "arcticdb", "pickle")}
    paths["duckdb"] = os.path.join(base, "duck.db")
    table = taq_table(bench, paths["hfq"], "zstd")
    table.db.load_csv("quotes", files, progress=False)
    duck = duckdb.connect(paths["duckdb"])
    lib = Arctic(f"lmdb://{paths['arcticdb']}").get_library("bench", create_if_missing=True)
    os.makedirs(paths["parquet"])
    pairs, frames = [], []
    for day in trading_days(DAY, bench.days):
        day_arrow = table.scan(dates=day).to_arrow()
        duck.register("day_arrow", day_arrow)
        sql = ("SELECT * REPLACE (CAST(symbol AS VARCHAR) AS symbol, CAST(ex AS VARCHAR) AS ex, "
               "CAST(mmid AS VARCHAR) AS mmid) FROM day_arrow ORDER BY symbol, time")
        duck.execute(f"CREATE TABLE IF NOT EXISTS q AS {sql} LIMIT 0")
        duck.execute(f"INSERT INTO q {sql}")
        duck.unregister("day_arrow")
        # Parquet: one file a day, sorted by symbol, row groups of 64K rows (hfq's batch size)
        # so that the symbol filter can skip most of the file by its statistics
        pq.write_table(duck_arrow(duck.sql(f"SELECT * FROM q WHERE date = DATE '{day}'")),
                       os.path.join(paths["parquet"], f"{day}.parquet"), compression="zstd",
                       row_group_size=65536)
        # pickle: one file per (day, symbol), the pandas frame a user would have saved
        plain = table.scan(dates=day).to_pandas().astype(
            {"symbol": object, "ex": object, "mmid": object})
        os.makedirs(os.path.join(paths["pickle"], day))
        for symbol, group in plain.groupby("symbol", sort=True):
            with open(os.path.join(paths["pickle"], day, f"{symbol}.pkl"), "wb") as fh:
                pickle.dump(group.reset_index(drop=True), fh, protocol=pickle.HIGHEST_PROTOCOL)
            pairs.append((day, symbol))
        frames.append(plain)
        del day_arrow
    duck.close()
    # ArcticDB: one symbol per ticker over all days, indexed by timestamp (its natural layout;
    # a day is then a date_range read)
    every = pd.concat(frames, ignore_index=True)
    del frames
    every.index = pd.DatetimeIndex(every["date"].astype("datetime64[ns]") + every["time"])
    every = every.drop(columns=["date"]).assign(
        time=every["time"].dt.total_seconds().astype("int32"))
    lib.write_batch([WritePayload(str(symbol), group)
                     for symbol, group in every.groupby("symbol", sort=False)])
    return paths, pairs


def scenario_concurrent(bench: Bench) -> None:
    base = os.path.join(bench.work, "concurrent")
    bench.log("  building the stores (hfq, DuckDB, Parquet, ArcticDB, pickle files) ...")
    paths, pairs = build_stores(bench, base)
    per_client = 20 if bench.quick else 200
    counts = (1, 2) if bench.quick else CLIENTS
    jobs = []
    for i in range(max(counts)):      # client i reads the same slices in every store
        pick = np.random.default_rng(1000 + i).integers(0, len(pairs), per_client)
        jobs.append([pairs[k] for k in pick])
    names = {"hfq": "hfq scan -> pyarrow", "duckdb": "DuckDB select where -> arrow",
             "parquet": "Parquet (zstd, 64K-row groups) with filter -> pyarrow",
             "arcticdb": "ArcticDB LMDB date_range read (symbol per ticker) -> pandas",
             "pickle": "pickle.load (one file per symbol and day) -> pandas"}
    with contextlib.ExitStack() as stack:
        bench.log(f"  starting {len(names)} x {max(counts)} client processes ...")
        pools = {}
        for kind in names:
            pools[kind] = Clients(kind, paths[kind], max(counts))
            stack.callback(pools[kind].close)
        by_count = {}
        for n in counts:
            scenario = f"concurrent: {n} client{'s' if n > 1 else ''}"
            results = measure(bench, scenario, {
                names[kind]: (lambda pool=pools[kind], n=n: pool.run(jobs[:n]))
                for kind in names})
            for res in results:
                res.extra = {"clients": n, "series": res.contender,
                             "slices": n * per_client}
            by_count[n] = results
    hfq_rates = {n: mrows(rs[0].rows, rs[0].median) for n, rs in by_count.items()}
    lines = [f"- {per_client} random (symbol, day) slices per client, ~"
             f"{by_count[counts[0]][0].rows // per_client:,} rows each; "
             f"{os.cpu_count()} cores for up to {max(counts)} clients."]
    for n, results in by_count.items():
        hfq_r = results[0]
        best = min(results[1:], key=lambda r: r.median)
        lines.append(f"- {n} client(s): hfq {hfq_rates[n]:.2f} M rows/s total; fastest peer "
                     f"{best.contender.split(' (')[0].split(' ->')[0]} "
                     f"{mrows(best.rows, best.median):.2f} M rows/s "
                     f"(hfq {best.median / hfq_r.median:.2f}x it).")
        for res in results:
            res.notes = (f"{mrows(res.rows, res.median) / n:.2f} M rows/s per client; "
                         f"{res.median / per_client * 1e3:.2f} ms per slice")
    top = max(counts)
    lines.append(f"- hfq from 1 to {top} clients: {hfq_rates[top] / hfq_rates[counts[0]]:.2f}x "
                 "the total rate.")
    bench.summary[f"concurrent: {counts[-1]} clients"] = lines
