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
from typing import Any

import numpy as np

from harness import (
    DAY,
    Answer,
    Bench,
    Digest,
    digest,
    duck_arrow,
    evict,
    make_csv,
    measure,
    merge_digests,
    mrows,
    speedup,
    taq_table,
)

CLIENTS = (1, 2, 4)


# -- the client processes ------------------------------------------------------------------------
def open_reader(kind: str, path: str) -> Callable[[str, str], Any]:
    """A function (day, symbol) -> that slice as its store hands it to a user: an Arrow table
    (hfq, DuckDB, Parquet) or a pandas DataFrame (ArcticDB, pickle).  ``hfq-nocache``: hfq
    without its cache of decoded record batches."""
    if kind in ("hfq", "hfq-nocache"):
        import hfq
        table = hfq.connect(path, **({"cache_bytes": 0} if kind == "hfq-nocache" else {}))[
            "quotes"]

        def read(day, symbol):
            return table.scan(dates=day, symbols=[symbol]).to_arrow()
    elif kind == "duckdb":
        import duckdb
        con = duckdb.connect(path, read_only=True)

        def read(day, symbol):
            return duck_arrow(con.sql("SELECT * FROM q WHERE date = CAST(? AS DATE) AND "
                                      "symbol = ?", params=[day, symbol]))
    elif kind == "parquet":
        import pyarrow.parquet as pq

        def read(day, symbol):
            return pq.read_table(os.path.join(path, f"{day}.parquet"),
                                 filters=[("symbol", "=", symbol)])
    elif kind == "arcticdb":
        import pandas as pd
        from arcticdb import Arctic
        lib = Arctic(f"lmdb://{path}").get_library("bench")

        def read(day, symbol):
            start = pd.Timestamp(day)
            return lib.read(symbol, date_range=(start, start + pd.Timedelta(days=1)
                                               - pd.Timedelta(1, "ns"))).data
    elif kind == "pickle":
        def read(day, symbol):
            with open(os.path.join(path, day, f"{symbol}.pkl"), "rb") as fh:
                return pickle.load(fh)
    else:
        raise ValueError(f"no reader {kind!r}")
    return read


def arctic_plain(df: Any) -> Any:
    """An ArcticDB slice (timestamp index, time as int32 seconds) with the columns the other
    stores return, for checking only."""
    import pandas as pd
    return df.reset_index(drop=True).assign(
        date=df.index.normalize().values, time=pd.to_timedelta(df["time"].to_numpy(), unit="s"))


def read_slices(read: Callable[[str, str], Any], kind: str, slices: list[tuple[str, str]],
                full: bool) -> tuple[int, Digest | None]:
    """Read every (day, symbol) slice with ``read``: the rows counted from the answers and,
    when ``full``, the digest of every value read.  No answer is kept past its digest: with a
    few symbols a slice is a whole ticker-day (1 M rows in a 20 M-row day), and 200 of them as
    pandas frames of str objects outgrow the machine's memory."""
    rows, parts = 0, []
    for day, symbol in slices:
        frame = read(day, symbol)
        rows += len(frame)
        if full:
            parts.append(digest(arctic_plain(frame) if kind == "arcticdb" else frame))
        del frame
    return rows, (merge_digests(parts) if full else None)


def client_main(conn, kind: str, path: str) -> None:
    """One client process: open the store, then read the slices it is sent until told to
    stop; answers (rows, digest of every slice read, or None when not asked to check)."""
    try:
        read = open_reader(kind, path)
        conn.send(("ready", None))
        while (job := conn.recv()) is not None:
            slices, full = job
            conn.send(("done", read_slices(read, kind, slices, full)))
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

    def run(self, jobs: list[list[tuple[str, str]]], full: bool) -> tuple[int, Any]:
        """Client i reads jobs[i]; returns the total rows once all are done, and when ``full``
        the digest of every slice read."""
        for conn, job in zip(self.conns, jobs):
            conn.send((job, full))
        done = [self._receive(conn) for conn in self.conns[:len(jobs)]]
        return sum(d[0] for d in done), (merge_digests([d[1] for d in done]) if full else None)

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
    from hfq.engine.read import pandas_ready  # what Query.to_pandas gives, a ticker at a time
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
    pairs: list[tuple[str, str]] = []
    arctic_started = False
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
        # pickle: one file per (day, symbol), the pandas frame a user would have saved;
        # ArcticDB: one library symbol per ticker over all days, indexed by timestamp (its
        # natural layout; a day is then a date_range read), appended to day by day.  Both are
        # built a ticker at a time from hfq's answer, where each ticker's rows are contiguous
        # (a partition is sorted by symbol, time): a 20 M-row day as pandas frames with str
        # objects, copied for each layout, does not fit in memory.
        os.makedirs(os.path.join(paths["pickle"], day))
        codes = day_arrow.column("symbol").to_pandas().cat.codes.to_numpy()
        starts = np.concatenate([[0], np.flatnonzero(codes[1:] != codes[:-1]) + 1])
        assert len(np.unique(codes[starts])) == len(starts), "a ticker's rows are not contiguous"
        payloads: list = []
        for start, stop in zip(starts, [*starts[1:], len(codes)]):
            group = pandas_ready(day_arrow.slice(start, stop - start)).to_pandas(
                date_as_object=False).astype(
                {"symbol": object, "ex": object, "mmid": object})
            symbol = group["symbol"].iat[0]
            with open(os.path.join(paths["pickle"], day, f"{symbol}.pkl"), "wb") as fh:
                pickle.dump(group, fh, protocol=pickle.HIGHEST_PROTOCOL)
            pairs.append((day, symbol))
            group.index = pd.DatetimeIndex(group["date"].astype("datetime64[ns]")
                                           + group["time"])
            payloads.append(WritePayload(str(symbol), group.drop(columns=["date"]).assign(
                time=group["time"].dt.total_seconds().astype("int32"))))
            if sum(len(w.data) for w in payloads) >= 1_000_000:
                arctic_write(lib, payloads, first=not arctic_started)
                payloads = []
        arctic_write(lib, payloads, first=not arctic_started)
        arctic_started = True
        del day_arrow
    duck.close()
    return paths, sorted(pairs)


def arctic_write(lib: Any, payloads: list, first: bool) -> None:
    """Write (on the first day) or append (later days) these tickers' frames."""
    if payloads:
        (lib.write_batch if first else lib.append_batch)(payloads)


def stores(bench: Bench) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """The stores of :func:`build_stores`, built once per data shape."""
    if "stores" not in bench.cache:
        bench.log("  building the stores (hfq, DuckDB, Parquet, ArcticDB, pickle files) ...")
        bench.cache["stores"] = build_stores(bench, os.path.join(bench.work, "point"))
    return bench.cache["stores"]


LAYOUTS = {
    "hfq": "hfq scan -> pyarrow",
    "duckdb": "DuckDB select where -> arrow (table sorted by symbol, time)",
    "parquet": "Parquet (zstd; a file a day sorted by symbol, time; 64Ki-row groups) with "
               "filter -> pyarrow",
    "arcticdb": "ArcticDB LMDB date_range read (a library symbol per ticker) -> pandas",
    "pickle": "pickle.load (one file per symbol and day) -> pandas",
}


def slice_jobs(bench: Bench, pairs: list[tuple[str, str]], clients: int
               ) -> list[list[tuple[str, str]]]:
    """Client i's random (day, symbol) slices, the same for every store: 200 (20 for a
    smoke test), fewer when slices are large -- with a few symbols a slice is a whole
    ticker-day, and each client reads at most about 20 M rows a run."""
    per_slice = bench.rows * bench.days / len(pairs)
    per_client = 20 if bench.quick else min(200, max(10, int(20e6 // per_slice)))
    return [[pairs[k] for k in np.random.default_rng(1000 + i).integers(0, len(pairs),
                                                                       per_client)]
            for i in range(clients)]


def scenario_point(bench: Bench) -> None:
    """Random (symbol, day) slices read one after another in this process, from hfq and each
    peer in its best layout (:data:`LAYOUTS`): warm (every store's files in the page cache,
    hfq's decoded batches in its cache; also hfq without that cache) and cold (every file of
    every store evicted from the page cache, each store opened afresh, hfq's cache empty)."""
    paths, pairs = stores(bench)
    job = slice_jobs(bench, pairs, 1)[0]
    kinds = ["hfq", "hfq-nocache", "duckdb", "parquet", "arcticdb", "pickle"]
    names = dict(LAYOUTS, **{"hfq-nocache": "hfq scan -> pyarrow, no cache of decoded batches"})
    path = dict(paths, **{"hfq-nocache": paths["hfq"]})
    readers = {k: open_reader(k, path[k]) for k in kinds}

    def contender(kind: str) -> Answer:
        def run(full: bool) -> tuple[int, Any]:
            return read_slices(readers[kind], kind, job, full)
        return Answer(run)

    def cold() -> None:
        from hfq.storage.cache import clear_process_caches
        readers.clear()
        clear_process_caches()
        evict(*paths.values())
        readers.update({k: open_reader(k, path[k]) for k in kinds})

    per = len(job)
    for cache, prepare in (("warm", None), ("cold", cold)):
        chosen = kinds if cache == "warm" else [k for k in kinds if k != "hfq-nocache"]
        results = measure(bench, f"read one symbol ({cache})",
                          {names[k]: contender(k) for k in chosen}, prepare=prepare,
                          cache=cache)
        for res in results:
            res.notes = f"{res.median / per * 1e3:.3f} ms per slice ({res.rows // per:,} rows)"
            res.extra = {"slices": per, "ms_per_slice": res.median / per * 1e3}
        bench.summary[bench.name(f"read one symbol ({cache})")] = [
            f"- {per} random (symbol, day) slices, one after another in one process, "
            f"{cache} page cache; hfq {results[0].median / per * 1e3:.3f} ms per slice "
            "(target <= 0.5 ms warm)."]


def scenario_concurrent(bench: Bench) -> None:
    paths, pairs = stores(bench)
    counts = (1, 2) if bench.quick else CLIENTS
    jobs = slice_jobs(bench, pairs, max(counts))
    per_client = len(jobs[0])
    with contextlib.ExitStack() as stack:
        bench.log(f"  starting {len(LAYOUTS)} x {max(counts)} client processes ...")
        pools = {}
        for kind in LAYOUTS:
            pools[kind] = Clients(kind, paths[kind], max(counts))
            stack.callback(pools[kind].close)
        by_count = {}
        for n in counts:
            scenario = f"concurrent: {n} client{'s' if n > 1 else ''}"
            results = measure(bench, scenario, {
                LAYOUTS[kind]: Answer(lambda full, pool=pools[kind], n=n:
                                      pool.run(jobs[:n], full))
                for kind in LAYOUTS})
            for res in results:
                res.extra = {"clients": n, "series": res.contender,
                             "slices": n * per_client}
            by_count[n] = results
    hfq_rates = {n: mrows(rs[0].rows, rs[0].median) for n, rs in by_count.items()}
    lines = [f"- {per_client} random (symbol, day) slices per client, ~"
             f"{by_count[counts[0]][0].rows // per_client:,} rows each; "
             f"{os.cpu_count()} cores for up to {max(counts)} clients; every slice's every "
             "value checked against the other stores."]
    for n, results in by_count.items():
        hfq_r = results[0]
        best = min(results[1:], key=lambda r: r.median)
        lines.append(f"- {n} client(s): hfq {hfq_rates[n]:.2f} M rows/s total; fastest peer "
                     f"{best.contender.split(' (')[0].split(' ->')[0]} "
                     f"{mrows(best.rows, best.median):.2f} M rows/s "
                     f"(hfq {speedup(best, hfq_r)} it).")
        for res in results:
            res.notes = (f"{mrows(res.rows, res.median) / n:.2f} M rows/s per client; "
                         f"{res.median / per_client * 1e3:.2f} ms per slice")
    top = max(counts)
    lines.append(f"- hfq from 1 to {top} clients: {hfq_rates[top] / hfq_rates[counts[0]]:.2f}x "
                 f"the total rate (target >= 1.6x at 4 clients).")
    bench.summary[bench.name(f"concurrent: {counts[-1]} clients")] = lines
