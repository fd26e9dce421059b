"""What every benchmark scenario shares: the results, the timing loop, the data, the clusters.

Map functions run in the node servers, which cannot import these files (benchmarks/ is not on
their path), so they travel by value: :meth:`ClusterSession.connect` registers every benchmark
module with cloudpickle by value.  The numba dispatchers go along: numba pickles their Python
functions, and each server compiles them on first call or loads them from its node's
NUMBA_CACHE_DIR (``cache=True``).
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import pickle
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numba
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
    extra: dict = field(default_factory=dict)   # more fields for results.json (and the plots)

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
    summary: dict[str, list[str]] = field(default_factory=dict)   # scenario -> report lines
    cache: dict = field(default_factory=dict)                     # data shared by scenarios
    session: ClusterSession | None = None                         # the one running cluster

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
            *, repeats: int | None = None, warmup: bool = True,
            rtol: float = 1e-9) -> list[Result]:
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
    agree(scenario, results, rtol=rtol)
    bench.results.extend(results)
    for res in results:
        bench.log(f"  {scenario:18s} {res.contender:34s} {res.median:8.3f} s  "
                  f"{res.rows:>12,} rows")
    return results


def agree(scenario: str, results: list[Result], rtol: float = 1e-9) -> None:
    """Every contender must return the same rows (count, and a checksum of prices -- or a
    tuple of numbers, compared element by element)."""
    first = results[0]
    for res in results[1:]:
        if res.rows != first.rows or not np.allclose(np.asarray(res.check, dtype=float),
                                                     np.asarray(first.check, dtype=float),
                                                     rtol=rtol, atol=0):
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


def load_pickle(path: str) -> Callable[[], tuple]:
    """The peer every read is measured against: ``pickle.load`` of a pandas DataFrame."""
    def run():
        with open(path, "rb") as fh:
            df = pickle.load(fh)
        return len(df), price_check(df)
    return run


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



# -- the spread kernel and map functions (cluster scenarios) ---------------------------------
OPEN_NS = (9 * 3600 + 30 * 60) * 10**9            # 09:30:00, nanoseconds since midnight
CLOSE_NS = (15 * 3600 + 59 * 60 + 59) * 10**9     # 15:59:59, inclusive
SPREAD_COLUMNS = ["bid", "ofr", "time"]


@numba.njit(cache=True, nogil=True)
def spread_kernel(bid, ofr, tod_ns, lo, hi):
    """(count, sum) of the relative quoted spread (ofr - bid) / (ofr + bid) * 2 over the rows
    with ofr > bid > 0 and lo <= time <= hi: the published spread query, one pass."""
    n = 0
    total = 0.0
    for i in range(bid.shape[0]):
        b = bid[i]
        o = ofr[i]
        t = tod_ns[i]
        if o > b and b > 0.0 and t >= lo and t <= hi:
            n += 1
            total += (o - b) / (o + b) * 2.0
    return n, total


def spread_map(df) -> tuple[int, float]:
    """One partition (polars) -> (count, sum); times of day as int64 ns (polars' physical)."""
    n, total = spread_kernel(df["bid"].to_numpy(), df["ofr"].to_numpy(),
                             df["time"].to_physical().to_numpy(), OPEN_NS, CLOSE_NS)
    return int(n), float(total)


def merge_sums(a: tuple[int, float], b: tuple[int, float]) -> tuple[int, float]:
    return a[0] + b[0], a[1] + b[1]


def one_per_partition(df) -> int:
    return 1


def spread_oracle(table) -> tuple[int, float]:
    """The same query in polars, on the in-memory source rows (no hfq, no numba)."""
    import polars as pl
    bid, ofr = pl.col("bid"), pl.col("ofr")
    out = (pl.from_arrow(table.select(SPREAD_COLUMNS))
           .filter((ofr > bid) & (bid > 0) &
                   pl.col("time").is_between(pl.time(9, 30), pl.time(15, 59, 59)))
           .select(pl.len(), ((ofr - bid) / (ofr + bid) * 2).sum()))
    return int(out.item(0, 0)), float(out.item(0, 1))


# -- cluster scenarios: data and clusters --------------------------------------------------------
@dataclass
class TaqData:
    """The synthetic rows every cluster scenario loads, with what checks them."""

    table: object            # pyarrow Table, every day
    oracle: tuple[int, float]
    arrays: tuple            # bid, ofr, time-of-day ns: numpy, for the bare kernel

    @property
    def rows(self) -> int:
        return self.table.num_rows


def cluster_data(bench: Bench) -> TaqData:
    if "taq" not in bench.cache:
        import polars as pl

        from hfq.demo import trading_days
        bench.log(f"  generating {bench.days} x {bench.rows:,} rows of TAQ in memory ...")
        table = synth.taq_table(dates=trading_days(DAY, bench.days), rows_per_day=bench.rows,
                                symbols=min(8000, max(50, bench.rows // 500)))
        frame = pl.from_arrow(table.select(SPREAD_COLUMNS))
        arrays = (frame["bid"].to_numpy(), frame["ofr"].to_numpy(),
                  frame["time"].to_physical().to_numpy())
        bench.cache["taq"] = TaqData(table, spread_oracle(table), arrays)
    return bench.cache["taq"]


class ClusterSession:
    """At most one local Ray cluster at a time (two at once would share the same cores), with
    the tables loaded into it; scenarios that need the same cluster share it."""

    def __init__(self, bench: Bench) -> None:
        self.bench = bench
        self.nodes = (0, 0)
        self.db = None
        self.tables: dict[str, hfq.Table] = {}
        self._stack: contextlib.ExitStack | None = None

    def connect(self, nodes: int, cpus: int = 1):
        """The database on a running cluster of ``nodes`` nodes x ``cpus`` CPUs (stopping any
        other one first)."""
        if self.nodes == (nodes, cpus):
            return self.db
        self.close()
        from ray import cloudpickle

        from hfq.testing import local_cluster
        for module in benchmark_modules():    # map functions must travel by value
            cloudpickle.register_pickle_by_value(module)
        root = os.path.join(self.bench.work, f"cluster_{nodes}n{cpus}c")
        shutil.rmtree(root, ignore_errors=True)
        for i in range(nodes):
            # fixed node names (hfq keeps a node's name in <its root>/.hfq-node, and
            # local_cluster's node i has root <root>/node<i>): placement, and so the split of
            # a 1-replica table over the nodes, is then the same in every run
            os.makedirs(os.path.join(root, f"node{i}"))
            with open(os.path.join(root, f"node{i}", ".hfq-node"), "w") as fh:
                json.dump({"name": f"node-{i}", "format": 1}, fh)
        # the driver holds the other node's half of a day in its object store (~50 B a row)
        store_mb = max(256, min(4096, self.bench.rows * 64 >> 20))
        self.bench.log(f"  starting a local Ray cluster: {nodes} node(s) x {cpus} CPU ...")
        stack = contextlib.ExitStack()
        try:
            lc = stack.enter_context(local_cluster(nodes, cpus_per_node=cpus, root=root,
                                                   object_store_mb=store_mb))
            self.db = lc.connect(progress="never")
        except BaseException:
            stack.close()
            raise
        self._stack, self.nodes = stack, (nodes, cpus)
        return self.db

    def table(self, name: str, data: TaqData, *, replicas: int) -> hfq.Table:
        """``data`` loaded once into this cluster as table ``name``."""
        if name not in self.tables:
            buckets = max(8, min(100, self.bench.rows // 200_000))
            table = self.db.create_table(
                name, hfq.schemas.TAQ, sort_by=("symbol", "time"), replicas=replicas,
                partition_by=hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", buckets)))
            start = time.perf_counter()
            table.append(data.table)
            self.bench.log(f"  loaded {data.rows:,} rows into {name!r} (replicas={replicas}, "
                           f"{len(table.snapshot().partitions)} partitions) in "
                           f"{time.perf_counter() - start:.1f} s")
            self.tables[name] = table
        return self.tables[name]

    def close(self) -> None:
        if self._stack is not None:
            self._stack.close()
        self._stack, self.nodes, self.db, self.tables = None, (0, 0), None, {}


def benchmark_modules() -> list:
    """This module and the scenario modules (the servers cannot import them)."""
    return [m for name, m in list(sys.modules.items())
            if name == __name__ or name == "scenarios" or name.startswith("scenarios.")]


def session(bench: Bench) -> ClusterSession:
    if bench.session is None:
        bench.session = ClusterSession(bench)
    return bench.session


def spread_job(table: hfq.Table, rows: int) -> Callable[[], tuple]:
    def run():
        return rows, table.map_reduce(spread_map, merge_sums, columns=SPREAD_COLUMNS,
                                      progress=False)
    return run


def check_oracle(scenario: str, name: str, got: tuple[int, float],
                 oracle: tuple[int, float]) -> None:
    """Counts exactly; sums to rounding (the oracle adds in another order)."""
    if got[0] != oracle[0] or not np.isclose(got[1], oracle[1], rtol=1e-9, atol=0):
        raise AssertionError(f"{scenario}: {name} gave {got}, the polars oracle {oracle}")


def mrows(rows: int, seconds: float) -> float:
    return rows / seconds / 1e6


def pa_date(day: str):
    import datetime as dt

    import pyarrow as pa
    return pa.scalar(dt.date.fromisoformat(day), type=pa.date32())

