"""Where the time goes, for the rows of the benchmark report that miss their targets.

    python benchmarks/profile.py day      [--rows N]   # a day into pandas, stage by stage
    python benchmarks/profile.py fresh                  # a fresh process: imports, connect, read
    python benchmarks/profile.py analytics [--rows N]  # map_reduce's fixed cost vs the kernels
    python benchmarks/profile.py cluster  [--rows N]   # a day from 2 nodes: what each part costs
    python benchmarks/profile.py spread   [--rows N]   # spread_by_minute cold: disk, decode, kernel
    python benchmarks/profile.py live  [--batches N]   # publish, ack -> SQL, subscribers

Each prints a table of stages with their seconds (median of ``--repeats`` runs, warm page
cache), on the data the benchmarks use (``hfq.synth`` TAQ; ``--shape`` many or few symbols), under
``--out``/work.  The stages are the library's own functions called one after another in one
thread, so their sum is the CPU time a read or a job needs; the real call runs them on every
core at once.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
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


# -- live (issue 26): publish, visibility, subscribers ------------------------------------------
VISIBLE_SQL = "SELECT count(*) AS n FROM live"
"""The query benchmarks/scenarios/live.py's visibility row polls after each ack."""
SNAP = "  of which the snapshot of live batches (LiveView.snapshot: the node's report)"
PLAN = "plan (stage: split, plan_read, live rows pinned, bind units)"
HAND = "handover of the new batch: slices, partitions' runs (prepare, install)"
PREP = "  its slices, one per partition (prepare)"
WRITE = "node: log write (writev, group-commit bookkeeping)"
RUN = "execution: run (the node stage on each unit here, the driver's merge)"
FETCH = "node: fetch (lock, catch_up, feed walk, rows served)"
FILL = "subscriber: visible, cast, combine, record batch, offset (_fill)"


def _clocks() -> tuple[float, float]:
    """Wall time and this thread's CPU time (which a loaded machine's other processes do
    not inflate; an fsync's wait for the disk is not in it)."""
    return time.perf_counter(), time.thread_time()


class _Stages:
    """Per stage, (wall, CPU) seconds per batch, in order of first use."""

    def __init__(self) -> None:
        self.times: dict[str, list[tuple[float, float]]] = {}

    def add(self, label: str, wall: float, cpu: float) -> None:
        self.times.setdefault(label, []).append((wall, cpu))

    @contextlib.contextmanager
    def on(self, label: str) -> Iterator[None]:
        wall, cpu = _clocks()
        yield
        wall2, cpu2 = _clocks()
        self.add(label, wall2 - wall, cpu2 - cpu)

    def last(self, label: str) -> tuple[float, float]:
        return self.times[label][-1]

    def less(self, label: str, inner: str) -> None:
        """``label``'s times less ``inner``'s (a stage that runs ``inner`` again)."""
        self.times[label] = [(a - c, b - d) for (a, b), (c, d)
                             in zip(self.times[label], self.times[inner])]

    def summary(self, first: int = 1, per: float | None = None
                ) -> dict[str, tuple[float, float, float]]:
        """Per stage, the wall time's p50 and mean and the CPU time's mean per batch -- of
        the batches after the ``first`` (the first calls load code and make caches); with
        ``per``: the totals / ``per`` (no p50: nan)."""
        if per is not None:
            return {k: (float("nan"), sum(w for w, _ in v) / per, sum(c for _, c in v) / per)
                    for k, v in self.times.items()}
        return {k: (statistics.median(w for w, _ in v[first:]),
                    statistics.fmean(w for w, _ in v[first:]),
                    statistics.fmean(c for _, c in v[first:])) for k, v in self.times.items()}


class _Parked:
    """Stands for a node's handover thread (alive, never woken): the profile hands batches
    over itself, timed, instead of a thread doing it beside the stages."""

    @staticmethod
    def is_alive() -> bool:
        return True


@contextlib.contextmanager
def _seam(owner: Any, name: str, spent: list[float]) -> Iterator[None]:
    """``owner.name`` timed while the block runs: each call's wall and CPU seconds added to
    ``spent`` (a seam, as the benchmark's group-commit row counts the log's fsyncs)."""
    real = getattr(owner, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        wall, cpu = _clocks()
        try:
            return real(*args, **kwargs)
        finally:
            wall2, cpu2 = _clocks()
            spent[0] += wall2 - wall
            spent[1] += cpu2 - cpu

    setattr(owner, name, timed)
    try:
        yield
    finally:
        setattr(owner, name, real)


def _turns(real: Callable[[dict], Iterator[None]], stages: Callable[[dict], Iterator[None]],
           n: int, real_runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The real calls and the stages, batch after batch in turns (which goes first
    alternates): the real figures appended to ``real_runs``, the stages' returned."""
    got_real: dict[str, Any] = {}
    got_stages: dict[str, Any] = {}
    turns = [real(got_real), stages(got_stages)]
    for g in turns:
        next(g)   # the tables made
    for k in range(n):
        for g in turns if k % 2 == 0 else turns[::-1]:
            next(g, None)
    real_runs.append(got_real)
    return got_stages


def _median_runs(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each figure's median over the runs (a tuple: each of its figures)."""
    out: dict[str, Any] = {}
    for k, v in runs[0].items():
        if isinstance(v, tuple):
            out[k] = tuple(statistics.median(r[k][i] for r in runs) for i in range(len(v)))
        else:
            out[k] = statistics.median(r[k] for r in runs)
    return out


def _total(rows: dict[str, tuple[float, ...]], i: int) -> float:
    """The sum of the stages (an indented label is a part of the stage above it)."""
    return sum(v[i] for k, v in rows.items() if not k.startswith(" "))


def _show_us(title: str, rows: dict[str, tuple[float, float, float]],
             rows_per: int | None = None) -> None:
    """Stages in microseconds: the wall time's p50 and mean and the CPU time's mean, the
    share of each of the wall p50s' sum (the means' when there is no p50) and of the CPU
    times' sum, and rows/s at the wall mean."""
    i = 0 if all(v[0] == v[0] for v in rows.values()) else 1
    total, cpu_total = _total(rows, i), _total(rows, 2)
    print(f"\n{title}")
    print(f"  {'stage':70s} {'wall p50':>8s} {'mean':>8s} {'CPU':>8s}   share  CPU share" +
          ("   rows/s" if rows_per else ""))

    def pct(x: float, part: bool) -> str:
        return f"({x:5.1%})" if part else f"{x:6.1%} "

    for label, (p50, mean, cpu) in rows.items():
        part = label.startswith(" ")
        p50_text = f"{p50 * 1e6:8.1f}" if p50 == p50 else f"{'':8s}"
        rate = f"  {rows_per / mean / 1e6:6.2f} M" if rows_per and mean else ""
        print(f"  {label:70s} {p50_text} {mean * 1e6:8.1f} {cpu * 1e6:8.1f}  "
              f"{pct(rows[label][i] / total, part)}  {pct(cpu / cpu_total, part)}{rate}")


def _publish_stages(work: str, batches: list[Any], repeats: int) -> tuple[dict, dict]:
    """One acknowledged publish, stage by stage -- the library's calls in ``publish``'s
    order on a table of their own: ``_conform``, ``_plan``, ``_send`` (its call to the node
    captured: ``log_batch`` replaced for it), then what the node's ``LiveTable.log`` does:
    ``catch_up``, ``encode``, the writer's ``append`` (its ``_sync`` seam timed: the fsync),
    ``_hold``; the handover a node thread does every 128 batches done here, timed apart --
    against the real ``pub.publish`` calls on another table, batch after batch in turns
    (both see the same load of the machine): per batch, each stage's wall p50 and mean and
    CPU mean, the real call's p50, mean, p99 and CPU (median of ``repeats`` runs)."""
    import numpy as np
    import pyarrow.compute as pc

    from hfq.live import log as livelog
    from hfq.live import publisher as livepub
    from hfq.live.log import Entry, encode
    from hfq.live.node import live_table
    from hfq.live.route import Router
    from scenarios.live import new_table
    stage_runs: list[dict[str, float]] = []
    real_runs: list[dict[str, float]] = []
    n = len(batches)
    for _ in range(repeats):
        def real(out: dict[str, Any]) -> Iterator[None]:
            _, t = new_table(os.path.join(work, "pub-real"))
            pub = t.publisher(name="bench")
            calls, cpus = [], []
            for b in batches:
                yield   # a batch each turn
                wall, cpu = _clocks()
                pub.publish(b)
                wall2, cpu2 = _clocks()
                calls.append(wall2 - wall)
                cpus.append(cpu2 - cpu)
            ms = np.array(calls[1:])   # the first call loads code and makes caches
            out.update({"mean": float(ms.mean()), "p50": float(np.percentile(ms, 50)),
                        "p99": float(np.percentile(ms, 99)),
                        "cpu": statistics.fmean(cpus[1:])})

        def stages(out: dict[str, Any]) -> Iterator[None]:
            _, t = new_table(os.path.join(work, "pub-stages"))
            sp = t.publisher(name="bench")
            nodes = sp.session.nodes
            lt = live_table(nodes.context(), sp.spec)
            lt.handover = _Parked()   # type: ignore[assignment]
            st = _Stages()
            sent: list[tuple[Any, Any]] = []
            synced: list[tuple[float, float]] = []
            real_sync, real_log = livelog._sync, livepub.log_batch

            def capture(node: Any, spec: Any, entry: Any, rows: Any) -> str:
                live_table(node, spec)   # the node's LiveTable looked up, as log_batch does
                sent.append((entry, rows))
                return "logged"

            def timed_sync(fd: int) -> None:
                wall, cpu = _clocks()
                real_sync(fd)
                wall2, cpu2 = _clocks()
                synced.append((wall2 - wall, cpu2 - cpu))

            handed = 0.0
            for b in batches:
                yield
                number = sp.seq + 1
                # a part of a stage is timed by a seam inside it (timing it apart, before
                # or after, would warm the CPU caches for the other)
                with st.on("conform to the schema (Publisher._conform)"):
                    rows = sp._conform(b)
                routed = [0.0, 0.0]
                with _seam(Router, "route", routed), \
                        st.on("route + slices by partition and day (Publisher._plan)"):
                    plan = sp._plan(number, f"{rows.num_rows:x}", rows)
                st.add("  route: partition of each row (Router.route)", *routed)
                livepub.log_batch = capture
                taken = [0.0, 0.0]
                try:
                    with _seam(pc, "take", taken), \
                            st.on("targets, rows in slice order, Entry, call to the node (_send)"):
                        sp._send(plan)
                finally:
                    livepub.log_batch = real_log
                st.add("  rows taken in slice order (pc.take)", *taken)
                entry, body = sent.pop()
                with st.on("node: other processes' streams looked at (catch_up)"), lt.lock:
                    lt.catch_up()
                writer = lt._writer()
                meta = [0.0, 0.0]
                with _seam(Entry, "meta", meta), \
                        st.on("node: frame encoded: Arrow IPC stream + meta + CRC (encode)"):
                    frame = encode(entry, body)
                st.add("  meta JSON (Entry.meta)", *meta)
                livelog._sync = timed_sync
                try:
                    with st.on(WRITE):
                        writer.append([frame])
                finally:
                    livelog._sync = real_sync
                (wall, cpu), (sync_wall, sync_cpu) = st.last(WRITE), synced[-1]
                st.times[WRITE][-1] = (wall - sync_wall, cpu - sync_cpu)
                st.add("node: fsync", sync_wall, sync_cpu)
                with st.on("node: rows held, slices numbered, feed (LiveTable._hold)"), \
                        lt.lock:
                    lt._hold(entry, body, writer.dir, writer.segment)
                sp.seq = number   # what publish does after the ack
                for s, _ in plan.slices:
                    sp._pseq[s.partition] = max(sp._pseq.get(s.partition, 0), s.pseq)
                if lt.pending.due():
                    start = time.perf_counter()
                    lt.hand_over()
                    handed += time.perf_counter() - start
            out.update(st.summary())
            out["handover"] = handed / n
        stage_runs.append(_turns(real, stages, n, real_runs))
    return _median_runs(stage_runs), _median_runs(real_runs)


def _show_publish(size: int, n: int, got: dict[str, Any], real: dict[str, float]) -> None:
    rows = {k: v for k, v in got.items() if k != "handover"}
    _show_us(f"one acknowledged publish of a {size:,}-row batch, embedded, per batch "
             f"({n} batches, one thread; us)", rows, rows_per=size)
    print(f"  sum of stages: wall p50s {_total(rows, 0) * 1e6:.1f} us, means "
          f"{_total(rows, 1) * 1e6:.1f} us, CPU {_total(rows, 2) * 1e6:.1f} us; the real "
          f"pub.publish: p50 {real['p50'] * 1e6:.1f} us, mean {real['mean'] * 1e6:.1f} us, "
          f"p99 {real['p99'] * 1e6:.1f} us, CPU {real['cpu'] * 1e6:.1f} us -> "
          f"{size / real['mean'] / 1e6:.2f} M rows/s")
    print(f"  off the ack path, a node thread: the handover to partitions every 128 batches "
          f"{got['handover'] * 1e6:.1f} us per batch (the 2 cores share it with the publisher)")


def _visibility_stages(work: str, batches: list[Any], repeats: int) -> tuple[dict, dict]:
    """After each acknowledged batch, the query the benchmark polls: its stages on one table
    (compile, the snapshot of live batches, the rest of planning, the handover of the new
    batch, the live rows read, execution) and the real ``db.sql(...).collect()`` until it
    counts the batch on another, batch after batch in turns."""
    import numpy as np

    from hfq.engine.execute import NodeStage, run, stage
    from hfq.live import rows as liverows
    from hfq.live.node import live_table
    from hfq.live.rows import prepare
    from hfq.live.snapshot import LiveFragment, LiveView
    from scenarios.live import new_table
    stage_runs, real_runs = [], []
    n = len(batches)
    for _ in range(repeats):
        def real(out: dict[str, Any]) -> Iterator[None]:
            db, t = new_table(os.path.join(work, "vis-real"))
            pub = t.publisher(name="bench")
            waits, cpus, polls, done = [], [], 0, 0
            for b in batches:
                yield   # a batch each turn
                pub.publish(b)
                done += b.num_rows
                wall, cpu = _clocks()
                while db.sql(VISIBLE_SQL).collect()["n"][0] < done:
                    polls += 1
                wall2, cpu2 = _clocks()
                waits.append(wall2 - wall)
                cpus.append(cpu2 - cpu)
            ms = np.array(waits[1:])
            out.update({"mean": float(ms.mean()), "p50": float(np.percentile(ms, 50)),
                        "p99": float(np.percentile(ms, 99)), "extra polls": polls / n,
                        "cpu": statistics.fmean(cpus[1:])})

        def stages(out: dict[str, Any]) -> Iterator[None]:
            db, t = new_table(os.path.join(work, "vis-stages"))
            pub = t.publisher(name="bench")
            ctx = db.session.nodes.context()
            lt = live_table(ctx, pub.spec)
            st = _Stages()
            done = 0
            for b in batches:
                yield
                pub.publish(b)
                done += b.num_rows
                with st.on("compile (db.sql: the statement cache)"):
                    q = db.sql(VISIBLE_SQL)
                snapped = [0.0, 0.0]
                with _seam(LiveView, "snapshot", snapped), st.on(PLAN):
                    staged = stage(q)
                st.add(SNAP, *snapped)
                with lt.lock:   # what a read's Pending.flush does, step by step
                    with st.on("handover of the new batch: taken (Pending.take)"):
                        taken = lt.pending.take()
                    with st.on(PREP):
                        ready = prepare(taken)
                    joins = [0.0, 0.0]
                    with _seam(liverows, "_joined", joins), st.on(HAND):
                        lt.pending.install(ready)
                    (a, b_), (c, d) = st.last(HAND), st.last(PREP)
                    st.times[HAND][-1] = (a + c, b_ + d)
                    st.add("  of which runs joined (_joined: Arrow concat, polars columns "
                           "extended)", *joins)
                reads, nodes_ = [0.0, 0.0], [0.0, 0.0]
                with _seam(LiveFragment, "read_frame", reads), \
                        _seam(NodeStage, "__call__", nodes_), st.on(RUN):
                    got = run(staged)[0]
                st.add("  of which live rows read, every partition (read_frame: "
                       "take_frame, polars)", *reads)
                st.add("  of which the node stage's plan over them (NodeStage, less "
                       "the reads)", nodes_[0] - reads[0], nodes_[1] - reads[1])
                st.add("  of which the rest: fast-path check, units batched, concat, "
                       "driver merge", st.last(RUN)[0] - nodes_[0],
                       st.last(RUN)[1] - nodes_[1])
                assert got["n"][0] == done, (got, done)
            out.update(st.summary())
        stage_runs.append(_turns(real, stages, n, real_runs))
    return _median_runs(stage_runs), _median_runs(real_runs)


def _subscriber_stages(work: str, batches: list[Any], repeats: int, readers: int = 4
                       ) -> tuple[dict, dict]:
    """A subscriber's poll loop over the published day, per 1,000 rows delivered: the node's
    ``fetch`` (of which the rows of each batch served, ``_served``), the subscriber's side
    of ``_fill`` (cast, combine, record batch, offset), the batches handed out by ``poll``;
    against one subscriber's real loop and ``readers`` at once in threads."""
    import threading

    from hfq.live import node as livenode
    from hfq.live import subscribe as livesub
    from scenarios.live import new_table
    stage_runs, real_runs = [], []
    total = sum(b.num_rows for b in batches)
    db, t = new_table(os.path.join(work, "sub"))
    pub = t.publisher(name="bench")
    for b in batches:
        pub.publish(b)
    ctx = db.session.nodes.context()
    lt = livenode.live_table(ctx, pub.spec)
    with lt.lock:
        lt.pending.flush()
    per = total / 1000

    def read_all(got: list[int], i: int) -> None:
        sub = t.subscribe(start="sod", wait_s=0)
        while (b := sub.poll()) is not None:
            got[i] += b.num_rows

    for _ in range(repeats):
        st = _Stages()
        sub = t.subscribe(start="sod", wait_s=0)
        seen, before = 0, -1
        while True:
            fetched, served = [0.0, 0.0], [0.0, 0.0]
            with _seam(livesub, "fetch", fetched), _seam(livenode, "_served", served), \
                    st.on(FILL):
                sub._fill()
            st.add(FETCH, *fetched)
            st.add("  rows of each batch sliced per partition, put together (_served)",
                   *served)
            with st.on("batches handed out (poll)"):
                while sub._ready:
                    got = sub.poll()
                    seen += got.num_rows if got is not None else 0
            if seen == before:   # a poll that brought nothing: the end of the day
                break
            before = seen
        assert seen == total, (seen, total)
        st.less(FILL, FETCH)   # the fetch is shown apart
        # a fetch serves up to max_rows: only the mean per 1,000 rows
        stage_runs.append(st.summary(per=per))
        one = [0]
        wall, cpu = _clocks()   # (the CPU of this thread: the subscriber's)
        read_all(one, 0)
        wall2, cpu2 = _clocks()
        alone, alone_cpu = wall2 - wall, cpu2 - cpu
        got = [0] * readers
        threads = [threading.Thread(target=read_all, args=(got, i)) for i in range(readers)]
        start = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        together = time.perf_counter() - start
        assert got == [total] * readers and one == [total]
        real_runs.append({"alone": alone / per, "cpu": alone_cpu / per, "together": together,
                          "rows_per_s": readers * total / together})
    return _median_runs(stage_runs), _median_runs(real_runs)


def profile_live(bench: Bench, repeats: int, batches: int) -> None:
    """Issue 26's live rows, embedded, the benchmark's data and settings
    (benchmarks/scenarios/live.py): (a) one acknowledged publish of a 100-row batch and (b)
    of a 1,000-row batch, stage by stage against the real ``pub.publish``; (c) a published
    batch's way to ``db.sql``'s count after its ack; (d) a subscriber's poll loop per 1,000
    rows, against 4 subscribers at once."""
    from scenarios.live import batches_of, ticks
    work = os.path.join(bench.work, "live")
    os.makedirs(work, exist_ok=True)
    small = ticks(batches * 100, symbols=200)   # as the benchmark's latency rows
    day = ticks(batches * 1000)                 # as its publish / subscriber day
    for size, table in ((100, small), (1000, day)):
        parts = batches_of(table, size)
        got, real = _publish_stages(work, parts, repeats)
        _show_publish(size, len(parts), got, real)
    parts = batches_of(small, 100)
    got, real = _visibility_stages(work, parts, repeats)
    _show_us(f"a 100-row batch from its ack to `{VISIBLE_SQL}` counting it, per batch "
             f"({len(parts)} batches, one thread; us)", got)
    print(f"  sum of stages: wall p50s {_total(got, 0) * 1e6:.1f} us, means "
          f"{_total(got, 1) * 1e6:.1f} us, CPU {_total(got, 2) * 1e6:.1f} us; the real wait "
          f"(db.sql until it counts the batch): p50 {real['p50'] * 1e6:.1f} us, mean "
          f"{real['mean'] * 1e6:.1f} us, p99 {real['p99'] * 1e6:.1f} us, CPU "
          f"{real['cpu'] * 1e6:.1f} us ({real['extra polls']:.2f} extra queries a batch)")
    parts = batches_of(day, 1000)
    got, real = _subscriber_stages(work, parts, repeats)
    total = _total(got, 1)
    _show_us(f"a subscriber's poll loop over {day.num_rows:,} rows in 1,000-row batches, per "
             "1,000 rows delivered (one thread; us)", got, rows_per=1000)
    print(f"  sum of stages {total * 1e6:.1f} us per 1,000 rows ({1000 / total / 1e6:.2f} M "
          f"rows/s), CPU {_total(got, 2) * 1e6:.1f} us; the real loop alone "
          f"{real['alone'] * 1e6:.1f} us per 1,000 rows ({1000 / real['alone'] / 1e6:.2f} M "
          f"rows/s), CPU {real['cpu'] * 1e6:.1f} us; 4 subscribers at once (threads) "
          f"{real['rows_per_s'] / 1e6:.2f} M rows/s together")
    shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("what", choices=["day", "fresh", "analytics", "cluster", "spread", "live"])
    p.add_argument("--rows", type=int, default=20_000_000)
    p.add_argument("--repeats", type=int, default=None,
                   help="runs, their median (default 5; live: 1, its batches are its runs)")
    p.add_argument("--batches", type=int, default=300,
                   help="live: batches published (of 100 and of 1,000 rows)")
    p.add_argument("--out", default="bench_out/profile")
    p.add_argument("--shape", choices=list(SHAPES), default="many",
                   help="the data's shape: " + "; ".join(f"{k} = {v[0]}"
                                                         for k, v in SHAPES.items()))
    args = p.parse_args()
    args.repeats = args.repeats or (1 if args.what == "live" else 5)
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
        elif args.what == "live":
            profile_live(bench, args.repeats, args.batches)
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
