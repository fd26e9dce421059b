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
from typing import Any

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
    cache: str = "warm"                         # the page cache state of every run: warm / cold

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def low(self) -> float:
        return min(self.seconds)

    @property
    def high(self) -> float:
        return max(self.seconds)


def tie(a: Result, b: Result) -> bool:
    """Do the two contenders' run ranges overlap?  Then neither one won."""
    return a.low <= b.high and b.low <= a.high


def speedup(peer: Result, ours: Result) -> str:
    """``peer time / our time`` as ``1.23x``, marked ``(tie)`` when the run ranges overlap."""
    return f"{peer.median / ours.median:.2f}x" + (" (tie)" if tie(peer, ours) else "")


def target_met(peer: Result, ours: Result, goal: float) -> bool:
    """``peer time / our time >= goal``, and not a tie: overlapping run ranges win nothing."""
    return peer.median / ours.median >= goal and not tie(peer, ours)


def target_line(label: str, ours: Result, peer: Result, goal: float,
                peer_name: str | None = None) -> str:
    """One of the issue's ratio targets as a report line: ``- label: **1.23x** peer (target
    >= 2x: not met).``, the ratio marked ``(tie)`` when the run ranges overlap."""
    return (f"- {label}: **{speedup(peer, ours)}** {peer_name or peer.contender} (target >= "
            f"{goal:g}x: {'met' if target_met(peer, ours, goal) else 'not met'}).")


@dataclass
class Bench:
    out: str
    rows: int
    days: int
    repeats: int
    quick: bool
    shape: str = "many"                                           # the data's shape (SHAPES)
    results: list[Result] = field(default_factory=list)
    summary: dict[str, list[str]] = field(default_factory=dict)   # scenario -> report lines
    cache: dict = field(default_factory=dict)                     # data shared by scenarios
    session: ClusterSession | None = None                         # the one running cluster
    seconds: float = 0.0                                          # the whole run's wall time

    @property
    def work(self) -> str:
        return os.path.join(self.out, "work", self.shape)

    @property
    def symbols(self) -> int:
        """Tickers in the data: many (skewed activity) or a few (SHAPES)."""
        return SHAPES[self.shape][1](self.rows)

    @property
    def zipf(self) -> float | None:
        """The Zipf exponent of the symbols' activity (issue 29's second shape), else None
        (hfq.synth's lognormal activity)."""
        return 1.1 if self.shape == "zipf" else None

    def buckets(self, default: int) -> int:
        """Hash buckets on symbol: the second shape's 50, else ``default``."""
        return 50 if self.shape == "zipf" else default

    def name(self, scenario: str) -> str:
        """A scenario's name in the results: the default shape unmarked, others suffixed."""
        return scenario if self.shape == "many" else f"{scenario} [{SHAPES[self.shape][0]}]"

    def log(self, text: str) -> None:
        print(text, flush=True)


SHAPES: dict[str, tuple[str, Callable[[int], int]]] = {
    # hfq.synth's tickers have lognormal activity (sigma 1.6: the top 1% of the symbols carry
    # about a quarter of the quotes), times written H:MM:SS without a leading zero
    "many": ("many symbols", lambda rows: min(8000, max(50, rows // 500))),
    "few": ("few symbols", lambda rows: 20),
    # issue 29's second shape (measured from outside at 5 M rows, times H:MM:SS): 2,000
    # symbols with Zipf(1.1) activity, 50 buckets -- run it with --rows 5000000
    "zipf": ("2,000 symbols Zipf(1.1)", lambda rows: 2000),
}


# -- helpers -------------------------------------------------------------------------------------
def dir_bytes(path: str) -> int:
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


@dataclass
class Answer:
    """A contender whose whole answer is checked: ``run(full)`` -> (rows, check), where the
    check (a full-content digest, :func:`digest`) is computed only when ``full`` -- on the
    warm-up run, outside the timing; timed runs count rows from their answer only."""

    run: Callable[[bool], tuple[int, Any]]

    @classmethod
    def of(cls, read: Callable[[], Any], check: Callable[[Any], Any] | None = None,
           count: Callable[[Any], int] = len) -> Answer:
        """``read()`` returns a frame (or anything ``count`` and ``check`` take)."""
        def run(full: bool) -> tuple[int, Any]:
            out = read()
            return count(out), ((check or digest)(out) if full else None)
        return cls(run)


def measure(bench: Bench, scenario: str,
            contenders: dict[str, Callable[[], tuple] | Answer], *,
            repeats: int | None = None, warmup: bool = True, rtol: float = 1e-9,
            prepare: Callable[[], None] | None = None, cache: str = "warm",
            same_answer: bool = True) -> list[Result]:
    """Run every contender once to warm up, then ``repeats`` times in alternating order.

    A plain contender returns (rows, check) on every run; an :class:`Answer` has its full
    answer checked on the warm-up run and its rows counted on every run.  Contenders must
    agree before any time counts.  ``prepare()`` runs before every run, untimed (e.g.
    evicting the page cache for a cold row: ``cache="cold"``).  ``same_answer=False``: the
    contenders do different work (the caller checks what can be compared)."""
    repeats = repeats or bench.repeats
    if bench.quick:   # a smoke test: one run of each contender, checked (and timed, unwarmed)
        repeats, warmup = 1, False
    scenario = bench.name(scenario)
    names = list(contenders)
    times: dict[str, list[float]] = {n: [] for n in names}
    outputs: dict[str, tuple] = {}

    def call(name: str, full: bool) -> tuple:
        if prepare is not None:
            prepare()
        gc.collect()
        fn = contenders[name]
        start = time.perf_counter()
        out = fn.run(full) if isinstance(fn, Answer) else fn()
        took = time.perf_counter() - start
        if full or not isinstance(fn, Answer):
            outputs[name] = out
        elif out[0] != outputs[name][0]:
            raise AssertionError(f"{scenario}: {name} returned {out[0]} rows, "
                                 f"{outputs[name][0]} on its checked run")
        return took

    for name in names:
        took = call(name, True)
        if not warmup:
            times[name].append(took)
    for r in range(repeats - (0 if warmup else 1)):
        order = names if r % 2 == 0 else list(reversed(names))
        for name in order:
            times[name].append(call(name, False))
    results = [Result(scenario, n, times[n], outputs[n][0], check=outputs[n][1], cache=cache)
               for n in names]
    if same_answer:
        agree(scenario, results, rtol=rtol)
    bench.results.extend(results)
    for res in results:
        bench.log(f"  {scenario:18s} {res.contender:34s} {res.median:8.3f} s  "
                  f"{res.rows:>12,} rows ({cache})")
    return results


def agree(scenario: str, results: list[Result], rtol: float = 1e-9) -> None:
    """Every contender must return the same rows: the count, and the same check -- a digest
    of the whole answer (compared exactly), or a tuple of numbers (compared element by
    element to ``rtol``)."""
    first = results[0]
    for res in results[1:]:
        same = res.check == first.check if isinstance(first.check, Digest) else np.allclose(
            np.asarray(res.check, dtype=float), np.asarray(first.check, dtype=float),
            rtol=rtol, atol=0)
        if res.rows != first.rows or not same:
            raise AssertionError(
                f"{scenario}: {res.contender} returned {res.rows} rows / check {res.check}, "
                f"{first.contender} returned {first.rows} rows / check {first.check}")


class Digest(tuple):
    """(rows, columns, an order-independent hash of every value of every row)."""


def as_polars(frame: Any) -> Any:
    """A pandas, arrow or polars answer as a polars DataFrame (values as they are)."""
    import pandas as pd
    import polars as pl
    if isinstance(frame, pd.DataFrame):
        return pl.from_pandas(frame)
    if isinstance(frame, pl.DataFrame):
        return frame
    return pl.from_arrow(frame)


def canonical(frame: Any) -> Any:
    """A frame (pandas, arrow, polars) as polars with one representation per kind of value:
    text as strings, integers as Int64, floats as Float64, dates as Date, times of day as
    nanoseconds since midnight (Int64) -- so equal answers compare equal whatever their
    container; columns by name."""
    import polars as pl
    df = as_polars(frame)
    exprs = []
    for name, dtype in df.schema.items():
        col = pl.col(name)
        if dtype in (pl.Categorical, pl.String) or isinstance(dtype, pl.Enum):
            col = col.cast(pl.String)
        elif dtype == pl.Time:
            col = col.cast(pl.Int64)
        elif isinstance(dtype, pl.Duration):
            col = col.dt.total_nanoseconds()
        elif isinstance(dtype, pl.Datetime):
            col = col.dt.date()
        elif dtype.is_integer():
            col = col.cast(pl.Int64)
        elif dtype.is_float():
            col = col.cast(pl.Float64)
        exprs.append(col.alias(name))
    return df.select(sorted(exprs, key=lambda e: e.meta.output_name()))


def digest(frame: Any) -> Digest:
    """Every value of every row of ``frame`` (or of a list of frames), in any row order:
    a wrapping sum of polars' row hashes over :func:`canonical` columns."""
    frames = frame if isinstance(frame, list) else [frame]
    rows, total, columns = 0, np.uint64(0), ()
    for f in frames:
        df = canonical(f)
        columns = tuple(df.columns)
        with np.errstate(over="ignore"):
            total += np.sum(df.hash_rows(seed=0).to_numpy(), dtype=np.uint64)
        rows += df.height
    return Digest((rows, columns, int(total)))


def merge_digests(parts: list[Digest]) -> Digest:
    """The digest of the union of answers digested apart (as :func:`digest` of them all)."""
    total = sum(p[2] for p in parts) % (1 << 64)
    return Digest((sum(p[0] for p in parts), parts[0][1] if parts else (), total))


def evict(*paths: str) -> None:
    """Drop every file under ``paths`` from the page cache (written back first):
    ``posix_fadvise(DONTNEED)`` needs no root for files this user can open."""
    for path in paths:
        files = [path] if os.path.isfile(path) else [
            os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs]
        for name in files:
            fd = os.open(name, os.O_RDONLY)
            try:
                os.fdatasync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def price_check(frame) -> float:
    """Sum of bid + ofr: a cheap checksum every contender's frame can compute."""
    import pyarrow as pa
    if isinstance(frame, pa.Table):
        import pyarrow.compute as pc
        return float(pc.sum(frame.column("bid")).as_py() + pc.sum(frame.column("ofr")).as_py())
    return float(frame["bid"].sum() + frame["ofr"].sum())   # pandas and polars alike


def load_pickle(path: str) -> Answer:
    """The peer every read is measured against: ``pickle.load`` of a pandas DataFrame."""
    def read():
        with open(path, "rb") as fh:
            return pickle.load(fh)
    return Answer.of(read)


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
                                                symbols=bench.symbols, zipf=bench.zipf)]


def taq_table(bench: Bench, root: str, compression: str) -> hfq.Table:
    db = hfq.connect(root, compression=compression)
    buckets = bench.buckets(max(1, min(100, bench.rows // 200_000)))
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
                                symbols=bench.symbols, zipf=bench.zipf)
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
            buckets = self.bench.buckets(max(8, min(100, self.bench.rows // 200_000)))
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


def take_node_cache(node) -> int:
    """In a node server (its ``call``): empty its cache of decoded partitions; returns the
    hits it has ever served (a count that clearing keeps)."""
    cache = node.cache
    if cache is None:
        return 0
    hits = cache.stats()["hits"]
    cache.clear()
    return hits


def clear_node_caches(db) -> int:
    """Empty the decoded-partition cache of every node server of ``db`` and this process's,
    so the next read decodes from the files; returns the hits the node caches have ever
    served (unchanged between two calls: nothing came from a node cache in between)."""
    import ray

    from hfq.storage.cache import clear_process_caches
    clear_process_caches()
    # each node's server, the driver's own node included (Nodes.call_each would run that one
    # in this process, which holds no node cache)
    servers = [db.session.runtime().server(name) for name in db.session.runtime().alive()]
    return sum(ray.get([s.call.remote(take_node_cache, ()) for s in servers]))


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

