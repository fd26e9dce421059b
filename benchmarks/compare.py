"""The query suite on two checkouts of hfq at once, run for run in turn (an A/B test).

    python benchmarks/compare.py --base ../hfq-wave2 [--head .] [--rows N] [--rounds R]
                                 [--only ID,ID] [--shape many|few] [--out DIR]

Each checkout is a directory holding hfq and its own ``.venv`` (for an older revision:
``git worktree add ../hfq-wave2 REV`` and ``bash run.sh bench --help`` inside it). One driver
process per checkout, with that checkout's hfq and its own 1-node x 2-CPU cluster, loads the
same rows (made once by this checkout's ``query_data``, saved as Arrow files, and loaded by
``load_hfq`` of ``scenarios/queries.py``; :data:`SPECS`'s SQL); then every query runs once on
each (untimed, the answers are saved and must be equal), then ``--rounds`` timed runs
alternating which checkout goes first. The machine's speed drifts by 20% and more over
minutes here (other work, the page cache, thermal); runs taken side by side share the drift,
where two ``run.py`` reports taken one after the other do not.

Writes ``compare.md`` and ``compare.json`` to ``--out``: per query the median of each side,
head / base (below 1: head faster) and whether the run ranges overlap, and the geometric mean.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def driver(data_dir: str, work: str) -> None:
    """One side: load the rows saved in ``data_dir`` into this checkout's hfq, then answer
    ``RUN id [path]`` lines on stdin with the seconds ``db.sql(...).collect()`` took (the
    answer saved as Parquet at ``path``)."""
    import gc
    import pickle

    import hfq  # this checkout's (its .venv's editable install), before harness puts ours first
    if not os.path.abspath(hfq.__file__).startswith(os.getcwd() + os.sep):
        raise SystemExit(f"{os.getcwd()}: its .venv imports hfq from {hfq.__file__}")
    import polars as pl

    sys.path[:0] = [HERE, os.path.join(HERE, "scenarios")]
    from queries import QueryData, load_hfq

    from harness import Bench

    with open(os.path.join(data_dir, "params.pickle"), "rb") as f:
        rows, texts, params = pickle.load(f)
    frames = {name[:-len(".arrow")]: pl.read_ipc(os.path.join(data_dir, name))
              for name in os.listdir(data_dir) if name.endswith(".arrow")}
    bench = Bench(out=work, rows=rows, days=1, repeats=1, quick=False)
    bench.log = lambda text: print(text, file=sys.stderr, flush=True)   # stdout: the protocol
    db = load_hfq(bench, QueryData(frames, params, {}))
    print("ready", flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words:
            break
        gc.collect()
        start = time.perf_counter()
        out = db.sql(texts[words[1]]).collect()
        took = time.perf_counter() - start
        if len(words) > 2:
            out.write_parquet(words[2])
        print(f"{took:.6f}", flush=True)
    if bench.session is not None:
        bench.session.close()


def save_data(args: argparse.Namespace) -> str:
    """The rows and statements both sides run, made once here (this checkout's
    ``query_data``, so one generator for both) and saved under ``--out``."""
    import pickle

    from queries import SPECS, query_data

    from harness import Bench

    folder = os.path.join(args.out, "data")
    os.makedirs(folder, exist_ok=True)
    bench = Bench(out=os.path.join(args.out, "work"), rows=args.rows, days=1, repeats=1,
                  quick=False, shape=args.shape)
    data = query_data(bench)
    for name, frame in data.frames.items():
        frame.write_ipc(os.path.join(folder, f"{name}.arrow"))
    p = data.params
    fmt = {"sym": p["sym"], "day": p["day"], "busy": p["busy"],
           "syms": ", ".join(f"'{s}'" for s in p["syms"])}
    with open(os.path.join(folder, "params.pickle"), "wb") as f:
        pickle.dump((args.rows, {s.id: s.sql.format(**fmt) for s in SPECS}, p), f)
    return folder


class Side:
    """A driver process running one checkout's hfq."""

    def __init__(self, name: str, root: str, args: argparse.Namespace) -> None:
        python = os.path.join(root, ".venv", "bin", "python")
        if not os.path.exists(python):
            raise SystemExit(f"{root}: no .venv (run 'bash run.sh bench --help' there first)")
        self.name, self.root = name, root
        self.log = open(os.path.join(args.out, f"{name}.log"), "w")
        env = dict(os.environ, RAY_TMPDIR=os.path.join(args.out, f"ray-{name}"))
        self.proc = subprocess.Popen(
            [python, os.path.abspath(__file__), "--driver", args.data,
             "--out", os.path.join(args.out, f"work-{name}")],
            cwd=root, env=env, text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.log)
        if self._line() != "ready":
            raise SystemExit(f"{name}: the driver did not start; see {self.log.name}")

    def _line(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"{self.name}: the driver died; see {self.log.name}")
        return line.strip()

    def run(self, query: str, save: str = "") -> float:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"RUN {query} {save}\n")
        self.proc.stdin.flush()
        return float(self._line())

    def close(self) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write("\n")
            self.proc.stdin.flush()
        except BrokenPipeError:   # the driver died: its log says why
            pass
        self.proc.wait(timeout=300)
        self.log.close()


def compare(args: argparse.Namespace) -> int:
    import polars as pl

    sys.path[:0] = [HERE, os.path.join(HERE, "scenarios")]
    from queries import SPECS, differs, normal

    os.makedirs(args.out, exist_ok=True)
    args.data = save_data(args)
    ids = args.only.split(",") if args.only else [s.id for s in SPECS]
    sides = {"head": Side("head", os.path.abspath(args.head), args),
             "base": Side("base", os.path.abspath(args.base), args)}
    rows, wrong = [], []
    try:
        for i, query in enumerate(ids):
            saved = {}
            for name, side in sides.items():
                saved[name] = os.path.join(args.out, f"{query}-{name}.parquet")
                side.run(query, saved[name])
            diff = differs(normal(pl.read_parquet(saved["head"])),
                           normal(pl.read_parquet(saved["base"])))
            if diff:
                wrong.append(f"{query}: {diff}")
            runs: dict[str, list[float]] = {"head": [], "base": []}
            for r in range(args.rounds):
                order = ("head", "base") if (r + i) % 2 == 0 else ("base", "head")
                for name in order:
                    runs[name].append(sides[name].run(query))
            head, base = (statistics.median(runs[n]) for n in ("head", "base"))
            overlap = min(runs["head"]) <= max(runs["base"]) and \
                min(runs["base"]) <= max(runs["head"])
            rows.append({"query": query, "head_s": head, "base_s": base, "ratio": head / base,
                         "tie": overlap, "head_runs_s": runs["head"],
                         "base_runs_s": runs["base"], "answers_equal": not diff})
            print(f"{query:18s} head {head * 1e3:8.1f} ms  base {base * 1e3:8.1f} ms  "
                  f"head/base {head / base:5.2f}{'  (tie)' if overlap else ''}"
                  f"{'  ANSWERS DIFFER: ' + diff if diff else ''}", flush=True)
    finally:
        for side in sides.values():
            side.close()
    geomean = math.exp(sum(math.log(r["ratio"]) for r in rows) / len(rows))
    revs = {n: _revision(s.root) for n, s in sides.items()}
    with open(os.path.join(args.out, "compare.json"), "w") as f:
        json.dump({"head": revs["head"], "base": revs["base"], "rows": args.rows,
                   "shape": args.shape, "rounds": args.rounds, "geomean_ratio": geomean,
                   "queries": rows, "answers_differ": wrong}, f, indent=1)
    with open(os.path.join(args.out, "compare.md"), "w") as f:
        f.write(f"# hfq {revs['head']} (head) vs {revs['base']} (base), side by side\n\n"
                f"`python benchmarks/compare.py --base BASE --rows {args.rows} "
                f"--rounds {args.rounds} --shape {args.shape}`: the median of {args.rounds} "
                f"runs of `db.sql(...).collect()` per checkout, taken in turn; each its own "
                f"1-node x 2-CPU cluster on the same machine. head/base below 1: head is "
                f"faster. *(tie)*: the run ranges overlap.\n\n"
                f"| query | head ms | base ms | head/base |\n|---|---:|---:|---:|\n")
        for r in rows:
            f.write(f"| {r['query']} | {r['head_s'] * 1e3:.1f} | {r['base_s'] * 1e3:.1f} | "
                    f"{r['ratio']:.2f}{' (tie)' if r['tie'] else ''} |\n")
        f.write(f"\nGeometric mean of head/base over {len(rows)} queries: **{geomean:.2f}**.\n")
        if wrong:
            f.write("\n**Answers differ** (these rows compare different work):\n\n" +
                    "".join(f"- {w}\n" for w in wrong))
    print(f"geometric mean head/base {geomean:.3f}; {len(wrong)} answers differ; "
          f"written to {args.out}")
    return 1 if wrong else 0


def _revision(root: str) -> str:
    out = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True)
    return out.stdout.strip() or os.path.basename(root)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base", help="the checkout to compare against (with its .venv)")
    p.add_argument("--head", default=os.path.dirname(HERE), help="default: this checkout")
    p.add_argument("--rows", type=int, default=2_000_000)
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--only", default="", help="query ids, comma-separated")
    p.add_argument("--shape", choices=["many", "few"], default="many")
    p.add_argument("--out", default="bench_out/compare")
    p.add_argument("--driver", metavar="DATA", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.driver:
        driver(args.driver, args.out)
        return 0
    if not args.base:
        p.error("--base is required")
    args.out = os.path.abspath(args.out)   # the drivers run in their own checkouts
    return compare(args)


if __name__ == "__main__":
    sys.exit(main())
