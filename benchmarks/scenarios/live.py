"""Live data (issue 26, "Measured"): publishing, acknowledgement latency, visibility to SQL,
subscribers, write-down -- hfq against its peers, all in the same run.

* **publish**: one publisher, 1,000-row batches of TAQ quotes, each acknowledged when durable
  -- hfq (embedded: the log fsynced per batch) vs the physical limit (the same batches as one
  Arrow IPC stream to a file, fsync after each), DuckDB (an appender, one transaction per
  batch, on a database file) and ArcticDB (``append`` per batch, LMDB).  Target >= 1 M rows/s.
* **ack latency**: 100-row batches one after another, the time of each call: p50 / p99
  (targets <= 1 ms / <= 5 ms), for the same four.
* **group commit**: 4 publishers (threads) at once, for a group-commit window of 0 (the
  default: batches arriving during an fsync share the next) and 1 ms: rows/s together and
  the log's fsyncs per batch.
* **visibility**: after each 100-row batch is acknowledged, ``db.sql("SELECT count(*) ...")``
  until it counts the batch -- the time from the acknowledgement (target p99 <= 10 ms); DuckDB:
  a second connection polling ``count(*)`` after the commit.
* **subscribers**: the day published, then 4 subscribers (threads) each reading every row from
  the start of the day: rows/s together (target >= 1 M rows/s); DuckDB: 4 cursors polling
  ``WHERE batch > last`` for the same rows.
* **write-down**: the published day written into files vs ``load_csv`` of the same rows from
  CSV (target: no slower).

Standalone: ``python benchmarks/scenarios/live.py --rows 1000000 --out /tmp/live``, and the
issue's 20 M-row day written down on its own: ``... --rows 20000000 --only write_down``; in the
suite: ``python benchmarks/run.py --only live`` (``--quick``: small, not a measurement).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

import hfq  # noqa: E402

DAY = "2024-01-02"


def ticks(rows: int, symbols: int = 500):
    """A day of quotes in time order (how a feed sends them)."""
    return hfq.synth.taq_table(dates=[DAY], rows_per_day=rows, symbols=symbols,
                               seed=26).sort_by("time").combine_chunks()


def batches_of(table, size: int) -> list:
    return [table.slice(i, size) for i in range(0, table.num_rows, size)]


def new_table(root: str, name: str = "live", **settings: Any):
    shutil.rmtree(root, ignore_errors=True)
    db = hfq.connect(root, **settings)
    return db, db.create_table(name, hfq.schemas.TAQ,
                               partition_by=hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 16)),
                               sort_by=("symbol", "time"))


# -- the contenders: each publishes batches one at a time, durable before the next ---------------
def hfq_publisher(root: str) -> tuple[Callable[[Any], None], Callable[[], int]]:
    db, t = new_table(root)
    pub = t.publisher(name="bench")
    return pub.publish, lambda: t.scan().count()


def ipc_file(root: str) -> tuple[Callable[[Any], None], Callable[[], int]]:
    """The physical limit: the batches as one Arrow IPC stream, fsync after each."""
    import pyarrow as pa
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    sink = open(os.path.join(root, "stream.arrows"), "wb")   # noqa: SIM115 - closed by count
    state: dict[str, Any] = {"writer": None, "rows": 0}

    def write(batch) -> None:
        if state["writer"] is None:
            state["writer"] = pa.ipc.new_stream(sink, batch.schema)
        state["writer"].write_table(batch)
        sink.flush()
        os.fsync(sink.fileno())
        state["rows"] += batch.num_rows

    def count() -> int:
        if state["writer"] is not None:
            state["writer"].close()
        sink.close()
        return int(state["rows"])

    return write, count


def duckdb_appender(root: str) -> tuple[Callable[[Any], None], Callable[[], int]]:
    import duckdb
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    con = duckdb.connect(os.path.join(root, "live.duckdb"))
    state = {"made": False}

    def write(frame) -> None:   # a pandas frame, made beforehand
        if not state["made"]:
            con.execute("CREATE TABLE t AS SELECT * FROM frame LIMIT 0")
            state["made"] = True
        con.begin()
        con.append("t", frame)
        con.commit()

    return write, lambda: int(con.execute("SELECT count(*) FROM t").fetchone()[0])


def arctic_appender(root: str) -> tuple[Callable[[Any], None], Callable[[], int]]:
    import arcticdb
    shutil.rmtree(root, ignore_errors=True)
    lib = arcticdb.Arctic(f"lmdb://{root}").get_library("live", create_if_missing=True)

    def write(frame) -> None:   # a pandas frame with a time index, made beforehand
        lib.append("quotes", frame)

    return write, lambda: int(lib.get_description("quotes").row_count)


def _pandas(batch) -> Any:
    return batch.to_pandas()


def _indexed(batch) -> Any:
    import pandas as pd
    frame = batch.to_pandas()
    frame.index = pd.to_datetime(frame["date"]) + pd.to_timedelta(
        frame["time"].astype(str))
    frame = frame.drop(columns=["date", "time"])
    for c in ("symbol", "ex", "mmid"):
        frame[c] = frame[c].astype(str)
    return frame


CONTENDERS: dict[str, tuple[Callable[[str], Any], Callable[[Any], Any]]] = {
    "hfq publish": (hfq_publisher, lambda b: b),
    "Arrow IPC + fsync (limit)": (ipc_file, lambda b: b),
    "DuckDB appender, txn/batch": (duckdb_appender, _pandas),
    "ArcticDB append": (arctic_appender, _indexed),
}


def publish_rates(work: str, table, batch_rows: int, repeats: int) -> dict[str, dict]:
    """Each contender publishes every batch, ``repeats`` times in alternating order: the
    median time; rows/s; and each call's time (for latencies)."""
    batches = batches_of(table, batch_rows)
    out: dict[str, dict] = {n: {"seconds": [], "calls": []} for n in CONTENDERS}
    ready = {n: [conv(b) for b in batches] for n, (_, conv) in CONTENDERS.items()}
    for r in range(repeats):
        order = list(CONTENDERS) if r % 2 == 0 else list(reversed(CONTENDERS))
        for name in order:
            make, _ = CONTENDERS[name]
            write, count = make(os.path.join(work, name.split()[0].lower()))
            calls = []
            start = time.perf_counter()
            for b in ready[name]:
                t0 = time.perf_counter()
                write(b)
                calls.append(time.perf_counter() - t0)
            took = time.perf_counter() - start
            assert count() == table.num_rows, name   # every row there
            out[name]["seconds"].append(took)
            out[name]["calls"].extend(calls)
    for got in out.values():
        got["median_s"] = statistics.median(got["seconds"])
        got["rows_per_s"] = table.num_rows / got["median_s"]
        calls = np.array(got.pop("calls")) * 1000
        got["p50_ms"], got["p99_ms"] = float(np.percentile(calls, 50)), \
            float(np.percentile(calls, 99))
    return out


def concurrent(work: str, table, batch_rows: int, publishers: int = 4,
               windows: tuple[float, ...] = (0.0, 0.001)) -> dict[str, dict]:
    """``publishers`` threads publishing the day's batches (dealt round-robin) into one table
    at once, per group-commit window: rows/s together and fsyncs of the log per batch (the
    log's fsync seam counted) -- the fsyncs batches publishing together share."""
    batches = batches_of(table, batch_rows)
    out: dict[str, dict] = {}
    for window in windows:
        took, fsyncs = _publish_together(os.path.join(work, "conc"), batches, publishers,
                                         window, table.num_rows)
        out[f"hfq {publishers} publishers, window {window * 1000:g} ms"] = {
            "seconds": took, "rows_per_s": table.num_rows / took,
            "fsyncs_per_batch": fsyncs / len(batches)}
    return out


def _publish_together(root: str, batches: list, publishers: int, window: float,
                      rows: int) -> tuple[float, int]:
    from hfq.live import log as livelog
    db, t = new_table(root, live_group_commit_s=window)
    pubs = [t.publisher(name=f"bench{i}") for i in range(publishers)]
    synced = [0]
    real = livelog._sync

    def counted(fd: int) -> None:
        real(fd)
        synced[0] += 1

    def run(i: int) -> None:
        for b in batches[i::publishers]:
            pubs[i].publish(b)

    livelog._sync = counted
    try:
        threads = [threading.Thread(target=run, args=(i,)) for i in range(publishers)]
        start = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        took = time.perf_counter() - start
    finally:
        livelog._sync = real
    assert t.scan().count() == rows
    return took, synced[0]


def visibility(work: str, table, batch_rows: int) -> dict[str, dict]:
    """Ack to seen by a SQL count, per batch: hfq (``db.sql``) and DuckDB (a polling second
    connection)."""
    import duckdb
    batches = batches_of(table, batch_rows)
    db, t = new_table(os.path.join(work, "vis-hfq"))
    pub = t.publisher(name="bench")
    waits = []
    done = 0
    for b in batches:
        pub.publish(b)
        done += b.num_rows
        t0 = time.perf_counter()
        while db.sql("SELECT count(*) AS n FROM live").collect()["n"][0] < done:
            pass
        waits.append(time.perf_counter() - t0)
    hfq_ms = np.array(waits) * 1000
    root = os.path.join(work, "vis-duck")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    con = duckdb.connect(os.path.join(root, "v.duckdb"))
    frames = [b.to_pandas() for b in batches]
    con.register("first_batch", frames[0])
    con.execute("CREATE TABLE t AS SELECT * FROM first_batch LIMIT 0")
    reader = con.cursor()
    waits, done = [], 0
    for f in frames:
        con.begin()
        con.append("t", f)
        con.commit()
        done += len(f)
        t0 = time.perf_counter()
        while reader.execute("SELECT count(*) FROM t").fetchone()[0] < done:
            pass
        waits.append(time.perf_counter() - t0)
    duck_ms = np.array(waits) * 1000
    return {name: {"p50_ms": float(np.percentile(ms, 50)), "p99_ms": float(np.percentile(ms, 99))}
            for name, ms in (("hfq db.sql", hfq_ms), ("DuckDB polling count", duck_ms))}


def subscribers(work: str, table, batch_rows: int, readers: int = 4) -> dict[str, dict]:
    """``readers`` subscribers each reading the whole published day: rows/s together."""
    import duckdb
    db, t = new_table(os.path.join(work, "sub-hfq"))
    pub = t.publisher(name="bench")
    batches = batches_of(table, batch_rows)
    for b in batches:
        pub.publish(b)
    got = [0] * readers

    def read(i: int) -> None:
        sub = t.subscribe(start="sod", wait_s=0)
        while (b := sub.poll()) is not None:
            got[i] += b.num_rows

    start = time.perf_counter()
    threads = [threading.Thread(target=read, args=(i,)) for i in range(readers)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    hfq_s = time.perf_counter() - start
    assert got == [table.num_rows] * readers, got
    root = os.path.join(work, "sub-duck")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    con = duckdb.connect(os.path.join(root, "s.duckdb"))
    import pyarrow as pa
    numbered = pa.concat_tables([b.append_column("batch", pa.array([i] * b.num_rows,
                                                                   pa.int64()))
                                 for i, b in enumerate(batches)])
    con.register("src", numbered)
    con.execute("CREATE TABLE t AS SELECT * FROM src")
    seen = [0] * readers

    def poll(i: int) -> None:
        cur = con.cursor()
        last = -1
        while True:   # a subscriber by polling: the batches after the last one seen
            part = cur.sql("SELECT * FROM t WHERE batch > $1 AND batch <= $2 ORDER BY batch",
                           params=[last, last + 100]).to_arrow_table()
            if part.num_rows == 0:
                return
            seen[i] += part.num_rows
            last += 100

    start = time.perf_counter()
    threads = [threading.Thread(target=poll, args=(i,)) for i in range(readers)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    duck_s = time.perf_counter() - start
    assert seen == [table.num_rows] * readers, seen
    return {"hfq subscribe x4": {"seconds": hfq_s, "rows_per_s": readers * table.num_rows
                                 / hfq_s},
            "DuckDB polling x4": {"seconds": duck_s, "rows_per_s": readers * table.num_rows
                                  / duck_s}}


def write_down_vs_load(work: str, table, batch_rows: int) -> dict[str, dict]:
    """The published day written down vs ``load_csv`` of the same rows -- after one small
    write in this process, so that neither pays the encoders' one-time start (numba loading
    its compiled kernels: about half of a first write's time here)."""
    import pyarrow.csv as pacsv
    _, warm = new_table(os.path.join(work, "warm"), "warm")
    warm.append(table.slice(0, min(table.num_rows, 5000)))
    db, t = new_table(os.path.join(work, "wd"))
    pub = t.publisher(name="bench")
    for b in batches_of(table, 100_000):
        pub.publish(b)
    start = time.perf_counter()
    done = t.write_down(DAY)
    wd_s = time.perf_counter() - start
    assert done.rows == table.num_rows and len(t) == table.num_rows
    csv = os.path.join(work, "day.csv")
    from hfq.engine.read import plain_schema
    pacsv.write_csv(table.cast(plain_schema(table.schema)), csv)
    db2, t2 = new_table(os.path.join(work, "csv"), "loaded")
    start = time.perf_counter()
    report = db2.load_csv("loaded", csv)
    load_s = time.perf_counter() - start
    assert report.rows == table.num_rows
    return {"hfq write_down": {"seconds": wd_s}, "hfq load_csv (same rows)": {"seconds": load_s}}


SECTIONS = ("publish_1000", "publish_100", "concurrent_1000", "visibility", "subscribers",
            "write_down")
"""The parts of the run, in order (``--only`` picks some: e.g. the write-down of a 20 M-row day
on its own)."""


def run(rows: int, work: str, *, repeats: int = 3, latency_batches: int = 2000,
        visibility_batches: int = 500, only: tuple[str, ...] = SECTIONS) -> dict[str, Any]:
    os.makedirs(work, exist_ok=True)
    # the rows are made only for the parts that use them (the day: every part but these two)
    small_parts = {"publish_100", "visibility"}
    small = ticks(latency_batches * 100, symbols=200) if small_parts & set(only) else None
    day = ticks(rows) if set(only) - small_parts else None
    parts: dict[str, Callable[[], Any]] = {
        "publish_1000": lambda: publish_rates(work, day, 1000, repeats),
        "publish_100": lambda: publish_rates(work, small, 100, 1),
        "concurrent_1000": lambda: concurrent(work, day, 1000),
        "visibility": lambda: visibility(work, small.slice(0, visibility_batches * 100), 100),
        "subscribers": lambda: subscribers(work, day, 1000),
        "write_down": lambda: write_down_vs_load(work, day, 1000)}
    result: dict[str, Any] = {"rows": rows}
    for name in SECTIONS:
        if name in only:
            result[name] = parts[name]()
    return result


def _each(got: dict[str, dict], cell: Callable[[dict], str]) -> str:
    """``name cell; name cell; ...`` over a part's contenders."""
    return "; ".join(f"{n} {cell(v)}" for n, v in got.items())


def _millis(v: dict) -> str:
    return f"p50 {v['p50_ms']:.2f} / p99 {v['p99_ms']:.2f} ms"


def text(r: dict[str, Any]) -> list[str]:
    """The report's lines, one per part that ran."""
    lines = []
    if "publish_1000" in r:
        pub = r["publish_1000"]
        limit = pub["hfq publish"]["rows_per_s"] / pub["Arrow IPC + fsync (limit)"]["rows_per_s"]
        lines.append(f"- publish, 1,000-row batches, {r['rows']:,} rows (target >= 1 M rows/s): "
                     + _each(pub, lambda v: f"**{v['rows_per_s'] / 1e6:.2f} M rows/s**")
                     + f" -- hfq at {limit:.0%} of the limit")
    if "publish_100" in r:
        lines.append("- ack latency, 100-row batches (targets p50 <= 1 ms, p99 <= 5 ms): "
                     + _each(r["publish_100"], _millis))
    if "concurrent_1000" in r:
        lines.append("- group commit, 1,000-row batches from 4 publishers at once: "
                     + _each(r["concurrent_1000"],
                             lambda v: f"{v['rows_per_s'] / 1e6:.2f} M rows/s, "
                                       f"{v['fsyncs_per_batch']:.2f} fsyncs/batch"))
    if "visibility" in r:
        lines.append("- visible to SQL after the ack (target p99 <= 10 ms): "
                     + _each(r["visibility"], _millis))
    if "subscribers" in r:
        lines.append("- 4 subscribers together (target >= 1 M rows/s): "
                     + _each(r["subscribers"], lambda v: f"{v['rows_per_s'] / 1e6:.2f} M rows/s"))
    if "write_down" in r:
        lines.append(f"- write-down of the day ({r['rows']:,} rows) vs load_csv of the same rows "
                     "(target: no slower): " + _each(r["write_down"],
                                                     lambda v: f"{v['seconds']:.2f} s"))
    return lines


def scenario_live(bench: Any) -> None:
    """``benchmarks/run.py --only live``."""
    rows = 20_000 if bench.quick else min(bench.rows, 2_000_000)
    result = run(rows, os.path.join(bench.work, "live"), repeats=1 if bench.quick else 3,
                 latency_batches=200 if bench.quick else 2000,
                 visibility_batches=50 if bench.quick else 500)
    with open(os.path.join(bench.out, "live.json"), "w") as f:
        json.dump(result, f, indent=1)
    lines = text(result)
    for line in lines:
        bench.log(line)
    bench.summary["live"] = lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000, help="rows of the published day")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--latency-batches", type=int, default=2000)
    p.add_argument("--visibility-batches", type=int, default=500)
    p.add_argument("--out", default="live_out")
    p.add_argument("--only", nargs="+", choices=SECTIONS, default=SECTIONS,
                   help="run only these parts")
    args = p.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    result = run(args.rows, os.path.join(args.out, "work"), repeats=args.repeats,
                 latency_batches=args.latency_batches,
                 visibility_batches=args.visibility_batches, only=tuple(args.only))
    with open(os.path.join(args.out, "live.json"), "w") as f:
        json.dump(result, f, indent=1)
    print("\n".join(text(result)))
    shutil.rmtree(os.path.join(args.out, "work"), ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
