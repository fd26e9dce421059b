"""Scale (issue 16): what a table's size costs -- catalog, planning and write -- for tables of
1, 20, 100 and 250 thin days under ``Compo(Value("date"), Hash("symbol", 100))``.

Per size: one symbol-day read (warm handle, and a fresh process from ``hfq.connect`` to the
answer, after ``import hfq``), planning a one-day scan (fresh handle) and its peak memory,
appending one more day and the bytes that commit wrote (catalog and data), ``len(t)`` and
``partitions()`` on a fresh handle, ``vacuum()``.  The peer, measured in the same run on the
same table: the same versions rewritten in the old catalog format (format 1: one manifest
listing every partition), for the reads, the planning and ``len``.  With ``--cluster``, the
smallest table is also built with 2 replicas on a local 2-node cluster and its read and
append measured.
Targets (the issue): at 250 days a symbol-day read <= 1.5x the 1-day figure (fresh process
<= 2x), an append <= 1.2x, bytes per commit <= 2x.

Standalone: ``python benchmarks/scenarios/scale.py --sizes 1 20 --out /tmp/scale``; in the
suite: ``python benchmarks/run.py --only scale`` (``--quick``: sizes 1 and 3).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SIZES = (1, 20, 100, 250)
BUCKETS = 100
SYMBOLS = 400
DAYS_PER_APPEND = 20

FRESH = """
import sys, time
import hfq
t0 = time.perf_counter()
db = hfq.connect(sys.argv[1])
n = db["quotes"].scan(dates=sys.argv[2], symbols=[sys.argv[3]]).to_arrow().num_rows
print(time.perf_counter() - t0, n)
"""


def days(n: int, first: int = 0) -> list[str]:
    import datetime as dt
    start = dt.date(2007, 1, 1)
    return [(start + dt.timedelta(days=i)).isoformat() for i in range(first, first + n)]


def timed(fn: Callable[[], Any], repeats: int = 5) -> float:
    """Median seconds of ``repeats`` calls."""
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return statistics.median(out)


def dir_bytes(path: str) -> dict[str, int]:
    """Bytes of every file under ``path``, by relative path."""
    out = {}
    for d, _, files in os.walk(path):
        for f in files:
            full = os.path.join(d, f)
            out[os.path.relpath(full, path)] = os.path.getsize(full)
    return out


def build(db: Any, n_days: int, rows_per_day: int, replicas: int | None = None) -> Any:
    """Table ``quotes`` of ``n_days`` thin days in ``db``, appended 20 days at a time."""
    import hfq
    t = db.create_table("quotes", hfq.schemas.TAQ,
                        partition_by=hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", BUCKETS)),
                        sort_by=("symbol", "time"), replicas=replicas)
    for first in range(0, n_days, DAYS_PER_APPEND):
        chunk = days(min(DAYS_PER_APPEND, n_days - first), first)
        t.append(hfq.synth.taq_table(dates=chunk, rows_per_day=rows_per_day, symbols=SYMBOLS,
                                     seed=first))
    return db


def fresh_read(root: str, day: str, symbol: str, repeats: int) -> float:
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = []
    for _ in range(repeats):
        done = subprocess.run([sys.executable, "-c", FRESH, root, day, symbol], env=env,
                              capture_output=True, text=True, check=True)
        out.append(float(done.stdout.split()[0]))
    return statistics.median(out)


def as_format_1(src: str, dst: str) -> None:
    """A copy of the database at ``src`` with every version in the old format."""
    import hfq
    from hfq.catalog.catalog import Catalog
    shutil.copytree(src, dst)
    catalog = Catalog(hfq.connect(dst).store)
    for v in catalog.versions("quotes"):
        m = catalog.snapshot("quotes", v)
        body = {"format": 1, "table": m.table, "version": m.version,
                "schema": m.schema.to_json(), "partition_by": m.partition_by.to_json(),
                "sort_by": list(m.sort_by), "op": m.op, "committed_at": m.committed_at,
                "options": dict(m.options), "table_id": m.table_id,
                "partitions": {p: e.to_json() for p, e in m.partitions.items()}}
        with open(os.path.join(dst, "quotes", "_versions", f"{v:020d}.json"), "w") as f:
            json.dump(body, f, separators=(",", ":"))
    for sub in ("_manifests", "_claims"):
        shutil.rmtree(os.path.join(dst, "quotes", sub), ignore_errors=True)


def reads(root: str, day: str, symbol: str, repeats: int) -> dict[str, float]:
    """The read-side figures of the table at ``root`` (fresh handles where it matters)."""
    import hfq
    t = hfq.connect(root)["quotes"]
    t.scan(dates=day, symbols=[symbol]).to_arrow()
    out = {"read_warm_s": timed(lambda: t.scan(dates=day, symbols=[symbol]).to_arrow(),
                                repeats),
           "read_fresh_s": fresh_read(root, day, symbol, max(1, repeats // 2))}
    out["plan_s"] = timed(lambda: hfq.connect(root)["quotes"].scan(dates=day), repeats)
    tracemalloc.start()
    hfq.connect(root)["quotes"].scan(dates=day)   # a fresh handle: its manifest included
    out["plan_peak_bytes"] = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    out["len_s"] = timed(lambda: len(hfq.connect(root)["quotes"]), repeats)
    out["partitions_s"] = timed(lambda: hfq.connect(root)["quotes"].partitions(), repeats)
    return out


def measure(work: str, n_days: int, rows_per_day: int, repeats: int) -> dict[str, Any]:
    import hfq
    root = os.path.join(work, f"days{n_days}")
    shutil.rmtree(root, ignore_errors=True)
    build(hfq.connect(root), n_days, rows_per_day)
    day, symbol = days(n_days)[-1], "S0"
    row: dict[str, Any] = {"days": n_days, **reads(root, day, symbol, repeats)}
    old = root + "-format1"
    shutil.rmtree(old, ignore_errors=True)
    as_format_1(root, old)
    row["peer_format1"] = reads(old, day, symbol, repeats)
    shutil.rmtree(old, ignore_errors=True)
    t = hfq.connect(root)["quotes"]
    one_day = hfq.synth.taq_table(dates=days(1, n_days), rows_per_day=rows_per_day,
                                  symbols=SYMBOLS, seed=99)
    before = dir_bytes(root)
    start = time.perf_counter()
    t.append(one_day)
    row["append_s"] = time.perf_counter() - start
    row["append_rows_per_s"] = one_day.num_rows / row["append_s"]
    after = dir_bytes(root)
    new = {p: s for p, s in after.items() if before.get(p) != s}
    row["commit_bytes"] = sum(new.values())
    row["commit_catalog_bytes"] = sum(s for p, s in new.items() if "/data/" not in p)
    start = time.perf_counter()
    t.vacuum(grace_s=0)
    row["vacuum_s"] = time.perf_counter() - start
    shutil.rmtree(root, ignore_errors=True)
    return row


def measure_cluster(work: str, n_days: int, rows_per_day: int, repeats: int) -> dict[str, Any]:
    """The table with 2 replicas on a local 2-node cluster: read and append."""
    import hfq
    from hfq.testing import local_cluster
    with local_cluster(nodes=2, cpus_per_node=1, root=os.path.join(work, "cluster")) as c:
        db = build(c.connect(), n_days, rows_per_day, replicas=2)
        t = db["quotes"]
        day = days(n_days)[-1]
        t.scan(dates=day, symbols=["S0"]).to_arrow()
        read = timed(lambda: t.scan(dates=day, symbols=["S0"]).to_arrow(), repeats)
        start = time.perf_counter()
        t.append(hfq.synth.taq_table(dates=days(1, n_days), rows_per_day=rows_per_day,
                                     symbols=SYMBOLS, seed=99))
        return {"days": n_days, "replicas": 2, "read_warm_s": read,
                "append_s": time.perf_counter() - start}


def run(sizes: tuple[int, ...], rows_per_day: int, work: str, repeats: int,
        cluster: bool = False) -> dict[str, Any]:
    rows = [measure(work, n, rows_per_day, repeats) for n in sizes]
    out: dict[str, Any] = {"rows_per_day": rows_per_day, "buckets": BUCKETS, "sizes": rows}
    if cluster:
        out["cluster"] = measure_cluster(work, sizes[0], rows_per_day, repeats)
    return out


def text(result: dict[str, Any]) -> list[str]:
    """Report lines: one per size, and the ratios to the smallest size."""
    rows = result["sizes"]
    base = rows[0]
    lines = [f"scale: {result['rows_per_day']:,} rows a day, {result['buckets']} hash buckets "
             "(peer: the same table in the old one-manifest catalog, same run)"]
    for r in rows:
        p = r["peer_format1"]
        lines.append(
            f"  {r['days']:>4} days: read {r['read_warm_s'] * 1e3:.1f} ms warm "
            f"(old {p['read_warm_s'] * 1e3:.1f}), {r['read_fresh_s'] * 1e3:.0f} ms fresh "
            f"(old {p['read_fresh_s'] * 1e3:.0f}); plan {r['plan_s'] * 1e3:.1f} ms "
            f"(old {p['plan_s'] * 1e3:.1f}), peak {r['plan_peak_bytes'] / 1e6:.2f} MB "
            f"(old {p['plan_peak_bytes'] / 1e6:.2f}); len {r['len_s'] * 1e3:.1f} ms "
            f"(old {p['len_s'] * 1e3:.1f}); partitions() {r['partitions_s'] * 1e3:.0f} ms; "
            f"append a day {r['append_s']:.2f} s ({r['append_rows_per_s'] / 1e6:.2f} M rows/s),"
            f" {r['commit_bytes'] / 1e3:.0f} kB written ({r['commit_catalog_bytes'] / 1e3:.1f}"
            f" kB catalog); vacuum {r['vacuum_s'] * 1e3:.0f} ms")
    last = rows[-1]
    if len(rows) > 1:
        lines.append(
            f"  {last['days']} days vs {base['days']}: read "
            f"x{last['read_warm_s'] / base['read_warm_s']:.2f}"
            f" (target 1.5), fresh x{last['read_fresh_s'] / base['read_fresh_s']:.2f} (2.0), "
            f"append x{last['append_s'] / base['append_s']:.2f} (1.2), bytes/commit "
            f"x{last['commit_bytes'] / base['commit_bytes']:.2f} (2.0)")
    if "cluster" in result:
        c = result["cluster"]
        lines.append(f"  cluster, {c['days']} days, {c['replicas']} replicas: read "
                     f"{c['read_warm_s'] * 1e3:.1f} ms, append a day {c['append_s']:.2f} s")
    return lines


def plot(result: dict[str, Any], path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = result["sizes"]
    x = [r["days"] for r in rows]
    figures = [("read_warm_s", "symbol-day read, warm (s)"),
               ("read_fresh_s", "symbol-day read, fresh process (s)"),
               ("plan_s", "one-day plan (s)"), ("plan_peak_bytes", "plan peak memory (B)"),
               ("append_s", "append one day (s)"), ("commit_bytes", "bytes per commit"),
               ("len_s", "len(t) (s)"), ("partitions_s", "partitions() (s)"),
               ("vacuum_s", "vacuum (s)")]
    fig, axes = plt.subplots(3, 3, figsize=(13, 10))
    for ax, (key, title) in zip(axes.flat, figures):
        ax.plot(x, [r[key] for r in rows], "o-", label="split catalog")
        if key in rows[0]["peer_format1"]:
            ax.plot(x, [r["peer_format1"][key] for r in rows], "s--", label="old catalog")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("days in the table")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def scenario_scale(bench: Any) -> None:
    """``benchmarks/run.py --only scale``."""
    sizes = (1, 3) if bench.quick else SIZES
    rows_per_day = 2_000 if bench.quick else 20_000
    result = run(sizes, rows_per_day, os.path.join(bench.work, "scale"),
                 1 if bench.quick else 5, cluster=not bench.quick)
    with open(os.path.join(bench.out, "scale.json"), "w") as f:
        json.dump(result, f, indent=1)
    plot(result, os.path.join(bench.out, "scale.png"))
    lines = text(result)
    for line in lines:
        bench.log(line)
    bench.summary["scale"] = lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="days per table")
    p.add_argument("--rows-per-day", type=int, default=20_000)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--cluster", action="store_true", help="also the replicated table")
    p.add_argument("--out", default="scale_out")
    args = p.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    result = run(tuple(args.sizes), args.rows_per_day, os.path.join(args.out, "work"),
                 args.repeats, args.cluster)
    with open(os.path.join(args.out, "scale.json"), "w") as f:
        json.dump(result, f, indent=1)
    plot(result, os.path.join(args.out, "scale.png"))
    print("\n".join(text(result)))
    shutil.rmtree(os.path.join(args.out, "work"), ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
