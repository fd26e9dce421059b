"""Side-by-side benchmarks: hfq against the tools a quant researcher would otherwise pick.

    python benchmarks/run.py [--rows N] [--days D] [--quick] [--only NAME ...]
                             [--shapes many few zipf] [--out DIR]

Every scenario runs on each data shape (hfq.synth TAQ with many symbols of skewed activity, and
with a few symbols), runs each contender on the same rows with a warm-up and several timed
runs in alternating order, checks every contender's whole answer against the others before any
time counts, and writes ``report.md``, ``results.json`` and ``plots/*.png`` to ``--out``.
Figures are warm-page-cache unless marked cold (every file evicted with posix_fadvise before
each run).  ``--quick`` is a smoke test: tiny data, figures that are not measurements.

Scenarios (all of them by default; ``--only`` picks some):

* ``ingest``       -- raw TAQ CSV -> each store: rows/s and bytes on disk.
* ``read``         -- one full day into Python (arrow / polars / pandas), warm and cold; peak
  memory per reader; a fresh process reading one symbol-day.
* ``point``        -- random (symbol, day) slices one after another, warm and cold, vs each
  peer in its best layout.
* ``concurrent``   -- 1, 2, 4 client processes each reading random (symbol, day) slices: total
  rows/s, vs the same slices from DuckDB, Parquet, ArcticDB and one pickle per (symbol, day).
* ``packed_scan``  -- count and sum(price * amount) for two (exchange, pair) combinations over
  hfq's columns vs a memory-mapped packed 32-byte-row numpy array: rows/s per core.
* ``scaling``      -- a full scan and the three analytics on 1, 3 and 2 local nodes x 1 CPU.
* ``overhead``     -- hundreds of tiny partitions: scheduling cost per partition, in ms.
* ``scan_kernel``  -- the full-scan map-reduce end to end vs the bare numba kernel on numpy.
* ``cluster_read`` -- one day spread over 2 nodes into pandas / arrow, vs ``pickle.load``.
* ``analytics``    -- spread by minute (warm and cold), minute bars (written back) and OLS on
  1 node x 2 CPUs, vs DuckDB SQL (in memory and on its database file), polars and pandas.
* ``lifecycle``    -- data that changes: deleting/overwriting a symbol-day on 250 days vs 1,
  upserting 1% of a day vs DuckDB INSERT OR REPLACE / MERGE and ArcticDB update, as_of on
  10,000 versions vs 10.
* ``service``      -- 16 clients' symbol-day queries through ``hfq serve`` (ADBC, TLS) vs
  in-process, and a day fetched through it vs in-process and DuckDB.
* ``taq``          -- 60+ queries of every category of KX's NYSE TAQ benchmark over a NYSE Daily
  TAQ day (2026 format, loaded by ``load_taq``): hfq ``db.sql`` vs DuckDB and polars in memory.
* ``queries``      -- about thirty queries (filters, top-N, per-minute/hour groups, VWAP, joins,
  asof joins, windows, pivot) through hfq's engine vs DuckDB, polars and Daft (on Ray).

The cluster scenarios start local multi-node Ray clusters (``hfq.testing.local_cluster``), one at
a time; they run in the order above so that consecutive ones share a cluster.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import itertools
import multiprocessing
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import report  # noqa: E402
from harness import SHAPES, Bench  # noqa: E402
from scenarios import (  # noqa: E402 - one line each: scenarios are added by several people
    analytics,
    cluster,
    lifecycle,
    live,
    packed,
    queries,
    readers,
    scale,
    service,
    store,
    taq,
)

SCENARIOS = {"ingest": store.scenario_ingest, "read": store.scenario_read,
             "point": readers.scenario_point, "concurrent": readers.scenario_concurrent,
             "packed_scan": packed.scenario_packed,
             "scaling": cluster.scenario_scaling, "overhead": cluster.scenario_overhead,
             "scan_kernel": cluster.scenario_scan_kernel,
             "cluster_read": cluster.scenario_cluster_read,
             "analytics": analytics.scenario_analytics,
             "queries": queries.scenario_queries,
             "scale": scale.scenario_scale,
             "service": service.scenario_service,
             "taq": taq.scenario_taq,
             "lifecycle": lifecycle.scenario_lifecycle,
             "live": live.scenario_live,
             }


# scenarios that share data (bench.cache, a running cluster) run in one process, in this order
FAMILY = {"point": "slices", "concurrent": "slices",
          "scaling": "cluster", "overhead": "cluster", "scan_kernel": "cluster",
          "cluster_read": "cluster", "analytics": "cluster"}


def run_steps(bench: Bench, chosen: list[str], out: str, done: int, total: int,
              offset: float) -> tuple[list, dict]:
    """The scenarios ``chosen`` on ``bench.shape``'s data, in this (child) process, after
    ``done`` of the run's ``total`` steps and ``offset`` seconds; returns the results so far.
    The report so far is written after every step: a run killed later (out of memory, a lost
    terminal) keeps what it measured."""
    began = time.perf_counter() - offset
    bench.cache.clear()
    os.makedirs(bench.work, exist_ok=True)
    try:
        for i, name in enumerate(chosen, done + 1):
            start = time.perf_counter()
            label = f"[{i}/{total}] {name} ({SHAPES[bench.shape][0]})"
            bench.log(f"{label} ...")
            SCENARIOS[name](bench)
            bench.log(f"{label} done in {time.perf_counter() - start:.0f} s "
                      f"({time.perf_counter() - began:.0f} s so far)")
            bench.seconds = time.perf_counter() - began
            report.write(bench, out)
    finally:
        if bench.session is not None:
            bench.session.close()
            bench.session = None
    return bench.results, bench.summary


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=20_000_000, help="rows per day")
    p.add_argument("--days", type=int, default=1)
    p.add_argument("--quick", action="store_true", help="tiny sizes: a smoke test")
    p.add_argument("--only", nargs="+", choices=list(SCENARIOS), default=None,
                   metavar="NAME", help=f"run only these: {', '.join(SCENARIOS)}")
    p.add_argument("--out", default="bench_out")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--shapes", nargs="+", choices=list(SHAPES), default=["many", "few"],
                   help="the data's shapes, each running every chosen scenario: "
                   + "; ".join(f"{k} = {v[0]}" for k, v in SHAPES.items()))
    p.add_argument("--keep-data", action="store_true", help="keep the generated data in --out")
    args = p.parse_args(argv)
    if args.quick:
        args.rows, args.repeats = min(args.rows, 20_000), 1
    bench = Bench(out=args.out, rows=args.rows, days=args.days, repeats=args.repeats,
                  quick=args.quick)
    if args.quick:
        bench.log("SMOKE TEST (--quick): tiny data, one timed run each -- checks that every "
                  "scenario runs end to end; its figures are not measurements.")
    chosen = [n for n in SCENARIOS if args.only is None or n in args.only]
    began = time.perf_counter()
    steps = [(shape, name) for shape in args.shapes for name in chosen]
    # each group of scenarios that share data runs in a process of its own: what a group's
    # stores and peers (DuckDB, ArcticDB, the allocator's arenas) keep in memory cannot add
    # to the next group's peak (a 20 M-row day's point stores were OOM-killed after read)
    spawn = multiprocessing.get_context("spawn")
    done, failed = 0, []
    for (shape, _), group in itertools.groupby(steps, lambda s: (s[0], FAMILY.get(s[1], s[1]))):
        names = [name for _, name in group]
        bench.shape = shape
        try:
            with concurrent.futures.ProcessPoolExecutor(1, mp_context=spawn) as pool:
                bench.results, bench.summary = pool.submit(
                    run_steps, bench, names, args.out, done, len(steps),
                    time.perf_counter() - began).result()
        except concurrent.futures.process.BrokenProcessPool:   # killed: go on with the rest
            failed.append(f"{', '.join(names)} ({SHAPES[shape][0]})")
            bench.log(f"  the process running {failed[-1]} died (out of memory?); going on")
        done += len(names)
    bench.shape = args.shapes[0]
    bench.seconds = time.perf_counter() - began
    text = report.write(bench, args.out)
    print(text)
    if failed:
        print(f"not measured: the processes running {'; '.join(failed)} died")
    if not args.keep_data:
        shutil.rmtree(os.path.join(args.out, "work"), ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
