"""Scale (issue 16): what a table's size costs -- catalog, planning, writes and maintenance --
for tables of 1, 20, 100 and 250 thin days under ``Compo(Value("date"), Hash("symbol", 100))``
(20,000 rows a day: 200 rows a partition).

One table is built once and grown: it is measured at each size, then appended to up to the
next.  Per size: one symbol-day read (warm handle; and a fresh process, from ``hfq.connect``
to the answer, after ``import hfq``), planning a one-day scan on a fresh handle and its peak
memory (tracemalloc), ``len(t)`` and ``partitions()`` on a fresh handle, appending one more
day (median of ``--repeats`` such appends: time, rows/s, the bytes the commit wrote, catalog
and data), a full vacuum (no record of a previous one) and the usual one (after the appends:
it follows the change), and the rate of the growth appends (20 days at a time).  The peer,
measured in the same run on the same table: the same versions rewritten in the old catalog
format (format 1: one manifest listing every partition) for the reads, the planning, ``len``
and ``partitions()``.

Also: one day appended as many thin slices (``--slices``, 1,000 in the full run) to a table
with the small-append policy (``compact_after=2``) against the same day appended at once --
the symbol-day read of both; and (``--cluster``) a table with 2 replicas on a local 2-node
Ray cluster, measured the same way (no fresh-process read: attaching to Ray dominates).

Targets (the issue): at 250 days a symbol-day read <= 1.5x the 1-day figure (fresh process
<= 2x), appending a day <= 1.2x, bytes per commit <= 2x, appends of 200-row partitions at
>= 0.5 M rows/s, and the read after the slices <= 1.5x the read after one append.

Standalone: ``python benchmarks/scenarios/scale.py --sizes 1 20 --slices 50 --out /tmp/scale``
(``--plot docs/img/scale.png``); in the suite: ``python benchmarks/run.py --only scale``
(``--quick``: sizes 1 and 3, 20 slices, no cluster).  The thin-append rate alone:
``python benchmarks/scenarios/scale.py --only append --sizes 1 20 --out /tmp/scale``
(``--cluster`` adds the replicated table's appends).
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
SLICES = 1000
CLUSTER_DAYS = 20
SYMBOL = "AAPL"
"""The symbol read: in every synthetic day (70-420 of its 20,000 rows)."""

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


def one_day(day: int, rows_per_day: int) -> Any:
    import hfq
    return hfq.synth.taq_table(dates=days(1, day), rows_per_day=rows_per_day, symbols=SYMBOLS,
                               seed=day)


def create(db: Any, replicas: int | None = None, compact_after: int | None = None) -> Any:
    import hfq
    return db.create_table("quotes", hfq.schemas.TAQ,
                           partition_by=hfq.Compo(hfq.Value("date"),
                                                  hfq.Hash("symbol", BUCKETS)),
                           sort_by=("symbol", "time"), replicas=replicas,
                           compact_after=compact_after)


def grow(t: Any, have: int, want: int, rows_per_day: int) -> float:
    """Append days ``have .. want - 1`` to ``t``, 20 at a time; the rows/s of those appends
    (0 when there was nothing to append)."""
    import hfq
    rows, spent = 0, 0.0
    for first in range(have, want, DAYS_PER_APPEND):
        data = hfq.synth.taq_table(dates=days(min(DAYS_PER_APPEND, want - first), first),
                                   rows_per_day=rows_per_day, symbols=SYMBOLS, seed=first)
        start = time.perf_counter()
        t.append(data)
        spent += time.perf_counter() - start
        rows += data.num_rows
    return rows / spent if spent else 0.0


def fresh_read(root: str, day: str, symbol: str, repeats: int) -> float:
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = []
    for _ in range(repeats):
        done = subprocess.run([sys.executable, "-c", FRESH, root, day, symbol], env=env,
                              capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"the fresh-process read failed:\n{done.stderr}")
        seconds, rows = done.stdout.split()
        if int(rows) == 0:
            raise RuntimeError(f"the fresh-process read of {symbol} on {day} found no row")
        out.append(float(seconds))
    return statistics.median(out)


def as_format_1(src: str, dst: str) -> None:
    """A copy of the database at ``src`` (data files hard-linked) with every version in the
    old format."""
    from hfq.testing.formats import rewrite_as_format_1
    shutil.copytree(src, dst, copy_function=os.link)
    rewrite_as_format_1(dst, "quotes")


def reads(connect: Callable[[], Any], day: str, symbol: str, repeats: int) -> dict[str, float]:
    """The read-side figures of the table (fresh handles where it matters)."""
    t = connect()["quotes"]
    if t.scan(dates=day, symbols=[symbol]).to_arrow().num_rows == 0:
        raise RuntimeError(f"the read of {symbol} on {day} found no row")
    out = {"read_warm_s": timed(lambda: t.scan(dates=day, symbols=[symbol]).to_arrow(),
                                repeats)}
    out["plan_s"] = timed(lambda: connect()["quotes"].scan(dates=day), repeats)
    tracemalloc.start()
    connect()["quotes"].scan(dates=day)   # a fresh handle: its manifest included
    out["plan_peak_bytes"] = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    out["len_s"] = timed(lambda: len(connect()["quotes"]), repeats)
    out["partitions_s"] = timed(lambda: connect()["quotes"].partitions(), repeats)
    return out


def writes(t: Any, root: str | None, day: int, rows_per_day: int, appends: int
           ) -> dict[str, Any]:
    """A full vacuum (no record of the last one), appending one more day ``appends`` times
    (days ``day``, ``day + 1``, ...: the median time and bytes), then the usual vacuum;
    bytes written from ``root``'s files (when local)."""
    from hfq.catalog.catalog import VACUUM_STATE
    store = t.db.session.catalog.store
    store.remove(f"quotes/{VACUUM_STATE}")
    start = time.perf_counter()
    t.vacuum(grace_s=0)
    out: dict[str, Any] = {"vacuum_full_s": time.perf_counter() - start}
    spent, rows, written, catalog = [], [], [], []
    for i in range(appends):
        data = one_day(day + i, rows_per_day)
        before = dir_bytes(root) if root else {}
        start = time.perf_counter()
        t.append(data)
        spent.append(time.perf_counter() - start)
        rows.append(data.num_rows / spent[-1])
        if root:
            after = dir_bytes(root)
            new = {p: s for p, s in after.items() if before.get(p) != s}
            written.append(sum(new.values()))
            catalog.append(sum(s for p, s in new.items() if "/data/" not in p))
    out["append_s"] = statistics.median(spent)
    out["append_rows_per_s"] = statistics.median(rows)
    if root:
        out["commit_bytes"] = statistics.median(written)
        out["commit_catalog_bytes"] = statistics.median(catalog)
    start = time.perf_counter()
    t.vacuum(grace_s=0)
    out["vacuum_s"] = time.perf_counter() - start
    return out


def per_file_appends(t: Any, day: int, rows_per_day: int, appends: int) -> dict[str, float]:
    """The peer of the thin appends, same run, same table: ``appends`` more days appended
    with every partition written one file at a time (the writer before thin partitions
    were written together): the median time and rows/s."""
    from hfq import write
    spent, rows = [], []
    limit, write.THIN_ROWS = write.THIN_ROWS, 0
    try:
        for i in range(appends):
            data = one_day(day + i, rows_per_day)
            start = time.perf_counter()
            t.append(data)
            spent.append(time.perf_counter() - start)
            rows.append(data.num_rows / spent[-1])
    finally:
        write.THIN_ROWS = limit
    return {"append_s": statistics.median(spent),
            "append_rows_per_s": statistics.median(rows)}


def measure(root: str, t: Any, n_days: int, rows_per_day: int, repeats: int,
            peer: bool = True, only: str | None = None) -> dict[str, Any]:
    """Every figure of the table at ``root`` holding days ``0 .. n_days - 1`` (``only=
    "append"``: the appends and vacuums only)."""
    import hfq
    if only == "append":
        row = {"days": n_days, **writes(t, root, n_days, rows_per_day, repeats)}
        if peer:
            row["peer_per_file"] = per_file_appends(t, n_days + repeats, rows_per_day, repeats)
        return row
    day, symbol = days(n_days)[-1], SYMBOL
    row: dict[str, Any] = {"days": n_days, **reads(lambda: hfq.connect(root), day, symbol,
                                                   repeats)}
    row["read_fresh_s"] = fresh_read(root, day, symbol, max(1, repeats // 2))
    if peer:
        old = root + "-format1"
        shutil.rmtree(old, ignore_errors=True)
        as_format_1(root, old)
        row["peer_format1"] = reads(lambda: hfq.connect(old), day, symbol, repeats)
        row["peer_format1"]["read_fresh_s"] = fresh_read(old, day, symbol,
                                                         max(1, repeats // 2))
        shutil.rmtree(old, ignore_errors=True)
    row.update(writes(t, root, n_days, rows_per_day, repeats))
    return row


def measure_slices(work: str, rows_per_day: int, slices: int, repeats: int) -> dict[str, Any]:
    """One day appended at once, and in ``slices`` thin time slices with ``compact_after=2``:
    the symbol-day read of each, the time per slice, the files the day ends with."""
    import pyarrow.compute as pc

    import hfq
    data = one_day(0, rows_per_day)
    data = data.take(pc.sort_indices(data, [("time", "ascending")]))
    day, out = days(1)[0], {"slices": slices, "rows": data.num_rows}
    for label, parts in (("once", 1), ("sliced", slices)):
        root = os.path.join(work, f"slices-{label}")
        shutil.rmtree(root, ignore_errors=True)
        t = create(hfq.connect(root), compact_after=2)
        step = -(-data.num_rows // parts)
        start = time.perf_counter()
        for first in range(0, data.num_rows, step):
            t.append(data.slice(first, step))
        out[f"{label}_append_s"] = time.perf_counter() - start
        t = hfq.connect(root)["quotes"]
        t.scan(dates=day, symbols=[SYMBOL]).to_arrow()
        out[f"{label}_read_s"] = timed(lambda t=t: t.scan(dates=day, symbols=[SYMBOL]).to_arrow(),
                                       repeats)
        out[f"{label}_files"] = len(t.snapshot().files())
        out[f"{label}_versions"] = len(t.versions())
        shutil.rmtree(root, ignore_errors=True)
    return out


def measure_cluster(work: str, n_days: int, rows_per_day: int, repeats: int,
                    only: str | None = None) -> dict[str, Any]:
    """The table with 2 replicas on a local 2-node cluster (``only="append"``: no reads)."""
    from hfq.testing import local_cluster
    with local_cluster(nodes=2, cpus_per_node=1, root=os.path.join(work, "cluster")) as c:
        t = create(c.connect(), replicas=2)
        grow(t, 0, n_days, rows_per_day)
        row: dict[str, Any] = {"days": n_days, "replicas": 2, "nodes": 2}
        if only != "append":
            row.update(reads(c.connect, days(n_days)[-1], SYMBOL, repeats))
        row.update(writes(c.connect()["quotes"], None, n_days, rows_per_day, repeats))
        row["copies_per_file"] = min(len(f.nodes) for f in
                                     c.connect()["quotes"].snapshot().fragments())
        return row


def run(sizes: tuple[int, ...], rows_per_day: int, work: str, repeats: int,
        cluster: bool = False, slices: int = SLICES, peer: bool = True,
        only: str | None = None) -> dict[str, Any]:
    import hfq
    root = os.path.join(work, "table")
    shutil.rmtree(root, ignore_errors=True)
    t = create(hfq.connect(root))
    have, rows = 0, []
    for size in sorted(sizes):
        n = max(size, have)   # (sizes closer than --repeats: the days measure appended)
        rate = grow(t, have, n, rows_per_day)
        row = measure(root, t, n, rows_per_day, repeats, peer, only)
        row["grow_rows_per_s"] = rate
        rows.append(row)
        # measure appended days n .. n + repeats - 1 (and the per-file peer as many more)
        have = n + repeats * (2 if only == "append" and peer else 1)
    shutil.rmtree(root, ignore_errors=True)
    out: dict[str, Any] = {"rows_per_day": rows_per_day, "buckets": BUCKETS, "sizes": rows}
    if slices:
        out["slices"] = measure_slices(work, rows_per_day, slices, repeats)
    if cluster:
        out["cluster"] = measure_cluster(work, min(CLUSTER_DAYS, max(sizes)), rows_per_day,
                                         repeats, only)
    return out


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def text(result: dict[str, Any]) -> list[str]:
    """Report lines: one per size, the ratios to the smallest size, slices, cluster."""
    rows = result["sizes"]
    base = rows[0]
    lines = [f"scale: {result['rows_per_day']:,} rows a day, {result['buckets']} hash buckets "
             f"({result['rows_per_day'] // result['buckets']} rows a partition)" +
             ("; peer (old): the same table in the old one-manifest catalog, same run"
              if "peer_format1" in base else "")]
    for r in rows:
        if "read_warm_s" not in r:   # --only append
            p = r.get("peer_per_file")
            lines.append(f"  {r['days']:>4} days: append a day {_ms(r['append_s'])} "
                         f"({r['append_rows_per_s'] / 1e6:.2f} M rows/s, target 0.5), "
                         f"{r['commit_bytes'] / 1e3:.0f} kB written" +
                         (f"; peer, one file at a time: {_ms(p['append_s'])} "
                          f"({p['append_rows_per_s'] / 1e6:.2f} M rows/s)" if p else "") +
                         (f"; growth appends {r['grow_rows_per_s'] / 1e6:.2f} M rows/s"
                          if r["grow_rows_per_s"] else ""))
            continue
        p = r.get("peer_format1", {})

        def old(key: str, p: dict[str, Any] = p) -> str:
            return f" (old {_ms(p[key])})" if key in p else ""
        lines.append(
            f"  {r['days']:>4} days: read {_ms(r['read_warm_s'])} warm{old('read_warm_s')}, "
            f"{_ms(r['read_fresh_s'])} fresh{old('read_fresh_s')}; plan {_ms(r['plan_s'])}"
            f"{old('plan_s')}, peak {r['plan_peak_bytes'] / 1e6:.2f} MB; len {_ms(r['len_s'])}"
            f"{old('len_s')}; partitions() {_ms(r['partitions_s'])}; append a day "
            f"{_ms(r['append_s'])} ({r['append_rows_per_s'] / 1e6:.2f} M rows/s), "
            f"{r['commit_bytes'] / 1e3:.0f} kB written ({r['commit_catalog_bytes'] / 1e3:.1f}"
            f" kB catalog); vacuum after the appends {_ms(r['vacuum_s'])} (full "
            f"{_ms(r['vacuum_full_s'])})" + (f"; growth appends {r['grow_rows_per_s'] / 1e6:.2f}"
                                            " M rows/s" if r["grow_rows_per_s"] else ""))
    last = rows[-1]
    if len(rows) > 1 and "read_warm_s" in last:
        lines.append(
            f"  {last['days']} days vs {base['days']}: read "
            f"x{last['read_warm_s'] / base['read_warm_s']:.2f} (target 1.5), fresh "
            f"x{last['read_fresh_s'] / base['read_fresh_s']:.2f} (2.0), append "
            f"x{last['append_s'] / base['append_s']:.2f} (1.2), bytes/commit "
            f"x{last['commit_bytes'] / base['commit_bytes']:.2f} (2.0); appending "
            f"{result['rows_per_day'] // result['buckets']}-row partitions at "
            f"{last['append_rows_per_s'] / 1e6:.2f} M rows/s (target 0.5 for 200 rows)")
    if "slices" in result:
        s = result["slices"]
        lines.append(
            f"  one day in {s['slices']} slices (compact_after=2): read {_ms(s['sliced_read_s'])}"
            f" vs {_ms(s['once_read_s'])} appended at once, x"
            f"{s['sliced_read_s'] / s['once_read_s']:.2f} (target 1.5); {s['sliced_files']} "
            f"files vs {s['once_files']}; {_ms(s['sliced_append_s'] / s['slices'])} a slice")
    if "cluster" in result and "read_warm_s" not in result["cluster"]:   # --only append
        c = result["cluster"]
        lines.append(f"  local cluster, {c['nodes']} nodes, {c['replicas']} replicas "
                     f"({c['copies_per_file']}+ copies a file), {c['days']} days: append a day "
                     f"{_ms(c['append_s'])} ({c['append_rows_per_s'] / 1e6:.2f} M rows/s)")
    elif "cluster" in result:
        c = result["cluster"]
        lines.append(
            f"  local cluster, {c['nodes']} nodes, {c['replicas']} replicas "
            f"({c['copies_per_file']}+ copies a file), {c['days']} days: read "
            f"{_ms(c['read_warm_s'])}, plan {_ms(c['plan_s'])}, len {_ms(c['len_s'])}, "
            f"partitions() {_ms(c['partitions_s'])}, append a day {_ms(c['append_s'])} "
            f"({c['append_rows_per_s'] / 1e6:.2f} M rows/s), vacuum {_ms(c['vacuum_s'])} "
            f"(full {_ms(c['vacuum_full_s'])})")
    return lines


FIGURES = [("read_warm_s", "symbol-day read, warm handle (s)"),
           ("read_fresh_s", "symbol-day read, fresh process (s)"),
           ("plan_s", "one-day plan (s)"), ("plan_peak_bytes", "plan peak memory (bytes)"),
           ("append_s", "append one day (s)"), ("append_rows_per_s", "append rows/s"),
           ("commit_bytes", "bytes written per commit"), ("len_s", "len(t) (s)"),
           ("partitions_s", "partitions() (s)"), ("vacuum_s", "vacuum after the appends (s)"),
           ("vacuum_full_s", "full vacuum (s)"), ("grow_rows_per_s", "20-day appends rows/s")]


def plot(result: dict[str, Any], path: str) -> None:
    """Each figure against the table's size (days), the old catalog dashed where measured."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = result["sizes"]
    x = [r["days"] for r in rows]
    fig, axes = plt.subplots(3, 4, figsize=(16, 10))
    for ax, (key, title) in zip(axes.flat, FIGURES):
        ax.plot(x, [r[key] for r in rows], "o-", label="split catalog")
        peers = [r.get("peer_format1", {}).get(key) for r in rows]
        if all(p is not None for p in peers):
            ax.plot(x, peers, "s--", label="old catalog")
        if "cluster" in result and key in result["cluster"]:
            ax.plot([result["cluster"]["days"]], [result["cluster"][key]], "^",
                    label="2-node cluster, 2 replicas")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("days in the table")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=7)
    fig.suptitle(f"hfq scale: {result['rows_per_day']:,} rows a day, {result['buckets']} "
                 "hash buckets", fontsize=11)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=80)
    plt.close(fig)


def scenario_scale(bench: Any) -> None:
    """``benchmarks/run.py --only scale``."""
    sizes = (1, 3) if bench.quick else SIZES
    rows_per_day = 2_000 if bench.quick else 20_000
    result = run(sizes, rows_per_day, os.path.join(bench.work, "scale"),
                 1 if bench.quick else 5, cluster=not bench.quick,
                 slices=20 if bench.quick else SLICES)
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
    p.add_argument("--slices", type=int, default=None,
                   help=f"thin appends of one day (0: skip; default {SLICES})")
    p.add_argument("--cluster", action="store_true", help="also the replicated table")
    p.add_argument("--no-peer", action="store_true", help="skip the format-1 peer")
    p.add_argument("--only", choices=["append"],
                   help="append: only the appends of one day at each size (the thin-append "
                        "rate; no reads, no slices unless --slices is given; the peer: as "
                        "many appends writing one file at a time)")
    p.add_argument("--out", default="scale_out")
    p.add_argument("--plot", help="where the plot goes (default: OUT/scale.png)")
    args = p.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    start = time.perf_counter()
    slices = args.slices if args.slices is not None else 0 if args.only else SLICES
    result = run(tuple(args.sizes), args.rows_per_day, os.path.join(args.out, "work"),
                 args.repeats, args.cluster, slices, not args.no_peer, args.only)
    result["elapsed_s"] = time.perf_counter() - start
    with open(os.path.join(args.out, "scale.json"), "w") as f:
        json.dump(result, f, indent=1)
    if not args.only:
        plot(result, args.plot or os.path.join(args.out, "scale.png"))
    print("\n".join(text(result)))
    print(f"({result['elapsed_s']:.0f} s)")
    shutil.rmtree(os.path.join(args.out, "work"), ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
