"""Where the time goes, for the rows of the benchmark report that miss their targets.

    python benchmarks/profile.py day      [--rows N]   # a day into pandas, stage by stage
    python benchmarks/profile.py fresh                  # a fresh process: imports, connect, read
    python benchmarks/profile.py analytics [--rows N]  # map_reduce's fixed cost vs the kernels
    python benchmarks/profile.py cluster  [--rows N]   # a day from 2 nodes: what each part costs
    python benchmarks/profile.py spread   [--rows N]   # spread_by_minute cold: disk, decode, kernel

Each prints a table of stages with their seconds (median of ``--repeats`` runs, warm page
cache), on the data the benchmarks use (``hfq.synth`` TAQ; ``--shape`` many or few symbols), under
``--out``/work.  The stages are the library's own functions called one after another in one
thread, so their sum is the CPU time a read or a job needs; the real call runs them on every
core at once.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import (  # noqa: E402
    CLOSE_NS,
    DAY,
    OPEN_NS,
    SHAPES,
    Bench,
    clear_node_caches,
    cluster_data,
    evict,
    make_csv,
    session,
    taq_table,
)


def timed(fn: Callable[[], Any], repeats: int) -> float:
    fn()
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def show(title: str, rows: list[tuple[str, float]], total: float | None = None) -> None:
    print(f"\n{title}")
    base = total if total is not None else sum(s for _, s in rows)
    for label, seconds in rows:
        print(f"  {label:58s} {seconds * 1e3:9.1f} ms  {seconds / base:6.1%}")


def profile_day(bench: Bench, repeats: int) -> None:
    """A day -> pandas (format 2), its stages in one thread: file bytes and checksums, the IPC
    frames opened, the blobs decoded straight into the result's buffers, the dictionary
    merge, the pandas conversion -- against ``pickle.load`` of the same frame with
    categoricals."""
    import pickle

    import pyarrow as pa
    import pyarrow.ipc as ipc

    import hfq
    from hfq.query.read import Assembler, pandas_type
    from hfq.storage import light
    from hfq.storage.fragment import check_read, load_file, read_fragment_pieces
    root = os.path.join(bench.work, "profile_day")
    if not os.path.exists(root):
        taq_table(bench, root, "zstd").db.load_csv("quotes", make_csv(bench), progress=False)
    table = hfq.connect(root)["quotes"]
    scan = table.session.plan_read(table.snapshot(), dates=DAY)   # what the read plans
    units, store, logical = scan.plan.units, table.session.store, scan.manifest.schema.arrow
    frags = [(u, f) for u in units for f in u.fragments]
    buffers = [load_file(store, f.file) for _, f in frags]
    if not light.is_light(ipc.open_file(pa.BufferReader(buffers[0])).schema):
        raise SystemExit("profile.py day profiles format-2 files; this table has older ones")

    def pieces() -> list[Any]:
        return [next(read_fragment_pieces(store, f, logical, [list(range(len(f.batches)))],
                                          encoded=True)) for _, f in frags]

    blobs = pieces()

    def assemble(finish: bool = True) -> Any:
        out = Assembler(logical, [u.rows for u in units], types=pandas_type)
        for i, piece in enumerate(blobs):
            out.fill(i, piece)
        return out.finish() if finish else out

    assembled = assemble()
    stages = [
        ("file bytes (memory map) + CRC-32 of every batch",
         timed(lambda: [check_read(load_file(store, f.file), f, None) for _, f in frags],
               repeats)),
        ("IPC frame and batches opened (the blobs, no decoding)", timed(pieces, repeats)),
        ("decoded straight into the result's buffers", timed(lambda: assemble(False),
                                                              repeats)),
        ("dictionary merge (finish)", max(0.0, timed(assemble, repeats)
                                          - timed(lambda: assemble(False), repeats))),
        ("pyarrow -> pandas (no copy: split blocks)", timed(
            lambda: assembled.to_pandas(date_as_object=False, split_blocks=True), repeats))]
    whole = timed(lambda: table.scan(dates=DAY).to_pandas(), repeats)
    frame = table.scan(dates=DAY).to_pandas()
    path = os.path.join(bench.work, "profile_day.pkl")
    with open(path, "wb") as fh:
        pickle.dump(frame, fh, protocol=pickle.HIGHEST_PROTOCOL)
    del frame

    def load() -> Any:
        with open(path, "rb") as fh:
            return pickle.load(fh)
    peer = timed(load, repeats)
    show(f"day -> pandas, {scan.plan.rows:,} rows, {len(frags)} files, one thread "
         f"(the stages' CPU time)", stages)
    print(f"  sum of stages {sum(s for _, s in stages):.3f} s; the real to_pandas on "
          f"{table.session.settings.threads} threads {whole:.3f} s; pickle.load (categoricals) "
          f"{peer:.3f} s (hfq {peer / whole:.2f}x)")


def profile_fresh(repeats: int) -> None:
    """A new process: ``import pyarrow, polars`` (the target's yardstick), then pandas, hfq,
    connect, one symbol-day."""
    code = """
import time; t0 = time.perf_counter()
import pyarrow, polars
t1 = time.perf_counter()
import pandas
t2 = time.perf_counter()
import hfq
t3 = time.perf_counter()
print(t1 - t0, t2 - t1, t3 - t2)
"""
    runs = []
    for _ in range(repeats + 1):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True).stdout.split()
        runs.append([float(x) for x in out])
    med = [statistics.median(r[i] for r in runs[1:]) for i in range(3)]
    show("fresh process: imports (the read itself is in the benchmark's row)",
         [("import pyarrow, polars (the yardstick)", med[0]),
          ("import pandas (to_pandas needs it)", med[1]), ("import hfq", med[2])])
    print(f"  the target, 1.3 x the yardstick, leaves {0.3 * med[0]:.3f} s for pandas, hfq, "
          f"connect and the read; importing pandas alone takes {med[1]:.3f} s")


def profile_analytics(bench: Bench, repeats: int) -> None:
    """OLS and spread on 1 node x 2 CPUs: a job that does nothing per partition (the fixed
    cost of map_reduce), each analytic end to end, its kernel in this process on the whole
    day in one thread, and polars on the in-memory frame."""
    import numpy as np
    import polars as pl

    from hfq import analytics as ha
    from hfq.analytics.kernels import MINUTES, FusedOLS, spread_minutes
    from scenarios.analytics import ols_exprs
    data = cluster_data(bench)
    db = session(bench).connect(1, cpus=2)
    table = session(bench).table("quotes_2cpu", data, replicas=1)
    y, x, where = ols_exprs()
    frame = pl.from_arrow(data.table)
    fused = FusedOLS([x.cast(pl.Float64), y.cast(pl.Float64)], where)
    cols = frame.select("bid", "ofr", "bidsiz", "ofrsiz")
    t, b, o = (frame["time"].to_physical().to_numpy(), frame["bid"].to_numpy(),
               frame["ofr"].to_numpy())

    def spread_kernel() -> None:
        spread_minutes(t, b, o, OPEN_NS, CLOSE_NS, 1.2, np.zeros(MINUTES),
                       np.zeros(MINUTES, dtype=np.int64))
    rows = [("map_reduce doing nothing per partition (fixed cost)", timed(
                lambda: table.map_reduce(lambda df: df.height, lambda a, c: a + c,
                                         columns=["bid"], progress=False), repeats)),
            ("ols end to end (1 node x 2 CPUs)", timed(
                lambda: ha.ols(table, y=y, x={"q": x}, where=where, progress=False), repeats)),
            ("  its fused kernel over the whole day in this process, 1 thread",
             timed(lambda: fused.moments(cols), repeats)),
            ("  polars on the in-memory frame (mean, cov, var; 2 threads)", timed(
                lambda: frame.lazy().filter(where).select(y=y, x=x).select(
                    n=pl.len(), mx=pl.col("x").mean(), my=pl.col("y").mean(),
                    cxy=pl.cov("x", "y"), vx=pl.col("x").var()).collect(), repeats)),
            ("spread_by_minute end to end (1 node x 2 CPUs)", timed(
                lambda: ha.spread_by_minute(table, progress=False), repeats)),
            ("  its kernel over the whole day in this process, 1 thread",
             timed(spread_kernel, repeats))]
    print(f"\nanalytics, {data.rows:,} rows in {len(table.snapshot().partitions)} partitions "
          f"({db.settings.compression}), warm node cache")
    for label, seconds in rows:
        print(f"  {label:66s} {seconds * 1e3:8.1f} ms")


def profile_cluster(bench: Bench, repeats: int) -> None:
    """A day from 2 nodes x 1 CPU into pandas: the whole read, the units this driver's node
    holds alone, the other node's alone (files sent, decoded here), and the bytes sent."""
    from hfq.query.read import ReadTask, decoded
    data = cluster_data(bench)
    db = session(bench).connect(2)
    table = session(bench).table("quotes_r1", data, replicas=1)
    nodes = db.session.nodes_for(start=True)
    scan = table.session.plan_read(table.snapshot(), dates=DAY)   # what the read plans
    units = scan.plan.units
    local = [u for u in units if nodes.local in nodes.unit_holders(u)]
    remote = [u for u in units if nodes.local not in nodes.unit_holders(u)]

    def run(chosen: list[Any]) -> None:
        # units held here are read and decoded in this process; the others' files are sent
        # as stored and decoded here (finish), as a whole-day scan does
        nodes.run_units(ReadTask(scan.spec, encoded=True), chosen, lambda i, v: None,
                        here=True, threads=db.settings.threads,
                        local_task=ReadTask(scan.spec),
                        finish=lambda unit, value, node: decoded(scan.spec, unit, value, node))
    sent = sum(f.bytes for u in remote for f in u.fragments)
    rows = [("the whole day -> pandas", timed(lambda: table.scan(dates=DAY).to_pandas(),
                                              repeats)),
            (f"  {len(local)} units held here, read here -> arrow", timed(lambda: run(local),
                                                                          repeats)),
            (f"  {len(remote)} units of the other node: files sent ({sent / 2**20:,.0f} MiB), "
             "decoded here -> arrow", timed(lambda: run(remote), repeats))]
    print(f"\ncluster read, {data.rows:,} rows, 2 nodes x 1 CPU, 1 replica")
    for label, seconds in rows:
        print(f"  {label:78s} {seconds * 1e3:8.1f} ms")


def profile_spread(bench: Bench, repeats: int) -> None:
    """spread_by_minute cold (the report's cold row: every partition file evicted from the
    page cache, the node caches emptied) and warm on 1 node x 2 CPUs, against its stages in
    this process, one thread, partition by partition: the 3 columns read from evicted files
    (disk, zstd, hfq's decodings, checksums), the same from the page cache, the polars frame
    the map function gets, the kernel."""
    import numpy as np
    import polars as pl

    from hfq import analytics as ha
    from hfq.analytics.kernels import MINUTES, floats, spread_minutes, time_ns
    from hfq.storage.fragment import read_fragment
    data = cluster_data(bench)
    db = session(bench).connect(1, cpus=2)
    table = session(bench).table("quotes_2cpu", data, replicas=1)
    roots = [i.root for i in db.session.runtime().infos()]
    scan = table.session.plan_read(table.snapshot(), dates=DAY, columns=["time", "bid", "ofr"])
    store, logical = db.session.nodes.store, scan.manifest.schema.arrow
    records = [f for u in scan.plan.units for f in u.fragments]

    def read_all() -> list[Any]:
        return [read_fragment(store, r, logical, columns=["time", "bid", "ofr"])
                for r in records]

    def cold(fn: Callable[[], Any]) -> Callable[[], Any]:
        def run() -> Any:
            clear_node_caches(db)
            evict(*roots)
            start = time.perf_counter()
            fn()
            return time.perf_counter() - start
        return run

    def cold_timed(fn: Callable[[], Any]) -> float:
        return statistics.median(cold(fn)() for _ in range(repeats))

    tables = read_all()
    frames = [pl.from_arrow(t).rechunk() for t in tables]

    def kernel() -> None:
        for df in frames:
            spread_minutes(time_ns(df["time"]), floats(df["bid"]), floats(df["ofr"]),
                           OPEN_NS, CLOSE_NS, 1.2, np.zeros(MINUTES),
                           np.zeros(MINUTES, dtype=np.int64))
    on_disk = sum(f.bytes for f in records)
    rows = [("spread_by_minute end to end, cold (1 node x 2 CPUs)",
             cold_timed(lambda: ha.spread_by_minute(table, progress=False))),
            ("spread_by_minute end to end, warm node cache",
             timed(lambda: ha.spread_by_minute(table, progress=False), repeats)),
            ("  3 columns read from evicted files, 1 thread (disk, zstd, decodings, CRC)",
             cold_timed(read_all)),
            ("  the same from the page cache, 1 thread (zstd, decodings, CRC)",
             timed(read_all, repeats)),
            ("  the polars frames the map function gets (contiguous), 1 thread",
             timed(lambda: [pl.from_arrow(t).rechunk() for t in tables], repeats)),
            ("  the kernel over every partition, 1 thread", timed(kernel, repeats))]
    print(f"\nspread_by_minute, {data.rows:,} rows in {len(records)} files "
          f"({on_disk / 2**20:,.0f} MiB on disk, all columns; {db.settings.compression})")
    for label, seconds in rows:
        print(f"  {label:78s} {seconds * 1e3:8.1f} ms")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("what", choices=["day", "fresh", "analytics", "cluster", "spread"])
    p.add_argument("--rows", type=int, default=20_000_000)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--out", default="bench_out/profile")
    p.add_argument("--shape", choices=list(SHAPES), default="many",
                   help="the data's shape: " + "; ".join(f"{k} = {v[0]}"
                                                         for k, v in SHAPES.items()))
    args = p.parse_args()
    bench = Bench(out=args.out, rows=args.rows, days=1, repeats=args.repeats, quick=False,
                  shape=args.shape)
    os.makedirs(bench.work, exist_ok=True)
    try:
        if args.what == "day":
            profile_day(bench, args.repeats)
        elif args.what == "fresh":
            profile_fresh(args.repeats)
        elif args.what == "analytics":
            profile_analytics(bench, args.repeats)
        elif args.what == "spread":
            profile_spread(bench, args.repeats)
        else:
            profile_cluster(bench, args.repeats)
    finally:
        if bench.session is not None:
            bench.session.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
